package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	extclientset "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/clientset/versioned"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/config"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/doctor"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/tools"
)

// doctorRequestTimeout bounds every API request of doctor, discovery included (whose calls
// take no context): a silent API server fails a line instead of hanging the run.
const doctorRequestTimeout = 15 * time.Second

const doctorUsage = `Usage: k8s-sandbox-mcp doctor [flags]

Checks, in order, what the server needs from the cluster, with the server's own settings
(K8S_SANDBOX_* variables, --env-file, .env) and Kubernetes flags, and prints one line each:
OK, WARN or FAIL, with the fix.

  api            the kubeconfig leads to an API server that answers
  crds           agent-sandbox's CRDs are served, at the version the server uses
  controller     agent-sandbox's controller runs (its Deployment, else its leader Lease)
  pools          each warm pool of the served namespaces has a template and a ready sandbox
  rbac           the identity may do each verb the server uses (SelfSubjectAccessReview),
                 naming the tool a missing one breaks
  metrics        metrics.k8s.io is served (get_sandbox_metrics)
  networkpolicy  NetworkPolicy is enforced: with --probe, the probe's sandbox cannot reach
                 the API server; else a known engine's DaemonSet runs (or: the API cannot tell)
  probe          with --probe: claim a sandbox, run ` + "`true`" + ` in it through the configured
                 connection, delete the claim

Exit code 1 when any line is FAIL, 2 when the invocation or the settings are wrong.

Flags:
`

// doctorFlags are doctor's command line: its own flags, and kubectl's as the server has them.
type doctorFlags struct {
	envFile, output, probePool string
	toolsets                   string // as the server's --toolsets: overrides K8S_SANDBOX_TOOLSETS
	sel                        tools.Selection
	probe                      bool
	probeWait                  time.Duration
	kube                       *genericclioptions.ConfigFlags
}

func parseDoctorFlags(args []string, stderr io.Writer) (doctorFlags, error) {
	fs := pflag.NewFlagSet("k8s-sandbox-mcp doctor", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, doctorUsage)
		fs.PrintDefaults()
	}
	var f doctorFlags
	fs.StringVar(&f.envFile, "env-file", "", "read K8S_SANDBOX_* settings from this file (the environment wins), as the server does")
	fs.StringVarP(&f.output, "output", "o", "text", "text (one line per check) or json (one object per check, a line each)")
	fs.StringVar(&f.toolsets, "toolsets", "", "the toolsets the server lists, as its --toolsets (default $K8S_SANDBOX_TOOLSETS or all): without metrics, the metrics API is not checked")
	fs.BoolVar(&f.probe, "probe", false, "also claim a sandbox, run `true` in it through the configured connection, and delete it")
	fs.StringVar(&f.probePool, "probe-pool", "", "warm pool the probe claims from (default: the pinned one, else the first with a ready sandbox)")
	fs.DurationVar(&f.probeWait, "probe-timeout", kube.DefaultReadyTimeout, "how long the probe's claim may take to be ready")
	f.kube = genericclioptions.NewConfigFlags(true)
	f.kube.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.output != "text" && f.output != "json" {
		return f, fmt.Errorf("--output must be text or json, got %q", f.output)
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("doctor takes no arguments, got %q", fs.Args())
	}
	return f, nil
}

// runDoctor is `k8s-sandbox-mcp doctor`: 0 when nothing failed, 1 on a FAIL, 2 on bad usage.
func runDoctor(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	f, err := parseDoctorFlags(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp doctor: %v\n", err)
		return 2
	}
	cfg, err := config.Load(config.Source{Environ: environ, EnvFile: f.envFile, DotEnv: ".env"})
	if err == nil {
		f.sel = tools.Selection{Toolsets: toolsetList(f.toolsets, cfg.Toolsets)}
		err = f.sel.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp doctor: %v\n", err)
		return 2
	}
	results, err := doctorRun(ctx, f, cfg, environ)
	if err != nil {
		results = []doctor.Result{{Check: doctor.CheckAPI, Status: doctor.Fail, Message: err.Error(),
			Fix: "pass --kubeconfig PATH or --context NAME, or set KUBECONFIG"}}
	}
	if err := doctor.Print(stdout, results, f.output == "json"); err != nil {
		fmt.Fprintf(stderr, "k8s-sandbox-mcp doctor: %v\n", err)
		return 1
	}
	if doctor.Failed(results) {
		return 1
	}
	return 0
}

// doctorRun builds the clients as the server does and runs the checks; an error means the
// kubeconfig leads nowhere (the api line says so).
func doctorRun(ctx context.Context, f doctorFlags, cfg config.Config, environ []string) ([]doctor.Result, error) {
	ka, err := loadKubeAccess(flags{kube: f.kube}, environ)
	if err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(ka.rest)
	rc.Timeout = doctorRequestTimeout
	// One short burst of reads (a review per verb and namespace): client-go's default of 5
	// requests a second would make it wait for nothing.
	rc.QPS, rc.Burst = 50, 100
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	ext, err := extclientset.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	env := doctor.Env{Kube: kc, Extensions: ext, Config: cfg, Server: rc.Host, User: ka.user, Namespace: ka.namespace,
		NoMetricsTool: !f.sel.Includes(tools.ToolsetMetrics)}
	if cfg.PinNamespace != "" {
		env.Namespace = cfg.PinNamespace
	}
	if f.probe {
		// The server's own clients: the probe proves what a tool call would do.
		claims, err := kube.New(ka.rest, cfg.SessionLabelKey, kube.WithAPIUser(ka.user), kube.WithMetadataPolicy(cfg.Metadata))
		if err != nil {
			return nil, err
		}
		defer claims.Close()
		c, err := conn.New(cfg.Connection, claims)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		env.Probe = &doctor.Prober{Claims: claims, Conn: c, Pool: f.probePool, Wait: f.probeWait}
	}
	return doctor.Run(ctx, env), nil
}
