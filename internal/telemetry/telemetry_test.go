package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestMetricsText(t *testing.T) {
	m := New()
	m.CallStarted("execute_command")
	m.CallEnded("execute_command", "ok", 20*time.Millisecond)
	m.CallStarted("execute_command")
	m.CallEnded("execute_command", "tool_error", time.Second)
	m.CallStarted("create_sandbox") // still running
	m.SandboxCreated(3 * time.Second)
	m.SandboxDeleted()
	m.Output(1000, 300)
	m.AuthFailed("invalid")
	sessions := 2.0
	m.Gauge("sessions", "open sessions", func() float64 { return sessions })

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, want := range []string{
		`k8s_sandbox_mcp_tool_calls_total{outcome="ok",tool="execute_command"} 1`,
		`k8s_sandbox_mcp_tool_calls_total{outcome="tool_error",tool="execute_command"} 1`,
		`k8s_sandbox_mcp_tool_call_duration_seconds_count{tool="execute_command"} 2`,
		`k8s_sandbox_mcp_tool_calls_in_flight 1`,
		`k8s_sandbox_mcp_sandboxes_created_total 1`,
		`k8s_sandbox_mcp_sandboxes_deleted_total 1`,
		`k8s_sandbox_mcp_sandbox_create_wait_seconds_count 1`,
		`k8s_sandbox_mcp_output_chars_total{kind="seen"} 1000`,
		`k8s_sandbox_mcp_output_chars_total{kind="returned"} 300`,
		`k8s_sandbox_mcp_auth_failures_total{reason="invalid"} 1`,
		`k8s_sandbox_mcp_sessions 2`,
		`go_goroutines `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestProfilingOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		profiling bool
		want      int
	}{{false, http.StatusNotFound}, {true, http.StatusOK}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- New().Serve(ctx, ln, zerolog.Nop(), tc.profiling) }()
		for _, path := range []string{"/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline"} {
			resp, err := http.Get("http://" + ln.Addr().String() + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("profiling=%v: GET %s = %d, want %d", tc.profiling, path, resp.StatusCode, tc.want)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
