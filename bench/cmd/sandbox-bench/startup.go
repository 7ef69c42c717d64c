package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/bench/load"
)

// bothLinked says how the two binaries are linked, so that a start-up ratio between a static
// and a dynamic binary is not taken for like with like (static starts about 8% faster here).
func bothLinked(minimal, server string) string {
	lm, errM := linking(minimal)
	ls, errS := linking(server)
	switch {
	case errM != nil || errS != nil:
		return "linking unknown"
	case strings.HasPrefix(lm, "static") && strings.HasPrefix(ls, "static"):
		return "both statically linked"
	}
	return "minimal-mcp " + lm + "; the server " + ls
}

func (b *bench) startup(ctx context.Context) (*section, error) {
	s := &section{title: "5. Start-up: process start to the first tools/list answer over stdio",
		what: fmt.Sprintf("%d starts per server after %d warm-up starts, interleaved. The clock starts just before "+
			"fork/exec and stops when the `tools/list` answer has been read: the client sends `initialize`, waits for "+
			"its answer, then sends `notifications/initialized` and `tools/list` (protocol %s); then it closes stdin and times the exit apart. Baseline: `bench/cmd/minimal-mcp`, "+
			"an mcp-go stdio server with one tool, built the same way as the server (%s). The server runs with the "+
			"sandboxd-in-cluster settings and the stack's kubeconfig; it checks the Kubernetes API once at start (one "+
			"SandboxClaim list, so that a broken setup is reported on stderr) in the background: serving does not wait for it.",
			b.cfg.startupRuns, b.cfg.warm, protocolVersion, bothLinked(b.cfg.minimal, b.cfg.server))}
	env, err := b.serverEnv("SANDBOXD_POD_IP")
	if err != nil {
		return nil, err
	}
	// The interleaving's own durations include the exit; the milestones come from the starts.
	var toInit, toList, exit [2]series
	starter := func(bin string, i int) func(context.Context) error {
		return func(ctx context.Context) error {
			t, err := firstToolsList(ctx, bin, env)
			toInit[i].addDuration(t.toInit)
			toList[i].addDuration(t.toList)
			exit[i].addDuration(t.exit)
			return err
		}
	}
	if _, _, err := interleave(ctx, b.cfg.warm, b.cfg.startupRuns, starter(b.cfg.minimal, 0), starter(b.cfg.server, 1)); err != nil {
		return nil, err
	}
	for i := range 2 {
		toInit[i], toList[i], exit[i] = toInit[i][b.cfg.warm:], toList[i][b.cfg.warm:], exit[i][b.cfg.warm:]
	}
	bs, ss := toList[0], toList[1]
	c := comparison{name: "start → first tools/list answer", unit: "ms", base: bs, subj: ss}
	s.comparisons("", c, comparison{name: "of which start → initialize answer", unit: "ms", base: toInit[0], subj: toInit[1]},
		comparison{name: "then: stdin closed → exited (not part of start-up)", unit: "ms", base: exit[0], subj: exit[1]})
	img := table{caption: "What each binary brings (file size, and the RSS it has once idle: file-backed pages are the " +
		"mapped binary image, anonymous ones heap and stacks):",
		header: []string{"binary", "size", "packages", "RSS idle", "of which file-backed", "of which anonymous", "init time (GODEBUG=inittrace=1)"}}
	var inits [2]initTrace
	for i, bin := range []string{b.cfg.minimal, b.cfg.server} {
		row, tr, err := imageRow(ctx, bin, env)
		if err != nil {
			return s, err
		}
		img.rows, inits[i] = append(img.rows, row), tr
	}
	s.tables = append(s.tables, img)
	own, ownSum := inits[1].topWithout(inits[0], 8)
	top := table{caption: fmt.Sprintf("Slowest package initialisers the server has and the minimal server has not "+
		"(one run with GODEBUG=inittrace=1; all such packages together: %s):", fmtNum(ownSum, "ms")),
		header: []string{"package", "clock", "allocated"}}
	for _, p := range own {
		top.rows = append(top.rows, []string{"`" + p.pkg + "`", fmtNum(p.ms, "ms"), fmtNum(float64(p.bytes)/1024, "KiB")})
	}
	s.tables = append(s.tables, top)
	t := target{goal: "start-up within 2× of the minimal mcp-go server",
		measured: fmt.Sprintf("%s× (%s vs %s)", fmtRatio(c.ratio(0.5)), fmtNum(ss.median(), "ms"), fmtNum(bs.median(), "ms")),
		met:      c.ratio(0.5) <= 2,
		figures:  []figure{{name: "ratio median", value: c.ratio(0.5)}}}
	if !t.met {
		slowest := "none"
		if len(own) > 0 {
			slowest = "`" + own[0].pkg + "`"
		}
		t.why = fmt.Sprintf("Most of the difference is before the initialize answer (%s against %s). Package "+
			"initialisation takes %s in the server against %s in the minimal server (%d packages with initialisers "+
			"against %d; those only the server has cost %s, the slowest %s). The rest is main's own set-up before it "+
			"serves (flags, settings, kubeconfig, Kubernetes clients, tools) "+
			"and paging in a binary %s the size "+
			"(analysis §3). tools/list itself then takes %s against %s.",
			fmtNum(toInit[1].median(), "ms"), fmtNum(toInit[0].median(), "ms"), fmtNum(inits[1].total, "ms"), fmtNum(inits[0].total, "ms"),
			len(inits[1].pkgs), len(inits[0].pkgs), fmtNum(ownSum, "ms"), slowest, sizeRatio(img.rows),
			fmtNum(ss.median()-toInit[1].median(), "ms"), fmtNum(bs.median()-toInit[0].median(), "ms"))
	}
	s.targets = append(s.targets, t)
	return s, nil
}

// sizeRatio is "N×" from the size column of the image table (server row over baseline row).
func sizeRatio(rows [][]string) string {
	if len(rows) < 2 {
		return "several times"
	}
	var a, b float64
	fmt.Sscan(strings.Fields(rows[0][1])[0], &a)
	fmt.Sscan(strings.Fields(rows[1][1])[0], &b)
	if a == 0 {
		return "several times"
	}
	return fmt.Sprintf("%.0f×", b/a)
}

// startTimes are one start's milestones: from fork/exec to the initialize answer and to the
// tools/list answer, and from closing stdin after it to the process's exit.
type startTimes struct{ toInit, toList, exit time.Duration }

// firstToolsList starts bin, reads its first tools/list answer, then closes its stdin and
// waits for it to exit. The start-up figures stop at the tools/list answer: the exit is timed
// apart (the server's waits for its API check at start to end, so that its warning is logged).
func firstToolsList(ctx context.Context, bin string, env []string) (startTimes, error) {
	var t startTimes
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return t, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return t, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return t, err
	}
	exited := false
	defer func() {
		if !exited {
			stdin.Close() // EOF ends a stdio server
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	r := bufio.NewReader(stdout)
	send := func(msg string) error { _, err := io.WriteString(stdin, msg+"\n"); return err }
	if err := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocolVersion +
		`","capabilities":{},"clientInfo":{"name":"sandbox-bench","version":"0"}}}`); err != nil {
		return t, err
	}
	if err := awaitID(r, 1); err != nil {
		return t, fmt.Errorf("%s initialize: %w", bin, err)
	}
	t.toInit = time.Since(start)
	if err := send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return t, err
	}
	if err := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); err != nil {
		return t, err
	}
	if err := awaitID(r, 2); err != nil {
		return t, fmt.Errorf("%s tools/list: %w", bin, err)
	}
	t.toList = time.Since(start)
	closing := time.Now()
	stdin.Close()
	exited = true
	if err := cmd.Wait(); err != nil {
		return t, fmt.Errorf("%s after stdin closed: %w", bin, err)
	}
	t.exit = time.Since(closing)
	return t, nil
}

// awaitID reads JSON-RPC lines until the answer to id, which must be a result.
func awaitID(r *bufio.Reader, id int) error {
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return err
		}
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &msg) != nil || msg.ID == nil || *msg.ID != id {
			continue
		}
		if msg.Result == nil {
			return fmt.Errorf("error answer: %s", msg.Error)
		}
		return nil
	}
}

// parseInitTrace reads the "init <pkg> @... ms, <clock> ms clock, <bytes> bytes, ..." lines
// GODEBUG=inittrace=1 writes to stderr, ignoring everything else.
func parseInitTrace(stderr string) initTrace {
	var tr initTrace
	for _, line := range strings.Split(stderr, "\n") {
		m := initLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ms, _ := strconv.ParseFloat(m[2], 64)
		by, _ := strconv.ParseInt(m[3], 10, 64)
		tr.pkgs = append(tr.pkgs, pkgInit{pkg: m[1], ms: ms, bytes: by})
		tr.total += ms
	}
	return tr
}

// initTrace is the GODEBUG=inittrace=1 output of one start.
type initTrace struct {
	total float64 // sum of the initialisers' clock times
	pkgs  []pkgInit
}

type pkgInit struct {
	pkg   string
	ms    float64
	bytes int64
}

// topWithout returns the n slowest initialisers of t that other does not have.
func (t initTrace) topWithout(other initTrace, n int) (top []pkgInit, sum float64) {
	seen := map[string]bool{}
	for _, p := range other.pkgs {
		seen[p.pkg] = true
	}
	var own []pkgInit
	for _, p := range t.pkgs {
		if !seen[p.pkg] {
			own, sum = append(own, p), sum+p.ms
		}
	}
	slices.SortFunc(own, func(a, b pkgInit) int { return cmp.Compare(b.ms, a.ms) })
	return own[:min(n, len(own))], sum
}

// init internal/bytealg @0.008 ms, 0 ms clock, 0 bytes, 0 allocs
var initLine = regexp.MustCompile(`^init (\S+) @[\d.]+ ms, ([\d.]+) ms clock, (\d+) bytes, \d+ allocs`)

// imageRow starts bin once with GODEBUG=inittrace=1, lets it answer tools/list, and reads its
// size, RSS split and initialisation times.
func imageRow(ctx context.Context, bin string, env []string) ([]string, initTrace, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(slices.Clone(env), "GODEBUG=inittrace=1")
	var trace strings.Builder
	cmd.Stderr = &trace
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, initTrace{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, initTrace{}, err
	}
	if err := cmd.Start(); err != nil {
		return nil, initTrace{}, err
	}
	r := bufio.NewReader(stdout)
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+protocolVersion+
		`","capabilities":{},"clientInfo":{"name":"sandbox-bench","version":"0"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	if err == nil {
		err = awaitID(r, 2)
	}
	var rss, file, anon float64
	if err == nil {
		rss, _ = load.ProcStatus(cmd.Process.Pid, "VmRSS")
		file, _ = load.ProcStatus(cmd.Process.Pid, "RssFile")
		anon, _ = load.ProcStatus(cmd.Process.Pid, "RssAnon")
	}
	stdin.Close()
	_ = cmd.Wait()
	if err != nil {
		return nil, initTrace{}, fmt.Errorf("%s: %w", bin, err)
	}
	tr := parseInitTrace(trace.String())
	size := "?"
	if out, err := exec.CommandContext(ctx, "stat", "-c", "%s", bin).Output(); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil {
			size = fmtNum(mib(float64(n)), "MiB")
		}
	}
	name := bin[strings.LastIndex(bin, "/")+1:]
	return []string{name, size, strconv.Itoa(len(tr.pkgs)), fmtNum(mib(rss), "MiB"), fmtNum(mib(file), "MiB"),
		fmtNum(mib(anon), "MiB"), fmtNum(tr.total, "ms")}, tr, nil
}
