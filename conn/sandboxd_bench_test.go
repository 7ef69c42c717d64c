package conn_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	processv1 "sigs.k8s.io/agent-sandbox/packages/sandboxd/spec/process/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// BenchmarkSandboxdSmallCommand: `echo hi` on the real sandboxd server package over loopback,
// as a plain client sends it (unary Execute, streaming Start) and as conn.Exec does. conn.Exec
// against Start is this package's own cost per command; Start against Execute is the
// streaming protocol's.
func BenchmarkSandboxdSmallCommand(b *testing.B) {
	rest, grpcPort := startSandboxd(b)
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(grpcPort))
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cc.Close() })
	proc := processv1.NewProcessServiceClient(cc)
	argv := []string{"/bin/sh", "-c", "echo hi"}
	ctx := context.Background()
	b.Run("unary Execute", func(b *testing.B) {
		for b.Loop() {
			res, err := proc.Execute(ctx, &processv1.ExecuteRequest{Config: &processv1.ProcessConfig{Command: argv}})
			if err != nil || string(res.GetStdout()) != "hi\n" {
				b.Fatalf("%v %q", err, res.GetStdout())
			}
		}
	})
	b.Run("streaming Start", func(b *testing.B) {
		for b.Loop() {
			stream, err := proc.Start(ctx, &processv1.StartRequest{Config: &processv1.ProcessConfig{Command: argv}})
			if err != nil {
				b.Fatal(err)
			}
			for {
				msg, err := stream.Recv()
				if err != nil {
					b.Fatal(err)
				}
				if msg.GetExit() != nil {
					break
				}
			}
		}
	})
	c := mustNew(b, conn.Config{Type: conn.TypeSandboxdInCluster, Mode: conn.ModePodIP, RESTPort: rest, GRPCPort: grpcPort}, nil)
	target := conn.Target{Namespace: "ns", SandboxName: "sbx", PodIPs: []string{"127.0.0.1"}}
	b.Run("conn.Exec", func(b *testing.B) {
		for b.Loop() {
			res, err := c.Exec(ctx, target, conn.ExecRequest{Command: "echo hi", Timeout: time.Minute, Stdout: io.Discard, Stderr: io.Discard})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
}
