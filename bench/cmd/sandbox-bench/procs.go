package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/procfs"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/bench/load"
)

// protocolVersion is what today's hosts speak; both servers under test support it.
const protocolVersion = "2025-11-25"

// serverEnv is a clean environment: nothing from the caller's shell changes the server.
func serverEnv(kubeconfig string, settings map[string]string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "KUBECONFIG=" + kubeconfig}
	for k, v := range settings {
		env = append(env, k+"="+v)
	}
	return env
}

// stdioServer is the server as a subprocess speaking stdio, with an MCP client session.
type stdioServer struct {
	cmd *exec.Cmd
	cs  *mcp.ClientSession
	log *logRecorder
}

func startStdio(ctx context.Context, bin string, env []string, args ...string) (*stdioServer, error) {
	cmd := exec.Command(bin, append([]string{"--log-format", "json"}, args...)...)
	cmd.Env = env
	rec := &logRecorder{}
	cmd.Stderr = rec
	cs, err := newClient().Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
		return nil, fmt.Errorf("connect to %s over stdio: %w\n%s", bin, err, rec.tail())
	}
	return &stdioServer{cmd: cmd, cs: cs, log: rec}, nil
}

func (s *stdioServer) pid() int { return s.cmd.Process.Pid }

func (s *stdioServer) close() { _ = s.cs.Close() }

// httpServer is the server started with --http on a free loopback port.
type httpServer struct {
	cmd  *exec.Cmd
	base string
	log  *logRecorder
}

func startHTTP(ctx context.Context, bin string, env []string, args ...string) (*httpServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"--http", addr, "--log-format", "json"}, args...)...)
	cmd.Env = env
	rec := &logRecorder{}
	cmd.Stderr = rec
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	h := &httpServer{cmd: cmd, base: "http://" + addr, log: rec}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(h.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			h.close()
			return nil, fmt.Errorf("server on %s never became healthy: %v\n%s", addr, err, rec.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *httpServer) pid() int { return h.cmd.Process.Pid }

// close stops the server with SIGTERM, as a supervisor would, and kills it if it lingers.
func (h *httpServer) close() {
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = h.cmd.Process.Kill()
		<-done
	}
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "sandbox-bench", Version: "0"}, nil)
}

// callTool runs a tool and decodes its structured result into out (if not nil); an isError
// result is an error.
func callTool(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any, out any) error {
	res, err := callToolResult(ctx, cs, tool, args)
	if err != nil || out == nil {
		return err
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: structured content %.200s: %w", tool, raw, err)
	}
	return nil
}

// callToolResult runs a tool and returns its result as the client library decoded it.
func callToolResult(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return nil, fmt.Errorf("%s: tool error: %s", tool, b.String())
	}
	return res, nil
}

// logRecorder reads the server's JSON log: it keeps the handler duration of every
// "tool call" line, per tool, and the last lines for error messages.
type logRecorder struct {
	mu      sync.Mutex
	partial []byte
	last    []string
	handler map[string]series
}

func (l *logRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
}

func (l *logRecorder) line(s string) {
	l.last = append(l.last, s)
	if len(l.last) > 40 {
		l.last = l.last[1:]
	}
	var ev struct {
		Msg      string  `json:"message"`
		Tool     string  `json:"tool"`
		Duration float64 `json:"duration"` // zerolog's default unit: milliseconds
	}
	if json.Unmarshal([]byte(s), &ev) != nil || ev.Msg != "tool call" {
		return
	}
	if l.handler == nil {
		l.handler = map[string]series{}
	}
	l.handler[ev.Tool] = append(l.handler[ev.Tool], ev.Duration)
}

// takeHandler returns and forgets the handler durations logged for tool so far.
func (l *logRecorder) takeHandler(tool string) series {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.handler[tool]
	delete(l.handler, tool)
	return s
}

func (l *logRecorder) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.last, "\n")
}

// procCPU is the CPU time (user + system) a process has used so far, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return seconds(st.CPUTime()), nil
}

// seconds turns procfs's float seconds into a Duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times, for the fields procfs leaves in
// ticks (children's times): 100 on every Linux platform Go supports.
const clockTicks = 100

// resetPeak sets the process's VmHWM back to its current RSS (Linux >= 4.0), so the next
// reading is the peak of what follows.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// memPeak is a process's peak memory over an interval: VmHWM (all resident pages, including
// the file-backed pages of the mapped binary) and the highest anonymous RSS (heap, stacks)
// seen by sampling every few milliseconds. Go keeps freed heap for a while, so a process
// that ran bigger work before shows that work's heap too: measure in a fresh process.
type memPeak struct{ total, anon float64 }

// measurePeak runs f and returns the process's peak RSS while it ran.
func measurePeak(pid int, f func() error) (memPeak, error) {
	if err := resetPeak(pid); err != nil {
		return memPeak{}, fmt.Errorf("reset peak RSS: %w", err)
	}
	var anon float64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := load.ProcStatus(pid, "RssAnon"); err == nil {
				anon = max(anon, v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	err := f()
	close(stop)
	<-done
	if err != nil {
		return memPeak{}, err
	}
	total, err := load.ProcStatus(pid, "VmHWM")
	return memPeak{total: total, anon: anon}, err
}

// cpuUse is CPU time spent, split by who spent it: the whole machine (every core, every
// process: user, nice, system, interrupts), this bench process (its MCP and direct clients)
// and the server process; byCommand is every process's, summed by command name, with the
// time of children it has waited for (a sandbox's `sh` shows in its runtime's figure).
type cpuUse struct {
	machine, bench, server time.Duration
	byCommand              map[string]time.Duration
}

func (a cpuUse) sub(b cpuUse) cpuUse {
	return cpuUse{machine: a.machine - b.machine, bench: a.bench - b.bench, server: a.server - b.server,
		byCommand: mergeCommands(a.byCommand, b.byCommand, -1)}
}

func (a cpuUse) add(b cpuUse) cpuUse {
	return cpuUse{machine: a.machine + b.machine, bench: a.bench + b.bench, server: a.server + b.server,
		byCommand: mergeCommands(a.byCommand, b.byCommand, 1)}
}

func mergeCommands(a, b map[string]time.Duration, sign time.Duration) map[string]time.Duration {
	out := make(map[string]time.Duration, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] += sign * v
	}
	return out
}

// sampleCPU reads the CPU time used so far by the machine, this process and the server, with
// one read of each process's stat.
func sampleCPU(serverPID int) (cpuUse, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return cpuUse{}, err
	}
	st, err := fs.Stat()
	if err != nil {
		return cpuUse{}, err
	}
	t := st.CPUTotal
	u := cpuUse{machine: seconds(t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ), byCommand: map[string]time.Duration{}}
	procs, err := fs.AllProcs()
	if err != nil {
		return cpuUse{}, err
	}
	serverSeen := false
	for _, p := range procs {
		ps, err := p.Stat()
		if err != nil {
			continue // it exited meanwhile: its parent counts it once it is waited for
		}
		own := seconds(ps.CPUTime())
		if p.PID == os.Getpid() {
			u.bench = own
		}
		if p.PID == serverPID {
			u.server, serverSeen = own, true
		}
		u.byCommand[commandName(ps.Comm)] += own + time.Duration(ps.CUTime+ps.CSTime)*time.Second/clockTicks
	}
	if !serverSeen {
		return cpuUse{}, fmt.Errorf("the server (pid %d) is not in /proc", serverPID)
	}
	return u, nil
}

// commandName groups kernel threads by kind: a kworker's name carries its CPU and the work
// it last ran ("kworker/u8:1-kvfree_rcu_reclaim"), which changes between two readings.
func commandName(comm string) string {
	if kind, _, ok := strings.Cut(comm, "/"); ok {
		return kind
	}
	return comm
}
