// Package tracing exports OpenTelemetry traces over OTLP/HTTP when the standard OTEL_*
// variables ask for it, and is free when they do not: one span per tool call (its parent taken
// from the request's _meta.traceparent when the client sends one), with child spans for every
// Kubernetes API request and every call to the sandbox's runtime, whose trace context travels
// on as the traceparent header (router, python runtime, sandboxd's REST) or gRPC metadata
// (sandboxd's commands).
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
)

// Tracing is off (the zero value) or exporting. No global OpenTelemetry state is set: every
// instrumented client gets the provider and propagator from here.
type Tracing struct {
	sdk  *sdktrace.TracerProvider // nil: off
	prop propagation.TextMapPropagator
}

// Enabled says whether the environment asks for traces: an OTLP endpoint is set, the SDK is
// not disabled, and the exporter is OTLP (the only one built in). other is a value of
// OTEL_TRACES_EXPORTER this server does not support, for a warning.
func Enabled(getenv func(string) string) (on bool, other string) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false, ""
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "", "otlp":
	case "none":
		return false, ""
	default:
		return false, exp
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", ""
}

// New starts exporting when Enabled by getenv; the exporter reads the rest of the OTEL_*
// variables (endpoint, headers, timeouts) from the process environment itself. version names
// the service's version.
func New(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	if on, _ := Enabled(getenv); !on {
		return &Tracing{}, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override these defaults.
	res, err := resource.Merge(resource.NewSchemaless(attribute.String("service.name", "k8s-sandbox-mcp"),
		attribute.String("service.version", version)), resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return with(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

func with(opts ...sdktrace.TracerProviderOption) *Tracing {
	return &Tracing{
		sdk:  sdktrace.NewTracerProvider(opts...),
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
}

// On says whether spans are exported.
func (t *Tracing) On() bool { return t != nil && t.sdk != nil }

// Shutdown flushes the spans not yet exported.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.On() {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// Transport wraps rt so each request made within a traced call is a child span and carries
// traceparent; unchanged when off. Requests outside a call (the watch cache's lists and
// watches, the audit trail's Events, sweeps) make no spans: they would be parentless traces
// nobody asked for.
func (t *Tracing) Transport(rt http.RoundTripper) http.RoundTripper {
	if !t.On() {
		return rt
	}
	return otelhttp.NewTransport(rt, otelhttp.WithTracerProvider(t.sdk), otelhttp.WithPropagators(t.prop),
		otelhttp.WithFilter(func(r *http.Request) bool { return trace.SpanContextFromContext(r.Context()).IsValid() }))
}

// GRPC is the dial option that makes each RPC a child span with the trace context in its
// metadata; none when off.
func (t *Tracing) GRPC() []grpc.DialOption {
	if !t.On() {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(
		otelgrpc.WithTracerProvider(t.sdk), otelgrpc.WithPropagators(t.prop)))}
}

// metaCarrier reads trace context from a request's _meta (the keys traceparent, tracestate
// and baggage, as MCP clients that trace send them).
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string { s, _ := m[key].(string); return s }
func (m metaCarrier) Set(key, value string) { m[key] = value }
func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// Calls is the tool-handler middleware: a span per call named after the tool, an error
// status when the result is an isError.
func (t *Tracing) Calls(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	if !t.On() {
		return next
	}
	tracer := t.sdk.Tracer("github.com/k8s-sandbox-mcp/k8s-sandbox-mcp")
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if m := req.Params.Meta; m != nil && len(m.AdditionalFields) > 0 {
			ctx = t.prop.Extract(ctx, metaCarrier(m.AdditionalFields))
		}
		ctx, span := tracer.Start(ctx, "tools/call "+req.Params.Name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", req.Params.Name)))
		defer span.End()
		res, err := next(ctx, req)
		switch {
		case err != nil:
			span.SetStatus(codes.Error, "tool handler error")
		case res != nil && res.IsError:
			span.SetStatus(codes.Error, "tool result isError")
		}
		return res, err
	}
}
