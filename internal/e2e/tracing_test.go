//go:build e2e

package e2e

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an in-memory OTLP/HTTP trace collector.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// inTrace returns the spans of one trace.
func (o *otlpReceiver) inTrace(traceID string) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if hex.EncodeToString(s.TraceId) == traceID {
			out = append(out, s)
		}
	}
	return out
}

// TestTraces: with OTEL_EXPORTER_OTLP_ENDPOINT set, a tool call whose _meta carries a client's
// traceparent becomes a server span in that trace, parented to the client's span, with child
// spans for the Kubernetes API requests (create_sandbox) and the sandboxd gRPC call
// (execute_command), exported to the collector the test runs.
func TestTraces(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t).Name
	rec := &otlpReceiver{}
	collector := httptest.NewServer(rec)
	t.Cleanup(collector.Close)
	c := connections()[4] // sandboxd by pod IP
	s := stdioSession(t, append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_SERVICE_NAME=sandbox-mcp-e2e"}, c.env...), "")

	const parent = "b7ad6b7169203331"
	traced := func(traceID, tool string, args map[string]any) {
		t.Helper()
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args,
			Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + parent + "-01"}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
	}
	createTrace, execTrace := "0af7651916cd43dd8448eb211c80319c", "4bf92f3577b34da6a3ce929d0e0e4736"
	args := map[string]any{"warmpool": c.pool, "namespace": ns}
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "create_sandbox", Arguments: args,
		Meta: mcp.Meta{"traceparent": "00-" + createTrace + "-" + parent + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("create_sandbox: %v %+v", err, res)
	}
	claim := res.StructuredContent.(map[string]any)["sandbox_claim_name"].(string)
	traced(execTrace, "execute_command", map[string]any{"sandbox_claim_name": claim, "namespace": ns, "command": "echo traced"})
	t.Cleanup(func() {
		_, _ = s.CallTool(t.Context(), &mcp.CallToolParams{Name: "delete_sandbox", Arguments: map[string]any{"sandbox_claim_name": claim, "namespace": ns}})
	})

	check := func(traceID, tool string, child func(*tracepb.Span) bool, what string) {
		t.Helper()
		var call *tracepb.Span
		var children []string
		ok := func() bool {
			call, children = nil, nil
			spans := rec.inTrace(traceID)
			for _, sp := range spans {
				if sp.Name == "tools/call "+tool && hex.EncodeToString(sp.ParentSpanId) == parent && sp.Kind == tracepb.Span_SPAN_KIND_SERVER {
					call = sp
				}
			}
			found := false
			for _, sp := range spans {
				if call != nil && string(sp.ParentSpanId) == string(call.SpanId) {
					children = append(children, sp.Name)
					found = found || child(sp)
				}
			}
			return found
		}
		deadline := time.Now().Add(15 * time.Second)
		for !ok() && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		switch {
		case call == nil:
			t.Errorf("no span of %s parented to the client's in trace %s (%d spans in it)", tool, traceID, len(rec.inTrace(traceID)))
		case !ok():
			t.Errorf("%s: no child span for %s among %v", tool, what, children)
		}
	}
	check(createTrace, "create_sandbox", func(sp *tracepb.Span) bool {
		return sp.Kind == tracepb.Span_SPAN_KIND_CLIENT && (strings.HasPrefix(sp.Name, "HTTP POST") || sp.Name == "POST")
	}, "the claim's POST to the API server")
	check(execTrace, "execute_command", func(sp *tracepb.Span) bool {
		return sp.Kind == tracepb.Span_SPAN_KIND_CLIENT && strings.Contains(sp.Name, "ProcessService")
	}, "the sandboxd gRPC call")
}
