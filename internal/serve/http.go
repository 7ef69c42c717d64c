package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
)

// HTTPOptions configure the streamable HTTP transport.
type HTTPOptions struct {
	Addr        string
	Health      *Health
	Log         zerolog.Logger
	ContextFunc server.HTTPContextFunc
	Settings    HTTPSettings // zero fields take defaults
	// Sessions own the MCP sessions; install its Hooks and Calls on the MCPServer. nil makes
	// one with Settings' bounds and no idle expiry.
	Sessions *Sessions
	// Auth authenticates /mcp and serves the RFC 9728 metadata; nil serves without
	// authentication (CheckExposure decides whether that is acceptable).
	Auth *auth.Authenticator
	// Ready, when set, receives the bound address once listening (tests use port 0).
	Ready func(addr net.Addr)
	// Routes are mounted behind the same authentication as /mcp, outside its body cap: the
	// exposed-ports proxy (expose_port) and the transfer URLs (create_transfer_url).
	Routes []Route
}

// Route is a path tree of URLs a tool hands out: Handler serves Prefix, and SetBase learns the
// URL clients reach this server at (Settings.PublicURL, else the listening address).
type Route struct {
	Prefix  string
	Handler http.Handler
	SetBase func(base string)
}

// Handler is the HTTP surface: /mcp behind Origin check, authentication, the body cap and
// the session guard; /healthz, /readyz and the OAuth metadata unauthenticated.
type Handler struct {
	mux         *http.ServeMux
	mcp         *server.StreamableHTTPServer
	sessions    *Sessions
	stopSweeper context.CancelFunc
}

// NewHandler assembles the routes and starts the session sweeper; Shutdown must be called.
func NewHandler(s *server.MCPServer, o HTTPOptions) *Handler {
	set := o.Settings.withDefaults()
	sess := o.Sessions
	if sess == nil {
		sess = NewSessions(SessionOptions{Settings: set, Log: o.Log})
	}
	// No WithSessionIdleTTL: mcp-go's sweeper counts a session with a call in flight as idle.
	opts := []server.StreamableHTTPOption{
		server.WithEndpointPath("/mcp"),
		server.WithSessionIdManagerResolver(sess),
		// mcp-go's own bound (4 MiB by default since v1.5) is ours: bodyLimit owns the number.
		server.WithMaxRequestBodyBytes(set.MaxBodyBytes),
	}
	// Not needed for the principal: mcp-go derives every handler's context from the
	// request's, which the auth middleware has already enriched.
	if o.ContextFunc != nil {
		opts = append(opts, server.WithHTTPContextFunc(o.ContextFunc))
	}
	h := &Handler{mux: http.NewServeMux(), mcp: server.NewStreamableHTTPServer(s, opts...), sessions: sess}
	sess.attach(h.mcp)
	ctx, cancel := context.WithCancel(context.Background())
	h.stopSweeper = cancel
	go sess.runSweeper(ctx)
	var endpoint http.Handler = bodyLimit(sess.bodyCap(set.MaxBodyBytes), sess.bodies, sess.guard(cancelAck(h.mcp)))
	if o.Auth != nil {
		endpoint = o.Auth.Middleware(endpoint)
		o.Auth.Register(h.mux)
	}
	h.mux.Handle("/mcp", originGuard(set.AllowedOrigins, endpoint))
	for _, r := range o.Routes {
		handler := r.Handler
		if o.Auth != nil {
			handler = o.Auth.Middleware(handler)
		}
		h.mux.Handle(r.Prefix, handler)
	}
	if o.Health != nil {
		h.mux.HandleFunc("GET /healthz", o.Health.Healthz)
		h.mux.HandleFunc("GET /readyz", o.Health.Readyz)
	}
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Shutdown ends every MCP session (cancelling its calls) and refuses new ones; the sessions'
// OnEnd run in the background (Sessions.Wait).
func (h *Handler) Shutdown(ctx context.Context) error {
	h.stopSweeper()
	h.sessions.close()
	return h.mcp.Shutdown(ctx)
}

// HTTP serves s at /mcp plus /healthz and /readyz until ctx ends, then shuts down gracefully.
func HTTP(ctx context.Context, s *server.MCPServer, o HTTPOptions) error {
	h := NewHandler(s, o)
	// No WriteTimeout: it would cut off a tool call that streams progress for minutes.
	// ReadTimeout is safe: net/http lifts the read deadline once the body has been read.
	var draining atomic.Bool
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if draining.Load() {
				w.Header().Set("Connection", "close")
			}
			h.ServeHTTP(w, r)
		}),
		ReadTimeout:       o.Settings.withDefaults().ReadTimeout,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Addr, err)
	}
	ev := o.Log.Info().Str("addr", ln.Addr().String()).Str("endpoint", "http://"+ln.Addr().String()+"/mcp").Bool("authentication", o.Auth != nil)
	if o.Auth != nil {
		ev = ev.Str("resource", o.Auth.Resource())
	}
	ev.Msg("serving streamable HTTP")
	if len(o.Routes) > 0 {
		base := o.Settings.PublicURL
		if base == "" {
			base = "http://" + ln.Addr().String()
			if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
				o.Log.Warn().Str("url", base).Msgf("expose_port and create_transfer_url URLs will name an address clients cannot use; set %s", VarPublicURL)
			}
		}
		for _, r := range o.Routes {
			r.SetBase(base)
		}
	}
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
	if o.Health != nil {
		o.Health.MarkDraining()
	}
	// Responses from now on close their connection, so clients open new ones, which the
	// Service sends to replicas that are not stopping. Not SetKeepAlivesEnabled(false): it
	// also closes the idle connections at once, and a client that has just picked one to send
	// a POST on reads EOF (once in 4477 calls of a rolling restart in CI).
	draining.Store(true)
	if d := o.Settings.withDefaults().Drain; d > 0 {
		o.Log.Info().Dur("drain", d).Msg("draining: /readyz answers 503 while calls are still served")
		time.Sleep(d)
	}
	o.Log.Info().Msg("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	// Close MCP sessions first so their cleanup hooks run while the API is still reachable.
	herr := h.Shutdown(sctx)
	serr := srv.Shutdown(sctx)
	// Each ended session's release gets its own budget, not what the drain above left.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
	defer wcancel()
	h.sessions.Wait(wctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return errors.Join(herr, serr)
}
