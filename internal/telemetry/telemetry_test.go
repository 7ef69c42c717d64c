package telemetry

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
