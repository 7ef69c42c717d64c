package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
)

// BenchmarkHTTPToolCall times one sessionless (2026-07-28) tools/call of a no-op tool over
// loopback HTTP with 16 clients at once (8 per CPU on two). "mcp-go" is mcp-go's streamable
// HTTP server alone; "serve" is this package's surface around the same server: Origin check,
// bearer authentication, body cap, session guard, cancel acknowledgement, and the session and
// per-caller call limits as middleware. The difference is what this package costs per call:
//
//	go test ./internal/serve -run '^$' -bench HTTPToolCall -count 5
//
// and profile with -cpuprofile on the "serve" case.
func BenchmarkHTTPToolCall(b *testing.B) {
	for _, layer := range []string{"mcp-go", "serve"} {
		b.Run(layer, func(b *testing.B) {
			url := benchHTTP(b, layer == "serve")
			v := mcp.ProtocolVersion20260728
			body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
				"name": "echo", "arguments": map[string]any{"text": "hi"},
				"_meta": map[string]any{mcp.MetaKeyProtocolVersion: v, mcp.MetaKeyClientCapabilities: map[string]any{},
					mcp.MetaKeyClientInfo: map[string]any{"name": "bench", "version": "1"}}}})
			if err != nil {
				b.Fatal(err)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.Cleanup(client.CloseIdleConnections)
			b.SetParallelism(8)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("Authorization", "Bearer "+tokAlice)
					req.Header.Set(mcp.HeaderProtocolVersion, v)
					req.Header.Set(mcp.HeaderMethod, "tools/call")
					req.Header.Set(mcp.HeaderName, "echo")
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					out, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `"text":"hi"`) {
						b.Errorf("%d %s", resp.StatusCode, out)
						return
					}
				}
			})
		})
	}
}

// benchHTTP serves a no-op echo tool, through this package's surface when ours is set, and
// returns the /mcp URL.
func benchHTTP(b *testing.B, ours bool) string {
	b.Helper()
	var opts []server.ServerOption
	var sess *Sessions
	if ours {
		sess = NewSessions(SessionOptions{Log: zerolog.Nop()})
		set := HTTPSettings{}.withDefaults()
		opts = append(opts, server.WithHooks(sess.Hooks()), server.WithToolHandlerMiddleware(sess.Calls),
			server.WithToolHandlerMiddleware(LimitConcurrency(set.MaxConcurrentCalls, CallerKey)))
	}
	s := server.NewMCPServer("bench", "1", append(opts, server.WithToolCapabilities(false))...)
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	var h http.Handler = server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp"))
	if ours {
		a, err := auth.New(auth.Config{Tokens: []auth.Token{{Principal: "alice", Secret: tokAlice}}, ResourceURL: resource},
			auth.Options{Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		handler := NewHandler(s, HTTPOptions{Log: zerolog.Nop(), Sessions: sess, Auth: a})
		b.Cleanup(func() { _ = handler.Shutdown(context.Background()) })
		h = handler
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}
