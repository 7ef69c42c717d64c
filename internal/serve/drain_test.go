package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

// After SIGTERM (ctx ends) readiness fails first while requests are still served for the
// drain time; then the server stops.
func TestDrainFailsReadinessFirst(t *testing.T) {
	const drain = 400 * time.Millisecond
	health := &Health{Prober: okProber{}, Log: zerolog.Nop()}
	health.MarkReady()
	addrc := make(chan net.Addr, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- HTTP(ctx, server.NewMCPServer("t", "1"), HTTPOptions{Addr: "127.0.0.1:0", Health: health, Log: zerolog.Nop(),
			Settings: HTTPSettings{Drain: drain}, Ready: func(a net.Addr) { addrc <- a }})
	}()
	base := "http://" + (<-addrc).String()
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Fatalf("readyz before shutdown: %d", code)
	}
	stopped := time.Now()
	cancel()
	time.Sleep(drain / 4)
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
		t.Errorf("readyz while draining: %d %s", code, body)
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK || !resp.Close {
		t.Errorf("a request while draining: %v %v, want it served on a connection that then closes", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(stopped); took < drain {
		t.Errorf("stopped after %s, before the drain of %s", took, drain)
	}
	if code, _ := get("/healthz"); code != 0 {
		t.Errorf("served after the drain: %d", code)
	}
}
