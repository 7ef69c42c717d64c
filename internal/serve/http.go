package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

// HTTPOptions configure the streamable HTTP transport.
type HTTPOptions struct {
	Addr        string
	Health      *Health
	Log         zerolog.Logger
	SessionTTL  time.Duration // idle sessions are closed (and their cleanup hooks run) after this
	ContextFunc server.HTTPContextFunc
	// Ready, when set, receives the bound address once listening (tests use port 0).
	Ready func(addr net.Addr)
}

// HTTP serves s at /mcp plus /healthz and /readyz until ctx ends, then shuts down gracefully.
func HTTP(ctx context.Context, s *server.MCPServer, o HTTPOptions) error {
	opts := []server.StreamableHTTPOption{
		server.WithEndpointPath("/mcp"),
		server.WithStateful(true),
	}
	if o.SessionTTL > 0 {
		opts = append(opts, server.WithSessionIdleTTL(o.SessionTTL))
	}
	if o.ContextFunc != nil {
		opts = append(opts, server.WithHTTPContextFunc(o.ContextFunc))
	}
	h := server.NewStreamableHTTPServer(s, opts...)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("GET /healthz", o.Health.Healthz)
	mux.HandleFunc("GET /readyz", o.Health.Readyz)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Addr, err)
	}
	o.Log.Info().Str("addr", ln.Addr().String()).Str("endpoint", "http://"+ln.Addr().String()+"/mcp").Msg("serving streamable HTTP")
	if o.Ready != nil {
		o.Ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	o.Log.Info().Msg("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	// Close MCP sessions first so their cleanup hooks run while the API is still reachable.
	herr := h.Shutdown(sctx)
	serr := srv.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return errors.Join(herr, serr)
}

// Stdio serves s over stdin/stdout until EOF or ctx ends.
func Stdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, log zerolog.Logger) error {
	ss := server.NewStdioServer(s)
	ss.SetErrorLogger(stdlog.New(log, "", 0))
	// Long commands occupy a worker each; the default pool of 5 would queue a sixth call.
	server.WithWorkerPoolSize(32)(ss)
	err := ss.Listen(ctx, in, out)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
