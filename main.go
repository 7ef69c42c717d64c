// Command k8s-sandbox-mcp is an MCP server that lets language models create, use and delete
// Kubernetes agent sandboxes. It serves stdio by default and streamable HTTP with --http.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/cleanup"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/config"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/logging"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/owner"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/serve"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/tools"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: exit code 2 means the invocation or settings are wrong.
func run(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("k8s-sandbox-mcp", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	httpAddr := fs.String("http", "", "serve streamable HTTP on ADDR (e.g. 127.0.0.1:8000) at /mcp instead of stdio")
	envFile := fs.String("env-file", "", "read K8S_SANDBOX_* settings from this file (the environment wins)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (default $K8S_SANDBOX_LOG_LEVEL or info)")
	logFormat := fs.String("log-format", "auto", "auto, json or console (auto: console when stderr is a terminal)")
	sessionTTL := fs.Duration("session-idle-ttl", 30*time.Minute, "HTTP: close sessions idle this long")
	insecureNoAuth := fs.Bool("insecure-no-auth", false, "HTTP: allow a non-loopback --http address without authentication (warns on every start)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	kflags := genericclioptions.NewConfigFlags(true)
	kflags.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "k8s-sandbox-mcp: %v\n", err)
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, "k8s-sandbox-mcp", version())
		return 0
	}
	cfg, err := config.Load(config.Source{Environ: environ, EnvFile: *envFile, DotEnv: ".env"})
	if err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp: %v\n", err)
		return 2
	}
	if *logLevel == "" {
		*logLevel = cfg.LogLevel
	}
	log, err := logging.New(stderr, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp: %v\n", err)
		return 2
	}
	for _, name := range cfg.Unknown {
		log.Warn().Str("variable", name).Msg("unknown setting ignored (typo?)")
	}
	// config leaves AUTH__ and HTTP__ names to their packages; flag typos among them here.
	httpLayer := map[string]bool{}
	for _, name := range append(auth.Variables(), serve.Variables()...) {
		httpLayer[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Vars)) {
		if (strings.HasPrefix(name, config.Prefix+"AUTH__") || strings.HasPrefix(name, config.Prefix+"HTTP__")) && !httpLayer[name] {
			log.Warn().Str("variable", name).Msg("unknown setting ignored (typo?)")
		}
	}
	authCfg, err := auth.LoadConfig(cfg.Vars)
	if err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp: %v\n", err)
		return 2
	}
	httpSet, err := serve.LoadHTTPSettings(cfg.Vars)
	if err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp: %v\n", err)
		return 2
	}
	var authn *auth.Authenticator // nil: HTTP without authentication
	if *httpAddr != "" {
		warn, err := serve.CheckExposure(*httpAddr, authCfg.Enabled(), *insecureNoAuth)
		if err != nil {
			fmt.Fprintf(stderr, "k8s-sandbox-mcp: %v\n", err)
			return 2
		}
		if warn != "" {
			log.Warn().Msg(warn)
		}
		if authCfg.Enabled() {
			if authn, err = auth.New(authCfg, auth.Options{ListenAddr: *httpAddr, Log: log}); err != nil {
				fmt.Fprintf(stderr, "k8s-sandbox-mcp: %v\n", err)
				return 2
			}
			if err := authn.Check(ctx); err != nil {
				log.Warn().Err(err).Msg("OIDC issuer keys not loaded yet: JWTs are refused until they are (static tokens work)")
			}
		}
	}
	if !kube.ValidLabelKey(cfg.SessionLabelKey) {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp: %sSESSION_ID_LABEL_KEY %q is not a valid Kubernetes label key\n", config.Prefix, cfg.SessionLabelKey)
		return 2
	}

	restCfg, err := kflags.ToRESTConfig()
	if err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp: no Kubernetes configuration: %v (use --kubeconfig, $KUBECONFIG, or run in a pod)\n", err)
		return 2
	}
	defaultNS, _, err := kflags.ToRawKubeConfigLoader().Namespace()
	if err != nil || defaultNS == "" {
		defaultNS = "default"
	}
	claims, err := kube.New(restCfg, cfg.SessionLabelKey)
	if err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp: %v\n", err)
		return 2
	}
	defer claims.Close()
	sandboxes, err := conn.New(cfg.Connection, claims)
	if err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp: %v\n", err)
		return 2
	}
	defer sandboxes.Close()

	log = log.With().Str("connection", cfg.Connection.Type).Logger()
	owners := owner.New(cfg.StdioOwner)
	janitor := cleanup.New(claims, log, 60*time.Second)
	deps := tools.Deps{
		Claims: claims, Conn: sandboxes, DefaultNamespace: defaultNS, Log: log,
		MaxDownloadBytes: cfg.Connection.MaxDownloadBytes, AllowedNamespaces: cfg.AllowedNamespaces,
		MaxSandboxesPerOwner: cfg.MaxSandboxesPerOwner, MaxShutdownAfter: cfg.MaxShutdownAfter,
		RequireShutdown: !cfg.AllowNoShutdown, Tracker: janitor,
	}
	if *httpAddr == "" {
		deps.Owner = owners.Stdio
		s := tools.NewServer(deps, version())
		log.Info().Str("owner", owners.StdioID()).Str("namespace", defaultNS).Msg("serving stdio")
		err := serve.Stdio(ctx, s, stdin, stdout, log)
		if !cfg.KeepOnSessionEnd {
			_, _ = janitor.Release(ctx, owners.StdioID(), "stdio closed")
		}
		if err != nil {
			log.Error().Err(err).Msg("stdio server failed")
			return 1
		}
		return 0
	}
	deps.Owner = owners.HTTP
	hooks := &server.Hooks{}
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		if id, ok := owners.Forget(cs.SessionID()); ok && !cfg.KeepOnSessionEnd {
			janitor.ReleaseAsync(id, "session ended")
		}
	})
	s := tools.NewServer(deps, version(), server.WithHooks(hooks),
		server.WithToolHandlerMiddleware(serve.LimitConcurrency(httpSet.MaxConcurrentCalls, serve.CallerKey)))
	health := &serve.Health{Prober: claims, Namespace: cfg.ProbeNamespace, Log: log}
	health.MarkReady()
	err = serve.HTTP(ctx, s, serve.HTTPOptions{
		Addr: *httpAddr, Health: health, Log: log, SessionTTL: *sessionTTL,
		Settings: httpSet, Auth: authn,
	})
	wctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	janitor.Wait(wctx)
	cancel()
	if err != nil {
		log.Error().Err(err).Msg("http server failed")
		return 1
	}
	return 0
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
