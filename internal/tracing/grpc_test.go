package tracing

import (
	"context"
	"net"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// An RPC made within a traced call reaches the server with the call's trace in its metadata, as
// sandboxd receives execute_command's (the e2e sees the client span; this sees the wire).
func TestGRPCCarriesTheTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := with(sdktrace.WithSpanProcessor(rec))
	got := make(chan string, 2)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		got <- strings.Join(md.Get("traceparent"), ",")
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(ln.Addr().String(), append(tr.GRPC(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	client := healthpb.NewHealthClient(cc)

	ctx, call := tr.sdk.Tracer("test").Start(context.Background(), "tools/call execute_command")
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	call.End()
	header := <-got
	traceID := call.SpanContext().TraceID().String()
	var rpc sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() == call.SpanContext().SpanID() {
			rpc = s
		}
	}
	if rpc == nil {
		t.Fatalf("no RPC span under the call; traceparent at the server %q", header)
	}
	if want := "00-" + traceID + "-" + rpc.SpanContext().SpanID().String() + "-01"; header != want {
		t.Errorf("traceparent at the server %q, want %q (the RPC span's)", header, want)
	}
}
