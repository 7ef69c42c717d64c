package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
)

// Config is one load run.
type Config struct {
	Front     string   // the round-robin address sessionless clients use
	Replicas  []string // each replica's own base URL: a session sticks to one, as affinity makes it
	Tokens    []string // bearer tokens, one principal each; client i is principal i mod len
	Namespace string
	Pool      string
	Clients   int // concurrent sessionless (2026-07-28) clients
	Calls     int // execute_command calls per sessionless client (every 5th is followed by a status)
	Sessions  int // concurrent 2025-11-25 sessions, each creating, using and deleting a sandbox
	// Sandboxes is how many are created and deleted over the run in all: one per principal,
	// one per session, and the rest by churn workers (create, one command, delete).
	Sandboxes int
	Churners  int // concurrent churn workers (default 4)
}

// Result is what a run measured.
type Result struct {
	Latency  map[string][]time.Duration // per tool
	Errors   int
	First    []string // the first few errors
	Created  int
	Deleted  int
	Wall     time.Duration
	Sessions int
}

type recorder struct {
	mu      sync.Mutex
	r       Result
	created atomic.Int64
	deleted atomic.Int64
}

func (rec *recorder) call(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any, out any) error {
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	took := time.Since(start)
	if err == nil && res.IsError {
		var text []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text = append(text, t.Text)
			}
		}
		err = fmt.Errorf("isError: %s", strings.Join(text, " "))
	}
	if err == nil && out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		err = json.Unmarshal(b, out)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if err != nil {
		rec.r.Errors++
		if len(rec.r.First) < 5 {
			rec.r.First = append(rec.r.First, fmt.Sprintf("%s: %v", tool, err))
		}
		return err
	}
	rec.r.Latency[tool] = append(rec.r.Latency[tool], took)
	switch tool {
	case "create_sandbox":
		rec.created.Add(1)
	case "delete_sandbox":
		rec.deleted.Add(1)
	}
	return nil
}

// Bearer adds a principal's token to every request.
type Bearer struct {
	Token string
	Next  http.RoundTripper
}

func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	return b.Next.RoundTrip(r)
}

// client is one MCP client with its own connections, which Close closes too (so that the
// servers' goroutines for them end with the load).
type client struct {
	*mcp.ClientSession
	tr *http.Transport
}

func (c client) Close() error {
	err := c.ClientSession.Close()
	c.tr.CloseIdleConnections()
	return err
}

// connect opens a client of base as the principal of token; version "" is the SDK's default
// (sessionless) era.
func connect(ctx context.Context, base, token, version string) (client, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	hc := &http.Client{Transport: Bearer{Token: token, Next: tr}}
	c := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		tr.CloseIdleConnections()
	}
	return client{ClientSession: cs, tr: tr}, err
}

type created struct {
	Claim string `json:"sandbox_claim_name"`
}

// Run runs the load and returns what it measured; an error is a setup failure (a call that
// fails during the load counts in Result.Errors instead).
func Run(ctx context.Context, cfg Config) (Result, error) {
	rec := &recorder{r: Result{Latency: map[string][]time.Duration{}, Sessions: cfg.Sessions}}
	if cfg.Churners <= 0 {
		cfg.Churners = 4
	}
	start := time.Now()
	// One sandbox per principal, which its sessionless clients share.
	shared := make([]string, len(cfg.Tokens))
	admins := make([]*client, len(cfg.Tokens))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, tok := range cfg.Tokens {
		g.Go(func() error {
			cs, err := connect(gctx, cfg.Front, tok, "")
			if err != nil {
				return err
			}
			admins[i] = &cs
			var c created
			if err := rec.call(gctx, cs.ClientSession, "create_sandbox", createArgs(cfg), &c); err != nil {
				return fmt.Errorf("principal %d's sandbox: %w", i, err)
			}
			shared[i] = c.Claim
			return nil
		})
	}
	finish := func() Result {
		for i, cs := range admins {
			if cs != nil && shared[i] != "" {
				_ = rec.call(context.WithoutCancel(ctx), cs.ClientSession, "delete_sandbox", claim(cfg, shared[i]), nil)
			}
			if cs != nil {
				_ = cs.Close()
			}
		}
		rec.r.Created, rec.r.Deleted = int(rec.created.Load()), int(rec.deleted.Load())
		rec.r.Wall = time.Since(start)
		return rec.r
	}
	if err := g.Wait(); err != nil {
		return finish(), err
	}

	churn := atomic.Int64{}
	churn.Store(int64(max(0, cfg.Sandboxes-len(cfg.Tokens)-cfg.Sessions)))
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		wg.Go(func() {
			p := i % len(cfg.Tokens)
			cs, err := connect(ctx, cfg.Front, cfg.Tokens[p], "")
			if err != nil {
				rec.fail("connect", err)
				return
			}
			defer cs.Close()
			for k := range cfg.Calls {
				_ = rec.call(ctx, cs.ClientSession, "execute_command", claim(cfg, shared[p], "command", "echo hi"), nil)
				if k%5 == 4 {
					_ = rec.call(ctx, cs.ClientSession, "get_sandbox_status", claim(cfg, shared[p]), nil)
				}
			}
		})
	}
	for i := range cfg.Sessions {
		wg.Go(func() {
			cs, err := connect(ctx, cfg.Replicas[i%len(cfg.Replicas)], cfg.Tokens[i%len(cfg.Tokens)], "2025-11-25")
			if err != nil {
				rec.fail("connect a session", err)
				return
			}
			defer cs.Close()
			var c created
			if rec.call(ctx, cs.ClientSession, "create_sandbox", createArgs(cfg), &c) != nil {
				return
			}
			for range 5 {
				_ = rec.call(ctx, cs.ClientSession, "execute_command", claim(cfg, c.Claim, "command", "echo hi"), nil)
			}
			_ = rec.call(ctx, cs.ClientSession, "delete_sandbox", claim(cfg, c.Claim), nil)
		})
	}
	for i := range cfg.Churners {
		wg.Go(func() {
			cs, err := connect(ctx, cfg.Front, cfg.Tokens[i%len(cfg.Tokens)], "")
			if err != nil {
				rec.fail("connect", err)
				return
			}
			defer cs.Close()
			for churn.Add(-1) >= 0 {
				var c created
				if rec.call(ctx, cs.ClientSession, "create_sandbox", createArgs(cfg), &c) != nil {
					continue
				}
				_ = rec.call(ctx, cs.ClientSession, "execute_command", claim(cfg, c.Claim, "command", "echo hi"), nil)
				_ = rec.call(ctx, cs.ClientSession, "delete_sandbox", claim(cfg, c.Claim), nil)
			}
		})
	}
	wg.Wait()
	return finish(), nil
}

func (rec *recorder) fail(what string, err error) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.r.Errors++
	if len(rec.r.First) < 5 {
		rec.r.First = append(rec.r.First, fmt.Sprintf("%s: %v", what, err))
	}
}

// createArgs asks for the longest wait the tool allows: under the load most creates wait for a
// new pod on a busy node, and that wait is what is measured, not a failure. The shutdown time
// outlasts a long run (the default, 300 s, expired the shared sandboxes before their delete).
func createArgs(cfg Config) map[string]any {
	return map[string]any{"warmpool": cfg.Pool, "namespace": cfg.Namespace, "sandbox_ready_timeout": 600, "shutdown_after_seconds": 3600}
}

func claim(cfg Config, name string, kv ...string) map[string]any {
	m := map[string]any{"sandbox_claim_name": name, "namespace": cfg.Namespace}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// Quantile of a tool's latencies (q in [0,1]); 0 when none.
func (r Result) Quantile(tool string, q float64) time.Duration {
	l := slices.Clone(r.Latency[tool])
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	return l[min(len(l)-1, int(q*float64(len(l))))]
}
