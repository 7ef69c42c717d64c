// Command sandbox-bench measures k8s-sandbox-mcp against the raw path to the same sandboxes
// on the local agent-sandbox stack and writes BENCHMARKS.md. Run it through hack/bench.sh,
// which builds the binaries it needs and brings the stack up.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// config holds the flags: binaries, output, and the iteration counts that bound the run time.
type config struct {
	server, minimal, lean, out, analysis, command string
	kms, kmsVersion                               string // kubernetes-mcp-server's binary (item 10's baseline)
	items                                         map[string]bool

	warm            int
	smallRuns       int
	leanRuns        int
	bigRuns         int
	bigServers      int
	bigBytes        []int64
	pyBigBytes      []int64
	createRuns      int
	httpClients     int
	httpClientsMore int
	httpCalls       int
	httpRounds      int
	startupRuns     int
	listRuns        int
	listFiles       []int
	poolReplicas    int
	runs            int

	renewCalls  int
	renewWindow time.Duration
	renewSpan   time.Duration

	loadReplicas  int
	loadClients   int
	loadCalls     int
	loadSessions  int
	loadSandboxes int
	loadChurners  int
	loadEveryRun  bool

	profileDir string
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("sandbox-bench", flag.ContinueOnError)
	fs.StringVar(&c.server, "server", "bin/k8s-sandbox-mcp", "the server binary under test")
	fs.StringVar(&c.minimal, "minimal", "bin/minimal-mcp", "the minimal mcp-go server (start-up baseline)")
	fs.StringVar(&c.lean, "lean", "bin/lean-exec-mcp", "item 1: the leanest execute_command on mcp-go and grpc-go (second sandboxd baseline)")
	fs.StringVar(&c.kms, "kms", "", "item 10: kubernetes-mcp-server's binary, the tool list's baseline (hack/bench.sh installs it; empty: none)")
	fs.StringVar(&c.kmsVersion, "kms-version", "", "item 10: the version of -kms, as the report names it")
	fs.StringVar(&c.out, "out", "BENCHMARKS.md", "where to write the report")
	fs.StringVar(&c.analysis, "analysis", "bench/ANALYSIS.md", "hand-written analysis appended to the report (skipped if missing)")
	fs.StringVar(&c.command, "command", "", "the command line to show under Reproduce (default: this one)")
	items := fs.String("items", "1,2,3,4,5,6,7,8,9,10,11", "which items to run")
	fs.IntVar(&c.warm, "warmup", 5, "unmeasured iterations before each latency series")
	fs.IntVar(&c.smallRuns, "small-runs", 200, "item 1: small commands per side and runtime")
	fs.IntVar(&c.leanRuns, "lean-runs", 0, "item 1: calls per side of the lean comparison (default -small-runs); the server over the lean server moves by ±0.05 between 400-call runs, so testing a cut on it takes thousands")
	fs.IntVar(&c.bigRuns, "big-runs", 3, "item 2: large-output commands per side, size and server process")
	fs.IntVar(&c.bigServers, "big-servers", 3, "item 2: fresh server processes per runtime, one after the other")
	bigBytes := fs.String("big-bytes", "20000000,200000000", "item 2: output sizes through sandboxd")
	// The upstream python runtime holds a command's whole output several times over (str, JSON
	// body), so in the example template's 512 MiB it is OOM-killed well before 200 MB.
	pyBigBytes := fs.String("py-big-bytes", "20000000,50000000", "item 2: output sizes through the python runtime")
	fs.IntVar(&c.createRuns, "create-runs", 20, "item 3: create_sandbox calls")
	fs.IntVar(&c.httpClients, "http-clients", 16, "item 4: concurrent clients, one per principal and sandbox")
	fs.IntVar(&c.httpClientsMore, "http-clients-more", 64, "item 4: concurrent clients of the second load, over the same principals")
	fs.IntVar(&c.httpCalls, "http-calls", 25, "item 4: calls per client per round")
	fs.IntVar(&c.httpRounds, "http-rounds", 4, "item 4: rounds per side")
	fs.IntVar(&c.startupRuns, "startup-runs", 30, "item 5: process starts per server")
	fs.IntVar(&c.listRuns, "list-runs", 7, "item 6: listings per side and directory")
	listFiles := fs.String("list-files", "1000,100000", "item 6: directory sizes")
	replicas := fs.Int("pool-replicas", 2, "warm sandboxes per pool in the bench namespace")
	fs.IntVar(&c.loadReplicas, "load-replicas", 3, "item 8: replicas compared with one")
	fs.IntVar(&c.loadClients, "load-clients", 200, "item 8: concurrent sessionless clients")
	fs.IntVar(&c.loadCalls, "load-calls", 10, "item 8: execute_command calls per sessionless client")
	fs.IntVar(&c.loadSessions, "load-sessions", 50, "item 8: concurrent 2025-11-25 sessions, each creating a sandbox")
	fs.IntVar(&c.loadSandboxes, "load-sandboxes", 200, "item 8: sandboxes created and deleted over a run")
	fs.IntVar(&c.loadChurners, "load-churners", 8, "item 8: workers creating, using and deleting sandboxes until -load-sandboxes are reached (each sandbox takes a pod: the node's CPU requests bound how many run at once)")
	fs.BoolVar(&c.loadEveryRun, "load-every-run", false, "item 8 in every run of -runs, not only the last (it is a load run with no baseline to compare runs by, and the longest item)")
	fs.IntVar(&c.renewCalls, "renew-calls", 1000, "item 9: execute_command calls per side")
	fs.DurationVar(&c.renewWindow, "renew-window", 20*time.Second, "item 9: the sandbox's shutdown_after_seconds (renewal moves it once less than half is left)")
	fs.DurationVar(&c.renewSpan, "renew-span", 60*time.Second, "item 9: how long the calls of a side are spread over")
	fs.StringVar(&c.profileDir, "profile", "", "write the server's CPU profiles of items 1 and 4 (its MCP side; the server runs with --profiling) into this directory, in "+profileWindow.String()+" windows: go tool pprof -top DIR/item1-sandboxd-*; and a CPU profile and execution trace of item 1's in-process series (inprocess-*.cpu.pb.gz, inprocess-*.trace); the figures then include the profiler's own cost")
	fs.IntVar(&c.runs, "runs", 1, "run the selected items this many times; the report compares the runs and details the last")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.renewCalls < 1 || c.renewWindow < 2*time.Second || c.renewSpan <= 0 {
		return c, fmt.Errorf("-renew-calls must be at least 1, -renew-window at least 2s and -renew-span positive")
	}
	if c.bigServers < 1 || c.bigRuns < 1 || c.runs < 1 || c.httpClients < 1 || c.httpClientsMore < 1 {
		return c, fmt.Errorf("-big-servers, -big-runs, -runs, -http-clients and -http-clients-more must be at least 1")
	}
	c.poolReplicas = *replicas
	if c.leanRuns <= 0 {
		c.leanRuns = c.smallRuns
	}
	c.items = map[string]bool{}
	for _, it := range strings.Split(*items, ",") {
		c.items[strings.TrimSpace(it)] = true
	}
	var err error
	if c.bigBytes, err = int64List(*bigBytes); err != nil {
		return c, fmt.Errorf("-big-bytes: %w", err)
	}
	if c.pyBigBytes, err = int64List(*pyBigBytes); err != nil {
		return c, fmt.Errorf("-py-big-bytes: %w", err)
	}
	sizes, err := int64List(*listFiles)
	if err != nil {
		return c, fmt.Errorf("-list-files: %w", err)
	}
	for _, n := range sizes {
		c.listFiles = append(c.listFiles, int(n))
	}
	if c.command == "" {
		c.command = strings.Join(append([]string{"sandbox-bench"}, args...), " ")
	}
	if c.kms != "" {
		if c.kms, err = filepath.Abs(c.kms); err != nil {
			return c, err
		}
	}
	for _, p := range []*string{&c.server, &c.minimal, &c.lean} {
		if *p, err = filepath.Abs(*p); err != nil {
			return c, err
		}
	}
	return c, nil
}

func int64List(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		var n int64
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a list of positive integers", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	r := &report{command: cfg.command, started: time.Now(), machine: describeMachine(ctx)}
	if cfg.runs > 1 && cfg.items["8"] && !cfg.loadEveryRun {
		r.lastRunOnly = "item 8, the load run,"
	}
	link, err := linking(cfg.server)
	if err != nil {
		return fmt.Errorf("the server binary: %w", err)
	}
	r.binary = fmt.Sprintf("`%s`, %s", filepath.Base(cfg.server), link)
	logf("starting the local stack")
	stack, err := localstack.Start(ctx)
	if err != nil {
		return err
	}
	ns, err := newNamespace(ctx, stack, int32(cfg.poolReplicas))
	if ns != nil {
		defer func() {
			logf("deleting namespace %s", ns.name)
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
			defer cancel()
			if err := ns.delete(dctx); err != nil {
				logf("cleanup: %v", err)
			}
		}()
	}
	if err != nil {
		return err
	}
	logf("namespace %s ready", ns.name)
	r.server = treeVersion(ctx, stack.RepoRoot)
	b := &bench{cfg: cfg, stack: stack, ns: ns}
	defer b.close()

	items := []struct {
		id  string
		run func(context.Context) (*section, error)
	}{
		{"1", b.smallCommands}, {"2", b.largeOutput}, {"3", b.createLatency},
		{"4", b.httpLoad}, {"5", b.startup}, {"6", b.listLarge}, {"7", b.workbenchMemory}, {"8", b.replicasLoad},
		{"9", b.renewalCost}, {"10", b.toolListSize}, {"11", b.largeTransfer},
	}
	// An interrupt (SIGINT, SIGTERM) ends the item running and writes the report of what has
	// finished, so that an hour of a long run is not lost to stopping it.
	interrupted := false
	for run := 1; run <= cfg.runs && !interrupted; run++ {
		var sections []*section
		for _, it := range items {
			if !cfg.items[it.id] || (it.id == "8" && run < cfg.runs && !cfg.loadEveryRun) {
				continue
			}
			logf("run %d of %d, item %s", run, cfg.runs, it.id)
			s, err := it.run(ctx)
			if ctx.Err() != nil {
				logf("interrupted in run %d, item %s: writing the report of what finished", run, it.id)
				r.failures = append(r.failures, fmt.Sprintf("run %d, item %s: interrupted; the report stops there", run, it.id))
				interrupted = true
				break
			}
			if err != nil {
				logf("item %s failed: %v", it.id, err)
				r.failures = append(r.failures, fmt.Sprintf("run %d, item %s: %v", run, it.id, err))
			}
			if s != nil {
				sections = append(sections, s)
			}
		}
		if len(sections) > 0 || !interrupted {
			r.runs = append(r.runs, sections)
		}
	}
	if len(r.runs) == 0 {
		return ctx.Err()
	}
	r.sections = r.runs[len(r.runs)-1]
	r.finished, r.machine.loadEnd = time.Now(), loadAvg()
	if a, err := os.ReadFile(cfg.analysis); err == nil {
		r.analysis = string(a)
	}
	f, err := os.Create(cfg.out)
	if err != nil {
		return err
	}
	if err := r.write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	logf("wrote %s", cfg.out)
	if len(r.failures) > 0 {
		return fmt.Errorf("%d item(s) failed: %s", len(r.failures), strings.Join(r.failures, "; "))
	}
	return nil
}

// treeVersion names the source tree the server was built from.
func treeVersion(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s sandbox-bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}
