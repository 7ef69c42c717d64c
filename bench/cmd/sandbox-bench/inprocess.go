package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	sandboxclient "sigs.k8s.io/agent-sandbox/clients/k8s/clientset/versioned"
	extclient "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/clientset/versioned"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	settings "github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/config"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/tools"
)

// The in-process breakdown wires the server's tool layer as main.go does (same settings
// loader, Kubernetes client and connection), without the stdio transport, and times its two
// collaborators from the outside: where a tool call's time goes, without guessing.

type timedClaims struct {
	tools.Claims
	get series
}

func (t *timedClaims) Get(ctx context.Context, ns, name, owner string) (kube.Claim, error) {
	start := time.Now()
	c, err := t.Claims.Get(ctx, ns, name, owner)
	t.get.addDuration(time.Since(start))
	return c, err
}

// timedConn keeps when each Exec began and ended, so that a call's time splits into before
// the runtime request, the request, and after it, within the same call.
type timedConn struct {
	conn.Conn
	began, ended []time.Time
}

func (t *timedConn) Exec(ctx context.Context, tg conn.Target, r conn.ExecRequest) (conn.ExecResult, error) {
	t.began = append(t.began, time.Now())
	res, err := t.Conn.Exec(ctx, tg, r)
	t.ended = append(t.ended, time.Now())
	return res, err
}

// breakdown is one in-process series: the whole tools/call message, and its parts, each
// measured within the same calls: before the runtime request (message decoding, input
// check, argument binding, claim lookup), the request (conn.Exec), after it (output budget,
// result, its serialisation, logging, the audit Event); get is the lookup alone.
type breakdown struct{ total, get, exec, before, after series }

func (b *bench) inProcess(ctx context.Context, kind, pool string) (breakdown, error) {
	env, err := b.serverEnv(kind)
	if err != nil {
		return breakdown{}, err
	}
	cfg, err := settings.Load(settings.Source{Environ: env})
	if err != nil {
		return breakdown{}, err
	}
	claims, err := kube.New(rest.CopyConfig(b.stack.RestConfig), cfg.SessionLabelKey)
	if err != nil {
		return breakdown{}, err
	}
	defer claims.Close()
	c, err := conn.New(cfg.Connection, claims)
	if err != nil {
		return breakdown{}, err
	}
	defer c.Close()
	const owner = "sandbox-bench-in-process"
	ttl := time.Hour
	claim, err := claims.Create(ctx, kube.CreateRequest{Namespace: b.ns.name, WarmPool: pool, Owner: owner,
		ShutdownAfter: &ttl, ReadyTimeout: 3 * time.Minute})
	if err != nil {
		return breakdown{}, err
	}
	defer func() { _ = claims.Delete(context.WithoutCancel(ctx), b.ns.name, claim.Name, owner) }()
	tc, tn := &timedClaims{Claims: claims}, &timedConn{Conn: c}
	s := tools.NewServer(tools.Deps{Claims: tc, Conn: tn, DefaultNamespace: b.ns.name,
		Owner: func(context.Context) (string, error) { return owner, nil },
		// The real server logs every call at info level; keep that cost, drop the output.
		Log: zerolog.New(io.Discard).Level(zerolog.InfoLevel)}, "bench")
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "execute_command", "arguments": map[string]any{"sandbox_claim_name": claim.Name, "namespace": b.ns.name, "command": smallCommand}}})
	if err != nil {
		return breakdown{}, err
	}
	var out breakdown
	stopProfile, err := b.profileInProcess(kind)
	if err != nil {
		return breakdown{}, err
	}
	defer stopProfile()
	for i := range b.cfg.warm + b.pacedRuns() {
		start := time.Now()
		res := s.HandleMessage(ctx, msg)
		end := time.Now()
		raw, _ := json.Marshal(res)
		var reply struct {
			Result struct {
				Structured *execResult `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &reply); err != nil || reply.Result.Structured == nil || reply.Result.Structured.Stdout != "hi\n" {
			return breakdown{}, fmt.Errorf("in-process execute_command: %w: %.300s", errMismatch, raw)
		}
		if len(tn.began) != i+1 || len(tn.ended) != i+1 {
			return breakdown{}, fmt.Errorf("in-process execute_command %d: %d runtime requests", i, len(tn.began))
		}
		if i >= b.cfg.warm {
			out.total.addDuration(end.Sub(start))
			out.before.addDuration(tn.began[i].Sub(start))
			out.exec.addDuration(tn.ended[i].Sub(tn.began[i]))
			out.after.addDuration(end.Sub(tn.ended[i]))
		}
		time.Sleep(pacedInterval - time.Since(start))
	}
	out.get = tc.get[b.cfg.warm:]
	return out, nil
}

// measureLookups times the two API reads the server makes before every claim-targeted call
// (GET the claim, GET its Sandbox), with a client that is not rate limited, so the figure is
// the API server's own cost; paced like the paced series, since idle gaps make calls slower.
func (b *bench) measureLookups(ctx context.Context) (series, error) {
	rt, err := b.sandboxd(ctx)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(b.stack.RestConfig)
	cfg.QPS, cfg.Burst = -1, 0
	ext, err := extclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	sbx, err := sandboxclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var out series
	for i := range b.cfg.warm + b.pacedRuns() {
		start := time.Now()
		c, err := ext.ExtensionsV1beta1().SandboxClaims(b.ns.name).Get(ctx, rt.sandbox.claim, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if _, err := sbx.AgentsV1beta1().Sandboxes(b.ns.name).Get(ctx, c.Status.SandboxStatus.Name, metav1.GetOptions{}); err != nil {
			return nil, err
		}
		if i >= b.cfg.warm {
			out.addDuration(time.Since(start))
		}
		time.Sleep(pacedInterval - time.Since(start))
	}
	return out, nil
}
