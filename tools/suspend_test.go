package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

func TestSuspendSandbox(t *testing.T) {
	tests := []struct {
		name     string
		pause    bool
		volume   string
		wantNote []string
	}{
		{name: "lifetime runs, no volume", wantNote: []string{suspendLoses, lifetimeRuns, "This sandbox has no persistent volume"}},
		{name: "lifetime paused, volume", pause: true, volume: "/workspace", wantNote: []string{suspendLoses, lifetimePaused}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.SuspendPausesLifetime = tt.pause })
			h.claims.add("default", "mine", testOwner)
			c := h.claims.claims["default/mine"]
			c.VolumePath = tt.volume
			h.claims.claims["default/mine"] = c
			res := h.call(t, "suspend_sandbox", map[string]any{"sandbox_claim_name": "mine"})
			if res.IsError {
				t.Fatal(text(res))
			}
			var got SuspendResult
			if err := json.Unmarshal([]byte(text(res)), &got); err != nil {
				t.Fatal(err)
			}
			if !got.Suspended || got.SandboxClaimName != "mine" || got.Namespace != "default" || got.VolumePath != tt.volume ||
				got.Status != "PodTerminated: Pod has been terminated. Sandbox is suspended" {
				t.Errorf("result %+v", got)
			}
			for _, w := range tt.wantNote {
				if !strings.Contains(got.Note, w) {
					t.Errorf("note %q lacks %q", got.Note, w)
				}
			}
			if tt.volume != "" && strings.Contains(got.Note, "no persistent volume") {
				t.Errorf("note %q says there is no volume", got.Note)
			}
			if !h.claims.claims["default/mine"].Suspended {
				t.Error("not suspended")
			}
		})
	}
}

// TestSuspendedSandboxCalls: every tool that needs the sandbox's pod is refused on a suspended
// one with the advice to resume it, or resumes it first with AutoResume.
func TestSuspendedSandboxCalls(t *testing.T) {
	refused := `Could not %s: sandbox "mine" is suspended; call resume_sandbox first, then retry. It starts a new pod: ` +
		"processes from before the suspension are gone, files on its persistent volume are kept."
	calls := []struct {
		tool, op string
		args     map[string]any
	}{
		{"execute_command", "execute the command", map[string]any{"command": "true"}},
		{"list_files", "list the directory", map[string]any{"path": "."}},
		{"list_processes", "list the processes", nil},
		{"read_file", "read the file", map[string]any{"path": "a"}},
	}
	for _, c := range calls {
		args := map[string]any{"sandbox_claim_name": "mine"}
		for k, v := range c.args {
			args[k] = v
		}
		t.Run(c.tool+"/refused", func(t *testing.T) {
			h := newHarness(t)
			h.claims.add("default", "mine", testOwner)
			h.claims.setSuspended("default", "mine", true)
			res := h.call(t, c.tool, args)
			if want := fmt.Sprintf(refused, c.op); !res.IsError || text(res) != want {
				t.Errorf("got %v %q\nwant %q", res.IsError, text(res), want)
			}
			if h.conn.calls != 0 || h.claims.resumes != 0 {
				t.Errorf("sandbox reached %d times, resumed %d times", h.conn.calls, h.claims.resumes)
			}
		})
	}
	t.Run("execute_command/auto-resumed", func(t *testing.T) {
		h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.AutoResume = true })
		h.claims.add("default", "mine", testOwner)
		h.claims.setSuspended("default", "mine", true)
		res := h.call(t, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "true"})
		if res.IsError {
			t.Fatal(text(res))
		}
		if h.claims.resumes != 1 || !slices.Equal(h.conn.lastTarget.PodIPs, []string{"127.0.0.10"}) {
			t.Errorf("resumed %d times, command sent to %v (want the new pod's 127.0.0.10)", h.claims.resumes, h.conn.lastTarget.PodIPs)
		}
	})
	t.Run("execute_command/auto-resume times out", func(t *testing.T) {
		h := newHarness(t, func(d *Deps, f *fakeClaims) {
			d.AutoResume = true
			f.resumeErr = fmt.Errorf("%w: sandbox \"mine-sbx\" not ready within 3m0s (last state: DependenciesNotReady)", kube.ErrTimeout)
		})
		h.claims.add("default", "mine", testOwner)
		h.claims.setSuspended("default", "mine", true)
		res := h.call(t, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "true"})
		want := `Could not execute the command: resuming the sandbox: timed out waiting for sandbox: sandbox "mine-sbx" not ready within 3m0s ` +
			"(last state: DependenciesNotReady). The sandbox is kept and its pod may still come up: check get_sandbox_status, " +
			"or call resume_sandbox again with a larger sandbox_ready_timeout."
		if !res.IsError || text(res) != want || h.conn.calls != 0 {
			t.Errorf("got %q (sandbox reached %d times)\nwant %q", text(res), h.conn.calls, want)
		}
	})
}

func TestResumeSandbox(t *testing.T) {
	h := newHarness(t)
	h.claims.add("default", "mine", testOwner)
	h.claims.setSuspended("default", "mine", true)
	res := h.call(t, "resume_sandbox", map[string]any{"sandbox_claim_name": "mine", "sandbox_ready_timeout": 30})
	if res.IsError {
		t.Fatal(text(res))
	}
	var got ResumeResult
	if err := json.Unmarshal([]byte(text(res)), &got); err != nil {
		t.Fatal(err)
	}
	want := ResumeResult{SandboxClaimName: "mine", Namespace: "default", SandboxName: "mine-sbx", PodIPs: []string{"127.0.0.10"}, Note: resumedNote}
	if !slices.Equal(got.PodIPs, want.PodIPs) || got.SandboxClaimName != want.SandboxClaimName || got.SandboxName != want.SandboxName ||
		got.Namespace != want.Namespace || got.Note != want.Note {
		t.Errorf("result %+v, want %+v", got, want)
	}
	if h.claims.claims["default/mine"].Suspended {
		t.Error("still suspended")
	}
	if res := h.call(t, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "true"}); res.IsError {
		t.Errorf("a call after resume_sandbox: %s", text(res))
	}
}

// TestAutoResumeProgress: an auto-resume reports progress on the call's own counter, which
// the tool's later notifications continue (one counter per call, always increasing).
func TestAutoResumeProgress(t *testing.T) {
	h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.AutoResume = true })
	h.claims.add("default", "mine", testOwner)
	h.claims.setSuspended("default", "mine", true)
	var mu sync.Mutex
	var got []string
	var counts []float64
	h.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/progress" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		msg, _ := n.Params.AdditionalFields["message"].(string)
		var p float64 // in process the value is the server's int; over the wire a JSON number
		b, _ := json.Marshal(n.Params.AdditionalFields["progress"])
		_ = json.Unmarshal(b, &p)
		got, counts = append(got, msg), append(counts, p)
	})
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "execute_command",
		Arguments: map[string]any{"sandbox_claim_name": "mine", "command": "true"}, Meta: &mcp.Meta{ProgressToken: "t1"}}}
	res, err := h.c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		t.Fatalf("%v %s", err, text(res))
	}
	// The in-process transport delivers notifications on its own goroutine.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 || got[0] != "the sandbox is suspended: resuming it" || got[1] != "ready" {
		t.Errorf("progress messages %q", got)
	}
	for i := 1; i < len(counts); i++ {
		if counts[i] <= counts[i-1] {
			t.Errorf("progress counter %v does not increase", counts)
		}
	}
}
