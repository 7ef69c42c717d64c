package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	hundred := make(series, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // reversed: quantile must sort
	}
	tests := []struct {
		name string
		s    series
		q    float64
		want float64
	}{
		{"single", series{7}, 0.5, 7},
		{"odd median", series{3, 1, 2}, 0.5, 2},
		{"even median is the lower middle", series{4, 1, 3, 2}, 0.5, 2},
		{"p99 of few is the max", series{5, 1, 9, 2}, 0.99, 9},
		{"p99 of 100", hundred, 0.99, 99},
		{"p50 of 100", hundred, 0.5, 50},
		{"q=0 is the min", series{5, 1, 9}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.quantile(tt.q); got != tt.want {
				t.Errorf("quantile(%v, %v) = %v, want %v", tt.s, tt.q, got, tt.want)
			}
		})
	}
	if got := (series{}).median(); !math.IsNaN(got) {
		t.Errorf("median of nothing = %v, want NaN", got)
	}
}

func TestComparisonRatio(t *testing.T) {
	c := comparison{base: series{1, 2, 3}, subj: series{3, 6, 9}}
	if got := c.ratio(0.5); got != 3 {
		t.Errorf("median ratio = %v, want 3", got)
	}
	if got := fmtRatio(c.ratio(0.99)); got != "3.00" {
		t.Errorf("p99 ratio = %q, want 3.00", got)
	}
}

func TestServerFreeBound(t *testing.T) {
	load := func(busy float64, direct, through, server time.Duration) loadResult {
		var r loadResult
		r.calls = [2]int{1000, 1000}
		r.cpu[0].machine, r.cpu[1].machine, r.cpu[1].server = direct*1000, through*1000, server*1000
		for side, m := range []time.Duration{direct, through} {
			r.wall[side] = time.Duration(float64(m*1000) / busy)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r    loadResult
		want string // in the note; "" for no note
	}{
		// 5 ms direct; 8 ms through the server, 1 ms of it the server's: 5/7.
		{"cpu-bound", load(1.95, 5*time.Millisecond, 8*time.Millisecond, time.Millisecond), "above 0.71 here"},
		{"idle cores", load(1.2, 5*time.Millisecond, 8*time.Millisecond, time.Millisecond), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.serverFreeBound()
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("serverFreeBound() = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

func TestSmallBound(t *testing.T) {
	ms := func(v ...float64) series { return series(v) }
	f := floorFigures{comparison: comparison{base: ms(0.4, 0.4, 0.4), subj: ms(0.6, 0.6, 0.6)}}
	// The directly sent request is 1.1x the plain one: 0.4 ms more on a 4 ms runtime.
	transport := comparison{base: ms(5, 5, 5), subj: ms(5.5, 5.5, 5.5)}
	for _, tc := range []struct {
		name     string
		measured float64
		want     []string
	}{
		// (4 + 0.4 + 0.4) / 4 = 1.20; with the cheapest call (4 + 0.4 + 0.6) / 4 = 1.25.
		{"bounds", 6, []string{"is 1.20 of the runtime alone", "in place of the floor, 1.25", "measured 1.50"}},
		{"parts exceed the measurement", 4.8, []string{"No bound is drawn", "add up to 1.25", "than the 1.20 measured"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := smallRuntime{goal: 1.2, transport: transport,
				back: comparison{base: ms(4, 4, 4), subj: ms(tc.measured, tc.measured, tc.measured)}}
			got := smallBound(r, f)
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("smallBound() = %q, want it to contain %q", got, want)
				}
			}
		})
	}
}

func TestLeanText(t *testing.T) {
	ms := func(v ...float64) series { return series(v) }
	for _, tc := range []struct {
		name     string
		lean     float64 // the lean server's median against a 4 ms Execute
		want     []string
		unwanted string
	}{
		// 5.2 / 4 = 1.30 is over the goal; the server's 5.6 is 1.08 of the lean 5.2 (0.40 ms more).
		{"goal out of the libraries' reach", 5.2, []string{"is 1.30 of gRPC Execute", "(5.20 ms against 4.00 ms)",
			"the server 1.08 of it (0.40 ms more", "CPU per call 1.50 ms against 1.20 ms", "no execute_command built on mcp-go and grpc-go met the goal of 1.2"}, ""},
		{"goal within reach", 4.4, []string{"is 1.10 of gRPC Execute"}, "no execute_command built"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := leanFigures{raw: comparison{base: ms(4, 4, 4), subj: ms(tc.lean, tc.lean, tc.lean)},
				server: comparison{base: ms(5.2, 5.2, 5.2), subj: ms(5.6, 5.6, 5.6)}, leanCPU: 1.2, serverCPU: 1.5}
			got := leanText(f, 1.2)
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("leanText() = %q, want it to contain %q", got, want)
				}
			}
			if tc.unwanted != "" && strings.Contains(got, tc.unwanted) {
				t.Errorf("leanText() = %q, want no %q", got, tc.unwanted)
			}
		})
	}
}

func TestTailText(t *testing.T) {
	ms := func(v ...float64) series { return series(v) }
	for _, tc := range []struct {
		name           string
		server, handle float64 // paced p99 of the round trip and of the handler
		want           []string
	}{
		{"goal met", 7, 6, nil},
		// 8 / 5 = 1.60 over the goal; the handler's 6 is below the directly sent request's 7.
		{"runtime's tail", 8, 6, []string{"p99 ratio (1.60)", "of 3 per side", "p99 of 5.00 ms in the series", "and 6.50 ms in the request-form",
			"handler p99 (6.00 ms, its own log) is no higher than", "(7.00 ms): the handler does not add to the runtime's tail, and the stdio round trip around it adds 2.00 ms at the p99."}},
		{"server's tail", 8, 8.4, []string{"handler p99 (8.40 ms, its own log) is 1.20× that of its request sent directly (7.00 ms)",
			"the server adds to the tail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := smallRuntime{paced: comparison{base: ms(5, 5, 5), subj: ms(tc.server, tc.server, tc.server)},
				pacedHandler: ms(tc.handle, tc.handle, tc.handle),
				transport:    comparison{base: ms(6.5, 6.5, 6.5), subj: ms(7, 7, 7)}}
			got := tailText(r)
			if tc.want == nil && got != "" {
				t.Errorf("tailText() = %q, want nothing", got)
			}
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("tailText() = %q, want it to contain %q", got, want)
				}
			}
		})
	}
}
