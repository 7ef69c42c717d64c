//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

var (
	binary string            // the server built once for the whole run
	stack  *localstack.Stack // the real control plane
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		dir, err := os.MkdirTemp("", "k8s-sandbox-mcp-e2e")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if stack, err = localstack.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "starting the local stack:", err)
			return 1
		}
		binary = filepath.Join(dir, "k8s-sandbox-mcp")
		// The static binary that ships, built as install.sh builds it (TestBinaryIsStatic).
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binary, ".")
		build.Dir, build.Stdout, build.Stderr = stack.RepoRoot, os.Stderr, os.Stderr
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the server:", err)
			return 1
		}
		return m.Run()
	}())
}

// bothPools asks a test namespace for ready sandboxes in both warm pools, for a test that
// claims from each runtime (stack.Namespace readies sandboxd-pool alone by default).
var bothPools = []string{localstack.SandboxdPool, localstack.PythonPool}

// connection is one way the server reaches sandboxes, with the warm pool whose runtime it speaks.
type connection struct {
	name string
	pool string
	env  []string
}

func connections() []connection {
	kinds := []struct{ name, kind, pool string }{
		{"gateway", "GATEWAY", "python-pool"},
		{"direct", "DIRECT", "python-pool"},
		{"in-cluster-pod-ip", "IN_CLUSTER_POD_IP", "python-pool"},
		{"in-cluster-dns", "IN_CLUSTER_DNS", "python-pool"},
		{"sandboxd-pod-ip", "SANDBOXD_POD_IP", "sandboxd-pool"},
		{"sandboxd-service", "SANDBOXD_SERVICE", "sandboxd-pool"},
	}
	var out []connection
	for _, k := range kinds {
		settings, err := stack.Connection(k.kind)
		if err != nil {
			panic(err) // the stack's env file is out of step with this test
		}
		c := connection{name: k.name, pool: k.pool}
		for key, v := range settings {
			c.env = append(c.env, key+"="+v)
		}
		out = append(out, c)
	}
	return out
}

// serverEnv is a clean environment: nothing from the developer's shell leaks into the server.
func serverEnv(extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "KUBECONFIG=" + stack.Kubeconfig}
	return append(env, extra...)
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil)
}

// stdioSession starts the server as a subprocess speaking stdio.
func stdioSession(t *testing.T, env []string, version string) *mcp.ClientSession {
	t.Helper()
	cs, _ := stdioServer(t, env, version)
	return cs
}

// stdioServer is stdioSession that also returns the server's process, for tests that read
// its memory.
func stdioServer(t *testing.T, env []string, version string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary)
	cmd.Env = serverEnv(env...)
	cmd.Stderr = serverLog(t)
	cs, err := newClient().Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting over stdio: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, cmd
}

// httpServer starts the server with --http on a free loopback port and returns its base URL.
func httpServer(t *testing.T, env []string, args ...string) string {
	t.Helper()
	_, base := startServer(t, env, args...)
	return base
}

// startServer is httpServer that also returns the process, for tests that signal it.
func startServer(t *testing.T, env []string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	s := serve(t, 20*time.Second, true, env, append([]string{"--http", "127.0.0.1:0"}, args...)...)
	return s.cmd, s.base
}

func httpSession(t *testing.T, base, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := newClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call runs a tool and decodes its structured result; isError results fail the test.
func call[T any](t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) T {
	t.Helper()
	res := callRaw(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s(%v) failed: %s", tool, args, resultText(res))
	}
	return decode[T](t, res)
}

// decode decodes a tool result's structured content.
func decode[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var out T
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out
}

func callRaw(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	return res
}

// callError runs a tool that must fail and returns its error text.
func callError(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res := callRaw(t, cs, tool, args)
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded, want an error result", tool, args)
	}
	if res.StructuredContent != nil {
		t.Errorf("%s: error result carries structuredContent", tool)
	}
	return resultText(res)
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// serverLog collects the server's stderr (its logs) and shows it when the test fails.
func serverLog(t *testing.T) io.Writer {
	b := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", b.String())
		}
	})
	return b
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
