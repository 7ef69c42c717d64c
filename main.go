// Command k8s-sandbox-mcp is an MCP server that lets language models create, use and delete
// Kubernetes agent sandboxes. It serves stdio by default and streamable HTTP with --http;
// `k8s-sandbox-mcp doctor` checks a cluster for what the server needs.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	// Mozilla's roots, used only where the system has none: the server's image (hack/image.sh,
	// .ko.yaml) carries no CA bundle, and an OIDC issuer or a public sandbox URL is verified
	// against these there.
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/tools"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// flags are the command line; Kubernetes access uses kubectl's standard flags.
type flags struct {
	httpAddr, envFile, logLevel, logFormat string
	metricsAddr                            string
	profiling                              bool
	sessionTTL                             time.Duration
	insecureNoAuth, showVersion            bool
	toolsets                               string // overrides K8S_SANDBOX_TOOLSETS when set
	readOnly, disableDestructive           bool   // or K8S_SANDBOX_READ_ONLY, _DISABLE_DESTRUCTIVE
	kube                                   *genericclioptions.ConfigFlags
}

// run is main without the process. Exit code 2 means the invocation or the settings are
// wrong (one line on stderr names what to fix); 1 means serving failed.
func run(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "doctor" {
		return runDoctor(ctx, args[1:], environ, stdout, stderr)
	}
	f, err := parseFlags(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp: %v\n", err)
		return 2
	}
	if f.showVersion {
		fmt.Fprintln(stdout, "k8s-sandbox-mcp", version())
		return 0
	}
	a, err := newApp(ctx, f, environ, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp: %v\n", err)
		return 2
	}
	defer a.close()
	if f.httpAddr == "" {
		err = a.serveStdio(ctx, stdin, stdout)
	} else {
		err = a.serveHTTP(ctx)
	}
	if err != nil {
		a.log.Error().Err(err).Msg("serving failed")
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (flags, error) {
	fs := pflag.NewFlagSet("k8s-sandbox-mcp", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: k8s-sandbox-mcp [flags]          serve MCP (stdio, or HTTP with --http)\n"+
			"       k8s-sandbox-mcp doctor [flags]   check the cluster for what the server needs (doctor --help)\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var f flags
	fs.StringVar(&f.httpAddr, "http", "", "serve streamable HTTP on ADDR (e.g. 127.0.0.1:8000, or a bare port for loopback) at /mcp instead of stdio")
	fs.StringVar(&f.envFile, "env-file", "", "read K8S_SANDBOX_* settings from this file (the environment wins)")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error (default $K8S_SANDBOX_LOG_LEVEL or info)")
	fs.StringVar(&f.logFormat, "log-format", "auto", "auto, json or console (auto: console when stderr is a terminal)")
	fs.DurationVar(&f.sessionTTL, "session-idle-ttl", 30*time.Minute, "HTTP: close sessions idle this long (and release their sandboxes)")
	fs.BoolVar(&f.insecureNoAuth, "insecure-no-auth", false, "HTTP: allow a non-loopback --http address without authentication (warns on every start)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics, on an address of their own (a bare port means loopback)")
	fs.BoolVar(&f.profiling, "profiling", false, "serve Go's profiles at http://METRICS-ADDR/debug/pprof/ (needs --metrics-addr)")
	fs.BoolVar(&f.showVersion, "version", false, "print the version and exit")
	fs.StringVar(&f.toolsets, "toolsets", "", "list only these toolsets' tools, comma-separated: "+strings.Join(tools.ToolsetNames(), ", ")+" (default $K8S_SANDBOX_TOOLSETS or all)")
	fs.BoolVar(&f.readOnly, "read-only", false, "list only tools that change nothing (readOnlyHint); or $K8S_SANDBOX_READ_ONLY")
	fs.BoolVar(&f.disableDestructive, "disable-destructive", false, "leave out tools that delete or overwrite (destructiveHint); or $K8S_SANDBOX_DISABLE_DESTRUCTIVE")
	f.kube = genericclioptions.NewConfigFlags(true)
	f.kube.AddFlags(fs)
	err := fs.Parse(args)
	// A bare port binds loopback: exposing the server must be spelled out.
	if _, perr := strconv.Atoi(f.httpAddr); perr == nil {
		f.httpAddr = "127.0.0.1:" + f.httpAddr
	}
	if _, perr := strconv.Atoi(f.metricsAddr); perr == nil {
		f.metricsAddr = "127.0.0.1:" + f.metricsAddr
	}
	return f, err
}

// buildVersion is set at link time by hack/release.sh (-X main.buildVersion=TAG), so that the
// binary, the .mcpb manifest and server.json take their version from the one release tag. A
// go install or a build at a tagged commit leaves it empty and go's module version answers.
var buildVersion string

func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
