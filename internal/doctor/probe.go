package doctor

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// Claims is what the probe needs of kube.Client.
type Claims interface {
	Create(ctx context.Context, req kube.CreateRequest) (kube.Claim, error)
	Delete(ctx context.Context, namespace, name, owner string) error
}

// Execer is what the probe needs of the server's connection (conn.Conn).
type Execer interface {
	Exec(ctx context.Context, t conn.Target, req conn.ExecRequest) (conn.ExecResult, error)
}

// Prober claims a sandbox, runs `true` in it through the server's own connection, and
// deletes the claim, whatever happened in between.
type Prober struct {
	Claims Claims
	Conn   Execer
	Pool   string        // "" : the pinned pool, else the namespace's first with a ready sandbox
	Wait   time.Duration // how long the claim may take to be ready
}

const (
	// probeLifetime is the claim's shutdownTime: should doctor be killed before it deletes
	// the claim, the controller deletes it then.
	probeLifetime = 5 * time.Minute
	execTimeout   = 30 * time.Second
	deleteTimeout = 30 * time.Second
)

func runProbe(ctx context.Context, env Env, crds bool) Result {
	r := Result{Check: CheckProbe}
	if !crds {
		r.Status, r.Message, r.Fix = Fail, "not run: the agent-sandbox CRDs are missing", installAdvice()
		return r
	}
	p := env.Probe
	ns := env.Namespace
	if allow := env.Config.AllowedNamespaces; len(allow) > 0 && !slices.Contains(allow, ns) {
		ns = allow[0]
	}
	pool, err := p.pool(ctx, env, ns)
	if err != nil {
		r.Status, r.Message, r.Fix = Fail, err.Error(), "create a warm pool (deploy/examples/sandbox-pools.yaml) or name one with --probe-pool"
		return r
	}
	owner := "doctor-" + randomHex()
	after := probeLifetime
	start := time.Now()
	claim, err := p.Claims.Create(ctx, kube.CreateRequest{Namespace: ns, WarmPool: pool, Owner: owner, ShutdownAfter: &after, ReadyTimeout: p.Wait})
	if err != nil {
		// Create deletes its claim on every failure.
		r.Status, r.Message = Fail, fmt.Sprintf("claiming a sandbox from pool %s/%s: %v", ns, pool, err)
		r.Fix = "see the controller check and the pools check; kubectl -n " + ns + " describe sandboxwarmpool " + pool
		return r
	}
	bound := time.Since(start).Round(100 * time.Millisecond)
	var stderr bytes.Buffer
	t := conn.Target{Namespace: claim.Namespace, SandboxName: claim.SandboxName, PodIPs: claim.PodIPs, ServiceFQDN: claim.ServiceFQDN}
	res, execErr := p.Conn.Exec(ctx, t, conn.ExecRequest{Argv: []string{"true"}, Timeout: execTimeout, Stdout: io.Discard, Stderr: &stderr})
	// Deleted on a context of its own: an interrupted doctor still removes its claim.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	delErr := p.Claims.Delete(dctx, ns, claim.Name, owner)
	cancel()
	where := fmt.Sprintf("claim %s/%s from pool %s (bound to sandbox %s in %s)", ns, claim.Name, pool, claim.SandboxName, bound)
	switch {
	case execErr != nil:
		r.Status, r.Message = Fail, fmt.Sprintf("%s: running `true` through the %s connection failed: %v", where, env.Config.Connection.Type, execErr)
		r.Fix = "check the K8S_SANDBOX_CONNECTION__* settings: the runtime the pool's image serves, its port, and that this host reaches the sandbox's address"
	case res.ExitCode != 0:
		r.Status, r.Message = Fail, fmt.Sprintf("%s: `true` exited %d through the %s connection: %s", where, res.ExitCode, env.Config.Connection.Type, stderr.String())
		r.Fix = "check that the pool's image has a shell and the runtime the connection type speaks"
	default:
		r.Status, r.Message = OK, fmt.Sprintf("%s: `true` ran through the %s connection", where, env.Config.Connection.Type)
	}
	if delErr != nil {
		r.Status = Fail
		r.Message += fmt.Sprintf("; deleting the claim failed: %v (the controller deletes it at its shutdown time, in %s)", delErr, probeLifetime)
		r.Fix = "kubectl -n " + ns + " delete sandboxclaim " + claim.Name
	} else {
		r.Message += "; claim deleted"
	}
	return r
}

// pool is the pool to probe: the flag's, the pinned one, or the first with a ready sandbox.
func (p *Prober) pool(ctx context.Context, env Env, ns string) (string, error) {
	switch {
	case p.Pool != "":
		return p.Pool, nil
	case env.Config.PinWarmpool != "":
		return env.Config.PinWarmpool, nil
	}
	lctx, cancel := withTimeout(ctx)
	defer cancel()
	pools, err := env.Extensions.ExtensionsV1beta1().SandboxWarmPools(ns).List(lctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing warm pools in %s to pick one: %s", ns, reason(err))
	}
	first := ""
	for _, pl := range pools.Items {
		if pl.Labels[kube.ManagedByLabel] == derivedPoolValue {
			continue
		}
		if pl.Status.ReadyReplicas > 0 {
			return pl.Name, nil
		}
		if first == "" {
			first = pl.Name
		}
	}
	if first == "" {
		return "", fmt.Errorf("no warm pool in namespace %s to probe", ns)
	}
	return first, nil
}

func randomHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b)
}
