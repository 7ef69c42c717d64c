package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// benchNamespace is the bench's own namespace with the stack's templates and warm pools,
// so tests running on the same stack neither see nor disturb it.
type benchNamespace struct {
	name     string
	replicas int32
	stack    *localstack.Stack
}

// newNamespace creates the namespace and its pools (replicas warm sandboxes each) and waits
// until they are ready. localstack.Stack.Namespace does the same for tests but needs a
// testing.TB and fixes the pool size.
func newNamespace(ctx context.Context, s *localstack.Stack, replicas int32) (*benchNamespace, error) {
	ns, err := s.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "bench-", Labels: map[string]string{"localstack.k8s-sandbox-mcp/test": "true"}}},
		metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	n := &benchNamespace{name: ns.Name, replicas: replicas, stack: s}
	if err := n.installPools(ctx); err != nil {
		return n, err
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for _, pool := range []string{localstack.SandboxdPool, localstack.PythonPool} {
		if err := s.WaitPoolReady(wctx, n.name, pool, replicas); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (n *benchNamespace) installPools(ctx context.Context) error {
	f, err := os.Open(filepath.Join(n.stack.RepoRoot, "hack", "localstack", "manifests", "sandbox-pools.yaml"))
	if err != nil {
		return fmt.Errorf("pool manifests: %w", err)
	}
	defer f.Close()
	ext := n.stack.Extensions.ExtensionsV1beta1()
	dec := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("pool manifests: %w", err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("pool manifests: %w", err)
		}
		switch meta.Kind {
		case "SandboxTemplate":
			var o extv1beta1.SandboxTemplate
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				o.Namespace = n.name
				_, err = ext.SandboxTemplates(n.name).Create(ctx, &o, metav1.CreateOptions{})
			}
		case "SandboxWarmPool":
			var o extv1beta1.SandboxWarmPool
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				r := n.replicas
				o.Namespace, o.Spec.Replicas = n.name, &r
				_, err = ext.SandboxWarmPools(n.name).Create(ctx, &o, metav1.CreateOptions{})
			}
		case "":
			continue
		default:
			return fmt.Errorf("pool manifests: unexpected kind %q", meta.Kind)
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", meta.Kind, err)
		}
	}
}

// waitPool waits until pool is back to its full count of ready warm sandboxes.
func (n *benchNamespace) waitPool(ctx context.Context, pool string) error {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return n.stack.WaitPoolReady(wctx, n.name, pool, n.replicas)
}

// delete removes the namespace and waits until its pods (host processes) are gone. It keeps
// trying while the API server is unreachable (tests on the same stack may restart it).
func (n *benchNamespace) delete(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := n.stack.Kube.CoreV1().Namespaces().Delete(ctx, n.name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			last = err
			return false, nil
		}
		pods, err := n.stack.Kube.CoreV1().Pods(n.name).List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w (last: %v)", n.name, err, last)
	}
	return nil
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
