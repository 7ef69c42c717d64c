package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestEnabled(t *testing.T) {
	cases := []struct {
		env       map[string]string
		on        bool
		unhandled string
	}{
		{map[string]string{}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces", "OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "zipkin"}, false, "zipkin"},
	}
	for _, tc := range cases {
		on, other := Enabled(func(k string) string { return tc.env[k] })
		if on != tc.on || other != tc.unhandled {
			t.Errorf("%v: on=%v other=%q, want %v %q", tc.env, on, other, tc.on, tc.unhandled)
		}
	}
}

func TestOffCostsNothing(t *testing.T) {
	off, err := New(context.Background(), func(string) string { return "" }, "v")
	if err != nil || off.On() {
		t.Fatalf("New without OTEL_*: %v %v", off, err)
	}
	rt := http.DefaultTransport
	if off.Transport(rt) != rt || off.GRPC() != nil {
		t.Error("instrumentation added while off")
	}
}

// A tool call's span continues the client's trace from _meta, and an HTTP request made while
// handling it is a child span whose traceparent reaches the server.
func TestCallSpanContinuesTheClientsTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := with(sdktrace.WithSpanProcessor(rec))
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("traceparent") }))
	defer srv.Close()
	client := &http.Client{Transport: tr.Transport(http.DefaultTransport)}
	handler := tr.Calls(func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(r)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		return mcp.NewToolResultError("failed"), nil
	})
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_command"
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + traceID + "-" + parent + "-01"}}
	if _, err := handler(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	child, call := spans[0], spans[1]
	if call.Name() != "tools/call execute_command" || call.SpanKind() != trace.SpanKindServer ||
		call.SpanContext().TraceID().String() != traceID || call.Parent().SpanID().String() != parent || call.Status().Code.String() != "Error" {
		t.Errorf("call span %s kind %s trace %s parent %s status %v", call.Name(), call.SpanKind(), call.SpanContext().TraceID(), call.Parent().SpanID(), call.Status())
	}
	if child.Parent().SpanID() != call.SpanContext().SpanID() || child.SpanKind() != trace.SpanKindClient {
		t.Errorf("HTTP span parent %s, want the call's %s", child.Parent().SpanID(), call.SpanContext().SpanID())
	}
	if want := "00-" + traceID + "-" + child.SpanContext().SpanID().String() + "-01"; got != want {
		t.Errorf("traceparent at the server %q, want %q", got, want)
	}
	if !strings.Contains(got, traceID) {
		t.Error("the trace did not reach the server")
	}

	// A request outside any call (a watch, an Event) makes no span and sends no traceparent.
	got = ""
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := len(rec.Ended()); n != 2 || got != "" {
		t.Errorf("a request outside a call: %d spans, traceparent %q", n, got)
	}
}
