package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCancelAck(t *testing.T) {
	tests := []struct {
		name, version, body string
		want                int
		method              string // the Mcp-Method header, when sent
	}{
		{"modern bare cancel", "2026-07-28", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"ctx"}}`, http.StatusAccepted, ""},
		{"modern cancel with meta goes on", "2026-07-28", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, http.StatusTeapot, ""},
		{"session era goes on", "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, http.StatusTeapot, ""},
		{"a request goes on", "2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"notifications/cancelled"}`, http.StatusTeapot, ""},
		{"another notification goes on", "2026-07-28", `{"jsonrpc":"2.0","method":"notifications/progress"}`, http.StatusTeapot, ""},
		{"bare cancel with its Mcp-Method", "2026-07-28", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, http.StatusAccepted, "notifications/cancelled"},
		{"a tool call by its Mcp-Method is not read", "2026-07-28", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, http.StatusTeapot, "tools/call"},
		{"a tool call naming the method in an argument goes on", "2026-07-28", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{"s":"notifications/cancelled"}}}`, http.StatusTeapot, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen string
			h := bodyLimit(func(*http.Request) (int64, string) { return 1 << 20, "" }, newInFlight(HTTPSettings{}.withDefaults()), cancelAck(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				seen = string(b)
				w.WriteHeader(http.StatusTeapot)
			})))
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tt.body))
			req.Header.Set("Mcp-Protocol-Version", tt.version)
			if tt.method != "" {
				req.Header.Set("Mcp-Method", tt.method)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d", rec.Code, tt.want)
			}
			if tt.want == http.StatusTeapot && seen != tt.body {
				t.Errorf("body not passed on intact: %q", seen)
			}
		})
	}
}
