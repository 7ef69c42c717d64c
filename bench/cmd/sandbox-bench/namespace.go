package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// benchNamespace is the bench's own namespace with the stack's templates and warm pools,
// so tests running on the same stack neither see nor disturb it.
type benchNamespace struct {
	name     string
	replicas int32
	stack    *localstack.Stack
	ns       *localstack.Namespace
}

// newNamespace creates the namespace and its pools (replicas warm sandboxes each) and waits
// until they are ready.
func newNamespace(ctx context.Context, s *localstack.Stack, replicas int32) (*benchNamespace, error) {
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	ns, err := s.NewNamespace(wctx, "bench-", replicas)
	if ns == nil {
		return nil, err
	}
	return &benchNamespace{name: ns.Name, replicas: replicas, stack: s, ns: ns}, err
}

// waitPool waits until pool is back to its full count of ready warm sandboxes.
func (n *benchNamespace) waitPool(ctx context.Context, pool string) error {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return n.stack.WaitPoolReady(wctx, n.name, pool, n.replicas)
}

// delete removes the namespace and waits until its pods (host processes) are gone.
func (n *benchNamespace) delete(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	return n.ns.Delete(ctx)
}

// podIP is the address of a Sandbox's pod, which the direct baselines talk to.
func (n *benchNamespace) podIP(ctx context.Context, sandbox string) (string, error) {
	sb, err := n.stack.Sandboxes.AgentsV1beta1().Sandboxes(n.name).Get(ctx, sandbox, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get sandbox %s: %w", sandbox, err)
	}
	if len(sb.Status.PodIPs) == 0 {
		return "", fmt.Errorf("sandbox %s has no pod IP", sandbox)
	}
	return sb.Status.PodIPs[0], nil
}
