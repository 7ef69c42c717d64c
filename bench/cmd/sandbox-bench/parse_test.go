package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestLogRecorderKeepsToolCallDurations(t *testing.T) {
	var l logRecorder
	lines := `{"level":"info","message":"serving stdio"}
{"level":"info","tool":"execute_command","duration":2.5,"outcome":"ok","message":"tool call"}
not json at all
{"level":"warn","tool":"list_files","duration":7,"outcome":"tool_error","message":"tool call"}
{"level":"info","tool":"execute_command","duration":3.25,"outcome":"ok","message":"tool call"}
`
	// Split mid-line: the server's stderr arrives in arbitrary pieces.
	for _, chunk := range []string{lines[:10], lines[10:95], lines[95:]} {
		if _, err := l.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		tool string
		want series
	}{
		{"execute_command", series{2.5, 3.25}},
		{"list_files", series{7}},
		{"create_sandbox", nil},
	}
	for _, tt := range tests {
		got := l.takeHandler(tt.tool)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %v, want %v", tt.tool, got, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: %v, want %v", tt.tool, got, tt.want)
			}
		}
	}
	if again := l.takeHandler("execute_command"); len(again) != 0 {
		t.Errorf("takeHandler did not forget: %v", again)
	}
	if !strings.Contains(l.tail(), "not json at all") {
		t.Errorf("tail lost a line: %q", l.tail())
	}
}

func TestParseInitTrace(t *testing.T) {
	tr := parseInitTrace(`init internal/bytealg @0.008 ms, 0 ms clock, 0 bytes, 0 allocs
init k8s.io/client-go/kubernetes/scheme @12 ms, 2.5 ms clock, 672000 bytes, 5000 allocs
some other line
init runtime @0.1 ms, 0.25 ms clock, 0 bytes, 0 allocs
`)
	if len(tr.pkgs) != 3 || tr.total != 2.75 {
		t.Fatalf("parsed %+v, want 3 packages totalling 2.75 ms", tr)
	}
	other := parseInitTrace("init runtime @0.1 ms, 0.3 ms clock, 0 bytes, 0 allocs\n")
	top, sum := tr.topWithout(other, 1)
	if len(top) != 1 || top[0].pkg != "k8s.io/client-go/kubernetes/scheme" || top[0].bytes != 672000 || sum != 2.5 {
		t.Errorf("topWithout = %+v, %v; want the scheme package alone, 2.5 ms", top, sum)
	}
}

func TestAwaitID(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantErr bool
	}{
		{"skips notifications and other ids", `{"jsonrpc":"2.0","method":"notifications/message"}
{"jsonrpc":"2.0","id":1,"result":{}}
{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}
`, false},
		{"an error answer is an error", `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}
`, true},
		{"end of stream is an error", `{"jsonrpc":"2.0","id":1,"result":{}}
`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := awaitID(bufio.NewReader(strings.NewReader(tt.input)), 2)
			if (err != nil) != tt.wantErr {
				t.Errorf("awaitID: %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestParseFlagsLists(t *testing.T) {
	c, err := parseFlags([]string{"-big-bytes", "10,20", "-list-files", "5", "-items", "1, 6"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.bigBytes) != 2 || c.bigBytes[1] != 20 || len(c.listFiles) != 1 || c.listFiles[0] != 5 || !c.items["6"] || c.items["2"] {
		t.Errorf("parsed %+v", c)
	}
	for _, tt := range []struct {
		args []string
		want int
	}{{[]string{"-small-runs", "50"}, 50}, {[]string{"-small-runs", "50", "-lean-runs", "3000"}, 3000}} {
		if c, err := parseFlags(tt.args); err != nil || c.leanRuns != tt.want {
			t.Errorf("parseFlags(%v): -lean-runs %d, %v; want %d", tt.args, c.leanRuns, err, tt.want)
		}
	}
	for _, bad := range [][]string{{"-big-bytes", "10,x"}, {"-list-files", "0"}, {"-py-big-bytes", ""}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%v) accepted a bad list", bad)
		}
	}
}

// spinUntil burns this process's CPU until done says so, for at most 10 s.
func spinUntil(t *testing.T, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for !done() {
		for i := range 1_000_000 {
			x += i
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time did not move as expected after 10 s of spinning (%d)", x)
		}
	}
}

func TestProcCPUCountsThisProcess(t *testing.T) {
	pid := os.Getpid()
	start, err := procCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	spinUntil(t, func() bool {
		now, err := procCPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		return now-start >= 30*time.Millisecond
	})
}

// The machine's CPU time includes this process's: a spin shows in both, and the machine's
// share is never the smaller one (the split in item 4's CPU table relies on it).
func TestSampleCPUMachineCoversThisProcess(t *testing.T) {
	pid := os.Getpid()
	start, err := sampleCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	var d cpuUse
	spinUntil(t, func() bool {
		now, err := sampleCPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		d = now.sub(start)
		return d.bench >= 50*time.Millisecond
	})
	// /proc/stat and /proc/<pid>/stat tick separately: allow a tick's skew per core.
	if d.machine < d.bench-20*time.Millisecond {
		t.Errorf("machine %v < this process %v", d.machine, d.bench)
	}
}

// A server that is gone is an error, not a CPU time of zero.
func TestSampleCPUMissingServer(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := sampleCPU(cmd.Process.Pid); err == nil {
		t.Errorf("sampleCPU(%d) of an exited, reaped process succeeded", cmd.Process.Pid)
	}
}
