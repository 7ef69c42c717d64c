package tools

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"sigs.k8s.io/agent-sandbox/packages/sandboxd/pkg/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// BenchmarkExecuteCommandRealSandboxd: execute_command through the whole tools layer to the real
// sandboxd server package (on 127.0.0.9, the fake claims' pod IP), against conn.Exec of the same
// command alone: the difference is the tools layer's cost around a real runtime request.
func BenchmarkExecuteCommandRealSandboxd(b *testing.B) {
	srv, err := server.New(server.Options{RootDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	listen := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.9:0")
		if err != nil {
			b.Skipf("no 127.0.0.9 on loopback: %v", err)
		}
		return l
	}
	gl, rl := listen(), listen()
	gs := grpc.NewServer()
	srv.RegisterGRPC(gs)
	hs := &http.Server{Handler: srv.RESTHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = gs.Serve(gl) }()
	go func() { _ = hs.Serve(rl) }()
	b.Cleanup(func() { gs.Stop(); _ = hs.Close() })
	c, err := conn.New(conn.Config{Type: conn.TypeSandboxdInCluster, Mode: conn.ModePodIP,
		RESTPort: rl.Addr().(*net.TCPAddr).Port, GRPCPort: gl.Addr().(*net.TCPAddr).Port}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })

	b.Run("conn.Exec", func(b *testing.B) {
		target := conn.Target{Namespace: "default", SandboxName: "mine-sbx", PodIPs: []string{"127.0.0.9"}}
		for b.Loop() {
			if _, err := c.Exec(context.Background(), target, conn.ExecRequest{Command: "echo hi", Timeout: time.Minute,
				Stdout: io.Discard, Stderr: io.Discard}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("execute_command", func(b *testing.B) {
		claims := newFakeClaims()
		claims.add("default", "mine", testOwner)
		s := NewServer(Deps{Claims: claims, Conn: c, DefaultNamespace: "default",
			Log:   zerolog.New(discard{}).Level(zerolog.InfoLevel),
			Owner: func(context.Context) (string, error) { return testOwner, nil }}, "bench")
		runMessage(b, s, benchMessage(b, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "echo hi"}), `hi`)
	})
}
