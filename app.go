package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/cleanup"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/config"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/logging"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/owner"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/ports"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/readgate"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/serve"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/telemetry"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/tracing"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/transfer"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/tools"
)

// app is the wired server: settings, clients and the tools' dependencies.
type app struct {
	f       flags
	cfg     config.Config
	log     zerolog.Logger
	httpSet serve.HTTPSettings
	authn   *auth.Authenticator // nil: HTTP without authentication
	claims  *kube.Client
	conn    conn.Conn
	owners  *owner.Owners
	janitor *cleanup.Janitor
	deps    tools.Deps
	ports   *ports.Registry
	// transfers serves create_transfer_url's URLs (HTTP only; nil over stdio).
	transfers *transfer.Registry
	metrics   *telemetry.Metrics
	tracing   *tracing.Tracing
	clients   *serve.ClientLog   // the log lines MCP clients hear (notifications/message)
	stop      context.CancelFunc // ends the ports registry's sweep and listeners, and the metrics server
	checked   chan struct{}      // closed when the API check at start has finished
}

// newApp reads every setting and builds the clients. Its errors are the operator's to fix.
func newApp(ctx context.Context, f flags, environ []string, stderr io.Writer) (*app, error) {
	a := &app{f: f}
	var err error
	if a.cfg, err = config.Load(config.Source{Environ: environ, EnvFile: f.envFile, DotEnv: ".env"}); err != nil {
		return nil, err
	}
	if f.logLevel == "" {
		f.logLevel = a.cfg.LogLevel
	}
	sel := tools.Selection{Toolsets: toolsetList(f.toolsets, a.cfg.Toolsets), ReadOnly: a.cfg.ReadOnly || f.readOnly,
		DisableDestructive: a.cfg.DisableDestructive || f.disableDestructive}
	if err := sel.Validate(); err != nil {
		return nil, err
	}
	a.clients = serve.NewClientLog(0)
	if a.log, err = logging.New(stderr, f.logLevel, f.logFormat, a.clients); err != nil {
		return nil, err
	}
	a.warnUnknown()
	a.metrics = telemetry.New()
	if err := a.httpLayer(ctx); err != nil {
		return nil, err
	}
	if !kube.ValidLabelKey(a.cfg.SessionLabelKey) {
		return nil, fmt.Errorf("%sSESSION_ID_LABEL_KEY %q is not a valid Kubernetes label key", config.Prefix, a.cfg.SessionLabelKey)
	}
	ka, err := loadKubeAccess(f, environ)
	if err != nil {
		return nil, err
	}
	if err := a.startTracing(ctx, environ); err != nil {
		return nil, err
	}
	ka.rest.Wrap(a.tracing.Transport)
	ka.rest.Wrap(a.metrics.APITransport)
	defaultNS := ka.namespace
	if a.cfg.PinNamespace != "" {
		defaultNS = a.cfg.PinNamespace // what every call uses, so what the start-up check reads
	}
	if a.claims, err = kube.New(ka.rest, a.cfg.SessionLabelKey, kube.WithAPIUser(ka.user),
		kube.WithRateLimit(a.cfg.APIQPS, a.cfg.APIBurst), kube.WithMetadataPolicy(a.cfg.Metadata), kube.WithLifetime(a.cfg.Lifetime),
		kube.WithSuspendPausesLifetime(a.cfg.SuspendPausesLifetime), kube.WithNotices(logNotices(a.log))); err != nil {
		return nil, err
	}
	if a.conn, err = conn.New(a.cfg.Connection, a.claims, conn.WithInstrumentation(a.tracing.Transport, a.tracing.GRPC())); err != nil {
		a.claims.Close()
		return nil, err
	}
	// In the background: serving does not wait on the API server (the check cost every
	// start 12-23% in the benchmark); close waits for it, so its warning is never lost.
	a.checked = make(chan struct{})
	claims, log, checked := a.claims, a.log, a.checked
	go func() { defer close(checked); checkAPI(ctx, claims, log, defaultNS) }()
	a.log = a.log.With().Str("connection", a.cfg.Connection.Type).Logger()
	a.owners = owner.New(a.cfg.StdioOwner)
	a.janitor = cleanup.New(a.claims, a.log, 60*time.Second)
	a.deps = tools.Deps{
		Claims: a.claims, Conn: a.conn, DefaultNamespace: defaultNS, Log: a.log,
		MaxDownloadBytes: a.cfg.Connection.MaxDownloadBytes, MaxArchiveExpandedBytes: a.cfg.MaxArchiveExpandedBytes,
		AllowedNamespaces: a.cfg.AllowedNamespaces, MaxSandboxesPerOwner: a.cfg.MaxSandboxesPerOwner, MaxShutdownAfter: a.cfg.MaxShutdownAfter,
		AllowNoShutdown: a.cfg.AllowNoShutdown, DefaultShutdownAfter: a.cfg.DefaultShutdownAfter, MaxLifetime: a.cfg.Lifetime.MaxLifetime,
		Tracker: a.janitor, ProcessOutputBytes: a.cfg.ProcessOutputBytes,
		Custom: a.cfg.Custom, MaxVolumeSize: a.cfg.MaxVolumeSize, Observer: a.metrics, Selection: sel,
		AutoResume: a.cfg.AutoResume, SuspendPausesLifetime: a.cfg.SuspendPausesLifetime, OutputSchemas: a.cfg.OutputSchemas,
		FixedLifetime: !a.cfg.Lifetime.RenewOnUse,
		Pinned:        tools.Pins{Namespace: a.cfg.PinNamespace, Warmpool: a.cfg.PinWarmpool, Labels: a.cfg.PinLabels},
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stop = stop
	go a.clients.Run(bg)
	if porter, ok := a.conn.(conn.Porter); ok {
		a.ports = ports.New(a.claims, porter, principalOf, a.log)
		a.deps.Ports = a.ports
		go a.ports.Run(bg)
	}
	a.fileRoutes()
	a.metrics.Gauge("watched_namespaces", "Namespaces the watch cache follows (two watches each).",
		func() float64 { return float64(a.claims.WatchedNamespaces()) })
	a.metrics.Gauge("cached_claims", "SandboxClaims the watch cache holds (this server's, in the watched namespaces).",
		func() float64 { n, _ := a.claims.Cached(); return float64(n) })
	a.metrics.Gauge("cached_sandboxes", "Sandboxes the watch cache holds (those bound to this server's claims, in the watched namespaces).",
		func() float64 { _, n := a.claims.Cached(); return float64(n) })
	if f.metricsAddr != "" {
		ln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			a.close()
			return nil, fmt.Errorf("--metrics-addr: %w", err)
		}
		go func() {
			if err := a.metrics.Serve(bg, ln, a.log, f.profiling); err != nil {
				a.log.Error().Err(err).Msg("metrics server failed")
			}
		}()
	}
	return a, nil
}

// toolsetList is the --toolsets flag's comma list when given, else the setting's.
func toolsetList(flag string, setting []string) []string {
	if flag == "" {
		return setting
	}
	list := strings.Split(flag, ",")
	for i := range list {
		list[i] = strings.TrimSpace(list[i])
	}
	return list
}

// warnUnknown flags K8S_SANDBOX_* names nobody reads (typos); config leaves the AUTH__ and
// HTTP__ names to their packages, so those are checked against their lists here.
func (a *app) warnUnknown() {
	for _, name := range a.cfg.Unknown {
		a.log.Warn().Str("variable", name).Msg("unknown setting ignored (typo?)")
	}
	known := map[string]bool{}
	for _, name := range append(auth.Variables(), serve.Variables()...) {
		known[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(a.cfg.Vars)) {
		if (strings.HasPrefix(name, config.Prefix+"AUTH__") || strings.HasPrefix(name, config.Prefix+"HTTP__")) && !known[name] {
			a.log.Warn().Str("variable", name).Msg("unknown setting ignored (typo?)")
		}
	}
}

// httpLayer reads the HTTP settings and authentication, and refuses an exposed address
// without authentication.
func (a *app) httpLayer(ctx context.Context) error {
	authCfg, err := auth.LoadConfig(a.cfg.Vars)
	if err != nil {
		return err
	}
	if a.httpSet, err = serve.LoadHTTPSettings(a.cfg.Vars, tools.MaxResultBytes(a.cfg.Connection.MaxDownloadBytes)); err != nil {
		return err
	}
	if a.f.httpAddr == "" {
		return nil
	}
	warn, err := serve.CheckExposure(a.f.httpAddr, authCfg.Enabled(), a.f.insecureNoAuth)
	if err != nil {
		return err
	}
	if warn != "" {
		a.log.Warn().Msg(warn)
	}
	if !authCfg.Enabled() {
		return nil
	}
	if a.authn, err = auth.New(authCfg, auth.Options{ListenAddr: a.f.httpAddr, Log: a.log, Rejected: a.metrics.AuthFailed}); err != nil {
		return err
	}
	if err := a.authn.Check(ctx); err != nil {
		a.log.Warn().Err(err).Msg("OIDC issuer keys not loaded yet: JWTs are refused until they are (static tokens work)")
	}
	return nil
}

// startTracing exports traces when the OTEL_* variables ask for it.
func (a *app) startTracing(ctx context.Context, environ []string) error {
	vars := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	getenv := func(k string) string { return vars[k] }
	if _, other := tracing.Enabled(getenv); other != "" {
		a.log.Warn().Str("OTEL_TRACES_EXPORTER", other).Msg("only the otlp trace exporter is built in; traces are off")
	}
	var err error
	if a.tracing, err = tracing.New(ctx, getenv, version()); err != nil {
		return err
	}
	if a.tracing.On() {
		a.log.Info().Msg("exporting OpenTelemetry traces over OTLP/HTTP")
	}
	return nil
}

func (a *app) close() {
	if a.stop != nil {
		a.stop()
	}
	if a.tracing != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := a.tracing.Shutdown(sctx); err != nil {
			a.log.Warn().Err(err).Msg("flushing traces")
		}
		cancel()
	}
	if a.checked != nil {
		<-a.checked // bounded by startCheckTimeout
	}
	_ = a.conn.Close()
	a.claims.Close()
}

// serveStdio serves one client until EOF, then releases the sandboxes this process created.
func (a *app) serveStdio(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	a.deps.Owner = a.owners.Stdio
	hooks := &server.Hooks{}
	a.clients.Hooks(hooks, func(context.Context, string) string { return a.owners.StdioID() })
	s := tools.NewServer(a.deps, version(), server.WithHooks(hooks), server.WithToolHandlerMiddleware(a.tracing.Calls))
	a.log.Info().Str("owner", a.owners.StdioID()).Str("namespace", a.deps.DefaultNamespace).Msg("serving stdio")
	atEOF := a.stdioEnd(ctx)
	err := serve.Stdio(ctx, s, stdin, stdout, a.log)
	atEOF()
	return err
}

// serveHTTP serves until ctx ends; each ended session's sandboxes are released once the
// calls it had running have returned.
func (a *app) serveHTTP(ctx context.Context) error {
	a.deps.Owner = a.owners.HTTP
	a.deps.Principal = a.owners.HTTPPrincipal
	a.deps.Who = principalOf
	sessions := serve.NewSessions(serve.SessionOptions{
		Settings: a.httpSet, IdleTTL: a.f.sessionTTL, Log: a.log, ReleasesSandboxes: !a.cfg.KeepOnSessionEnd,
		OnEnd: func(sessionID, reason string) {
			if id, ok := a.owners.Forget(sessionID); ok && !a.cfg.KeepOnSessionEnd {
				_, _ = a.janitor.Release(context.Background(), id, "session ended: "+reason)
			}
		},
	})
	a.metrics.Gauge("sessions", "Open MCP sessions (HTTP, 2025-11-25 protocol).", func() float64 { return float64(sessions.Open()) })
	a.metrics.Gauge("streams", "Open streams: standalone GET streams, subscriptions/listen requests, and requests through /ports and /transfer URLs.", func() float64 { return float64(sessions.Streams()) })
	hooks := sessions.Hooks()
	a.clients.Hooks(hooks, owner.SessionOwner)
	// One call cap for tool calls and the checks of requests through the URLs tools hand out,
	// which read the API as calls do; those requests' open connections count as streams.
	calls := serve.NewCallLimit(a.httpSet.MaxConcurrentCalls)
	limits := readgate.Limits{Check: calls.Admit, Stream: sessions.AdmitStream}
	s := tools.NewServer(a.deps, version(), server.WithHooks(hooks),
		server.WithToolHandlerMiddleware(a.tracing.Calls),
		server.WithToolHandlerMiddleware(sessions.Calls),
		server.WithToolHandlerMiddleware(calls.Tools(serve.CallerKey)))
	health := &serve.Health{Prober: a.claims, Namespace: a.cfg.ProbeNamespace, Log: a.log}
	health.MarkReady()
	o := serve.HTTPOptions{
		Addr: a.f.httpAddr, Health: health, Log: a.log, Settings: a.httpSet, Auth: a.authn, Sessions: sessions,
	}
	if a.ports != nil {
		a.ports.SetLimits(limits)
		o.Routes = append(o.Routes, serve.Route{Prefix: ports.PathPrefix, Handler: a.ports.Handler(), SetBase: a.ports.SetBase})
	}
	if a.transfers != nil {
		a.transfers.SetLimits(limits)
		o.Routes = append(o.Routes, serve.Route{Prefix: transfer.PathPrefix, Handler: a.transfers.Handler(), SetBase: a.transfers.SetBase})
	}
	return serve.HTTP(ctx, s, o)
}

// principalOf is the authenticated caller in its source-qualified form ("static:alice"), or "".
func principalOf(ctx context.Context) string {
	p, _ := auth.PrincipalFrom(ctx)
	return p.String()
}
