package doctor

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
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
	// Gap is the pause between tries of the egress test (0: egressGap; tests shorten it).
	Gap time.Duration
}

const (
	// probeLifetime is the claim's shutdownTime: should doctor be killed before it deletes
	// the claim, the controller deletes it then.
	probeLifetime = 5 * time.Minute
	execTimeout   = 30 * time.Second
	deleteTimeout = 30 * time.Second
)

// egressScript tries, from inside the sandbox, to connect to the API server's Service, which
// the shipped templates' NetworkPolicy denies (egress only to DNS and public addresses). It
// prints the address; exit 0: connected, 1 or 124 (timeout's): blocked, else untestable.
const egressScript = `[ -n "$KUBERNETES_SERVICE_HOST" ] || exit 3
command -v timeout >/dev/null || exit 4
echo "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
exec timeout 3 bash -c 'exec 3<>"/dev/tcp/$KUBERNETES_SERVICE_HOST/$KUBERNETES_SERVICE_PORT"' 2>/dev/null`

// egress is what the probe's sandbox found of NetworkPolicy: whether it reached the API server.
type egress struct {
	tested, reached bool
	addr, pool      string
}

// egressTries and egressGap: an engine applies policy to a new pod within seconds (kube-router
// on its next sync), and a pool's sandbox may have just started: a connection that got through
// is tried again before it counts, for up to about egressTries × (egressGap + 3 s).
const (
	egressTries = 4
	egressGap   = 2 * time.Second
)

// testEgress runs egressScript in the probe's sandbox until it is blocked or egressTries ran.
func (p *Prober) testEgress(ctx context.Context, t conn.Target, pool string) egress {
	gap := p.Gap
	if gap <= 0 {
		gap = egressGap
	}
	var e egress
	for try := 0; try < egressTries; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return e
			case <-time.After(gap):
			}
		}
		var out bytes.Buffer
		res, err := p.Conn.Exec(ctx, t, conn.ExecRequest{Argv: []string{"bash", "-c", egressScript}, Timeout: execTimeout, Stdout: &out, Stderr: io.Discard})
		e = egress{pool: pool, addr: strings.TrimSpace(out.String())}
		if err != nil || e.addr == "" {
			return e
		}
		switch res.ExitCode {
		case 0:
			e.tested, e.reached = true, true
		case 1, 124:
			e.tested = true
			return e
		default:
			return e
		}
	}
	return e
}

func runProbe(ctx context.Context, env Env, crds bool) (Result, egress) {
	r := Result{Check: CheckProbe}
	var eg egress
	if !crds {
		r.Status, r.Message, r.Fix = Fail, "not run: the agent-sandbox CRDs are missing", installAdvice()
		return r, eg
	}
	p := env.Probe
	ns := env.Namespace
	if allow := env.Config.AllowedNamespaces; len(allow) > 0 && !slices.Contains(allow, ns) {
		ns = allow[0]
	}
	pool, err := p.pool(ctx, env, ns)
	if err != nil {
		r.Status, r.Message, r.Fix = Fail, err.Error(), "create a warm pool (deploy/examples/sandbox-pools.yaml) or name one with --probe-pool"
		return r, eg
	}
	owner := "doctor-" + randomHex()
	after := probeLifetime
	start := time.Now()
	claim, err := p.Claims.Create(ctx, kube.CreateRequest{Namespace: ns, WarmPool: pool, Owner: owner, ShutdownAfter: &after, ReadyTimeout: p.Wait})
	if err != nil {
		// Create deletes its claim on every failure.
		r.Status, r.Message = Fail, fmt.Sprintf("claiming a sandbox from pool %s/%s: %v", ns, pool, err)
		r.Fix = "see the controller check and the pools check; kubectl -n " + ns + " describe sandboxwarmpool " + pool
		return r, eg
	}
	bound := time.Since(start).Round(100 * time.Millisecond)
	var stderr bytes.Buffer
	t := conn.Target{Namespace: claim.Namespace, SandboxName: claim.SandboxName, PodIPs: claim.PodIPs, ServiceFQDN: claim.ServiceFQDN}
	res, execErr := p.Conn.Exec(ctx, t, conn.ExecRequest{Argv: []string{"true"}, Timeout: execTimeout, Stdout: io.Discard, Stderr: &stderr})
	if execErr == nil && res.ExitCode == 0 {
		eg = p.testEgress(ctx, t, ns+"/"+pool)
	}
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
	return r, eg
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
