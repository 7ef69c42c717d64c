//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// progressClient records progress notifications per token.
type progressClient struct {
	mu     sync.Mutex
	events map[any][]*mcp.ProgressNotificationParams
}

func (p *progressClient) connect(t *testing.T, transport mcp.Transport, version string) *mcp.ClientSession {
	t.Helper()
	p.events = map[any][]*mcp.ProgressNotificationParams{}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-progress", Version: "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			p.mu.Lock()
			defer p.mu.Unlock()
			key := fmt.Sprint(r.Params.ProgressToken)
			p.events[key] = append(p.events[key], r.Params)
		},
	})
	cs, err := c.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// get returns token's notifications in the order the server numbered them. Over streamable
// HTTP they may arrive in another: mcp-go hands a session's notifications to whichever of its
// open streams reads first (the call's POST or the client's standalone GET), so under load a
// later one can overtake an earlier one (seen in CI: [2:waiting 1:claim created 3:ready]).
func (p *progressClient) get(token string) []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	ev := append([]*mcp.ProgressNotificationParams(nil), p.events[token]...)
	slices.SortStableFunc(ev, func(a, b *mcp.ProgressNotificationParams) int { return cmp.Compare(a.Progress, b.Progress) })
	return ev
}

// TestProgress: with a progressToken, create_sandbox reports while it waits and
// execute_command sends heartbeats with the latest output line; without one, nothing.
func TestProgress(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	env := connections()[4].env
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			var pc progressClient
			var transport mcp.Transport
			if tr == "stdio" {
				transport = commandTransport(t, env)
			} else {
				transport = &mcp.StreamableClientTransport{Endpoint: httpServer(t, env) + "/mcp"}
			}
			cs := pc.connect(t, transport, "2025-11-25")
			create := &mcp.CallToolParams{Name: "create_sandbox", Arguments: map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name}}
			create.SetProgressToken("create-1")
			res, err := cs.CallTool(t.Context(), create)
			if err != nil || res.IsError {
				t.Fatalf("create: %v %s", err, resultText(res))
			}
			claim := res.StructuredContent.(map[string]any)["sandbox_claim_name"]
			// The last event may race the result on HTTP; the ones sent while waiting must arrive.
			if ev := pc.get("create-1"); len(ev) == 0 || !strings.Contains(ev[0].Message, "claim created") {
				t.Errorf("create_sandbox progress: %v", messages(ev))
			}
			exec := &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{"sandbox_claim_name": claim, "namespace": ns.Name,
				"command": "for i in 1 2 3; do echo step$i; sleep 1; done; sleep 2; echo done"}}
			exec.SetProgressToken(42)
			began := time.Now()
			if res, err := cs.CallTool(t.Context(), exec); err != nil || res.IsError {
				t.Fatalf("exec: %v", err)
			}
			// The ceiling follows the call's own duration: a loaded node stretches the 5 s
			// command, and the cadence (one per 2 s) is what is proved, not the node's speed.
			took := time.Since(began)
			ev := pc.get("42")
			if most := int(took/(2*time.Second)) + 1; len(ev) < 2 || len(ev) > most {
				t.Errorf("a command of %v sent %d heartbeats, want 2 to %d (one per 2 s): %v", took, len(ev), most, messages(ev))
			}
			sawLine := false
			for i, e := range ev {
				sawLine = sawLine || strings.Contains(e.Message, "step")
				if i > 0 && e.Progress == ev[i-1].Progress {
					t.Errorf("progress repeats a value: %v", messages(ev))
				}
			}
			if !sawLine {
				t.Errorf("heartbeats do not carry the latest output line: %v", messages(ev))
			}
			// read_process_output waiting for output sends heartbeats too.
			started, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "start_process", Arguments: map[string]any{
				"sandbox_claim_name": claim, "namespace": ns.Name, "command": "sleep 5; echo late"}})
			if err != nil || started.IsError {
				t.Fatalf("start_process: %v %s", err, resultText(started))
			}
			wait := &mcp.CallToolParams{Name: "read_process_output", Arguments: map[string]any{"sandbox_claim_name": claim, "namespace": ns.Name,
				"process_id": started.StructuredContent.(map[string]any)["process_id"], "wait_seconds": 20}}
			wait.SetProgressToken("wait-1")
			if res, err := cs.CallTool(t.Context(), wait); err != nil || res.IsError || res.StructuredContent.(map[string]any)["stdout"] != "late\n" {
				t.Fatalf("read_process_output waiting: %v %v", err, res.StructuredContent)
			}
			if ev := pc.get("wait-1"); len(ev) == 0 || !strings.Contains(ev[0].Message, "waiting for output") {
				t.Errorf("read_process_output progress: %v", messages(ev))
			}
			quiet := &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{"sandbox_claim_name": claim, "namespace": ns.Name, "command": "sleep 3"}}
			if _, err := cs.CallTool(t.Context(), quiet); err != nil {
				t.Fatal(err)
			}
			pc.mu.Lock()
			n := len(pc.events)
			pc.mu.Unlock()
			if n != 3 {
				t.Errorf("notifications without a progress token: tokens seen %d, want 3", n)
			}
			call[struct{}](t, cs, "delete_sandbox", map[string]any{"sandbox_claim_name": claim, "namespace": ns.Name})
		})
	}
}

func messages(ev []*mcp.ProgressNotificationParams) []string {
	var out []string
	for _, e := range ev {
		out = append(out, fmt.Sprintf("%v:%s", e.Progress, e.Message))
	}
	return out
}

func commandTransport(t *testing.T, env []string) *mcp.CommandTransport {
	cmd := exec.Command(binary)
	cmd.Env = serverEnv(env...)
	cmd.Stderr = serverLog(t)
	return &mcp.CommandTransport{Command: cmd}
}

// TestCancellation: a `sleep` cancelled after 1 s (notifications/cancelled over stdio, a
// dropped request over HTTP) leaves no process behind in the sandbox, on both runtimes.
func TestCancellation(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	conns := connections()
	for _, c := range []connection{conns[2], conns[4]} { // python runtime, sandboxd
		for _, tr := range []string{"stdio", "http"} {
			t.Run(c.name+"/"+tr, func(t *testing.T) {
				var cs *mcp.ClientSession
				if tr == "stdio" {
					cs = stdioSession(t, c.env, "")
				} else {
					cs = httpSession(t, httpServer(t, c.env), "")
				}
				created := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
				claim := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name}
				// A unique duration names the process on this host, where the sandbox runs.
				marker := fmt.Sprintf("300.%06d", rand.IntN(1000000))
				ctx, cancel := context.WithCancel(t.Context())
				// Off the test's goroutine, so it reports with Errorf (Fatal there would end only
				// this goroutine) and cancels in any case.
				go func() {
					defer cancel()
					for deadline := time.Now().Add(20 * time.Second); len(processes("sleep "+marker)) == 0; time.Sleep(200 * time.Millisecond) {
						if time.Now().After(deadline) {
							t.Errorf("the command did not start within 20 s")
							return
						}
					}
					time.Sleep(time.Second)
				}()
				start := time.Now()
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{
					"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name,
					"command": "echo started; sleep " + marker + "; echo never"}})
				if err == nil {
					t.Fatal("the cancelled call returned a result")
				}
				if time.Since(start) > 30*time.Second {
					t.Errorf("cancellation took %v", time.Since(start))
				}
				waitFor(t, 15*time.Second, func() bool { return len(processes("sleep "+marker)) == 0 })
				call[struct{}](t, cs, "delete_sandbox", claim)
			})
		}
	}
}

// processes lists host PIDs whose command line contains s (the local stack's sandboxes are
// host processes).
func processes(s string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			out = append(out, filepath.Base(filepath.Dir(f)))
		}
	}
	return out
}

// TestProtocolEras: the default (2026-07-28, sessionless) client works over stdio and HTTP;
// sessionless HTTP callers share the documented anonymous owner.
func TestProtocolEras(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	env := connections()[4].env
	base := httpServer(t, env)
	for name, cs := range map[string]*mcp.ClientSession{
		"stdio-modern": stdioSession(t, env, ""), "http-modern": httpSession(t, base, ""),
		"stdio-2025-11-25": stdioSession(t, env, "2025-11-25"), "http-2025-11-25": httpSession(t, base, "2025-11-25"),
	} {
		t.Run(name, func(t *testing.T) {
			created := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name})
			claim := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name}
			if ex := call[execResult](t, cs, "execute_command", map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name, "command": "echo $((1+1))"}); ex.Stdout != "2\n" {
				t.Errorf("exec: %+v", ex)
			}
			c, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns.Name).Get(t.Context(), created.SandboxClaimName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			owner := c.Labels["mcp.k8s-agent-sandbox/session-id"]
			switch {
			case name == "http-modern" && owner != "http-anonymous":
				t.Errorf("sessionless HTTP owner %q, want http-anonymous", owner)
			case strings.HasPrefix(name, "stdio") && (!strings.HasPrefix(owner, "stdio-") || owner == "stdio"):
				t.Errorf("stdio owner %q, want a per-process id", owner)
			case name == "http-2025-11-25" && !strings.HasPrefix(owner, "mcp-session-"):
				t.Errorf("session-era HTTP owner %q", owner)
			}
			call[struct{}](t, cs, "delete_sandbox", claim)
		})
	}
}
