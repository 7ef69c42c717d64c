package main

import (
	"math"
	"testing"
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
