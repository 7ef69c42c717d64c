package localstack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
	"sigs.k8s.io/yaml"
)

// Pool names of the stack's two runtimes, in namespace default and in every test namespace.
const (
	SandboxdPool = "sandboxd-pool" // sandboxd: REST podIP:8080, gRPC podIP:9090
	PythonPool   = "python-pool"   // python runtime podIP:8888 (and sandboxd)
	// ReadyPerPool is how many ready sandboxes a pool a test namespace asks for holds; the
	// others hold none (a claim from them starts a pod).
	ReadyPerPool = 1
)

// Namespace is a test's own namespace holding templates and warm pools like namespace default.
type Namespace struct {
	Name  string
	stack *Stack
}

// Namespace creates a unique namespace with the stack's templates and warm pools, waits until
// the pools named (sandboxd-pool when none is) have ReadyPerPool ready sandboxes, and deletes
// it (waiting for its pods to be gone) when the test ends. Every pool exists; those not named
// are empty: the stack's tests are CPU-bound on two cores, and a pod started for nothing (a
// python runtime's, whose interpreter loads FastAPI, is the dearest) slows every other test.
func (s *Stack) Namespace(t testing.TB, ready ...string) *Namespace {
	t.Helper()
	if len(ready) == 0 {
		ready = []string{SandboxdPool}
	}
	replicas := map[string]int32{}
	for _, pool := range ready {
		if pool != SandboxdPool && pool != PythonPool {
			// A misspelt pool would be left empty: the test's claims then wait for cold pods
			// and pass, slower, where it meant a warm one.
			t.Fatalf("localstack: no pool %q in a test namespace (%s, %s)", pool, SandboxdPool, PythonPool)
		}
		replicas[pool] = ReadyPerPool
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := s.newNamespace(ctx, "ls-e2e-", replicas)
	if n != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := n.Delete(ctx); err != nil {
				t.Errorf("localstack: delete namespace %s: %v", n.Name, err)
			}
		})
	}
	if err != nil {
		t.Fatalf("localstack: %v", err)
	}
	return n
}

// NewNamespace creates a namespace named prefix+random with the stack's templates and warm
// pools of replicas sandboxes each, and waits until they are ready. On an error after the
// namespace exists it is returned too, for the caller to Delete.
func (s *Stack) NewNamespace(ctx context.Context, prefix string, replicas int32) (*Namespace, error) {
	return s.newNamespace(ctx, prefix, map[string]int32{SandboxdPool: replicas, PythonPool: replicas})
}

// newNamespace is NewNamespace with each pool's size (none: 0).
func (s *Stack) newNamespace(ctx context.Context, prefix string, replicas map[string]int32) (*Namespace, error) {
	ns, err := s.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: prefix, Labels: map[string]string{"localstack.k8s-sandbox-mcp/test": "true"}}},
		metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	n := &Namespace{Name: ns.Name, stack: s}
	if err := n.installPools(ctx, replicas); err != nil {
		return n, err
	}
	for _, pool := range []string{SandboxdPool, PythonPool} {
		if err := s.WaitPoolReady(ctx, n.Name, pool, replicas[pool]); err != nil {
			return n, err
		}
	}
	return n, nil
}

// installPools creates the templates and pools of the example manifests shipped for users
// (deploy/examples/sandbox-pools.yaml), as stack.sh does in namespace default.
func (n *Namespace) installPools(ctx context.Context, replicas map[string]int32) error {
	// The pools of the version the stack runs (sandbox-pools-v0.5.yaml on v0.5.6), taken from
	// this checkout: the stack may have been started from another one.
	name := filepath.Base(n.stack.Env["POOLS_MANIFEST"])
	if name == "." || name == "/" {
		name = "sandbox-pools.yaml"
	}
	f, err := os.Open(filepath.Join(n.stack.RepoRoot, "deploy", "examples", name))
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
			if err := yaml.UnmarshalStrict(doc, &o); err != nil {
				return fmt.Errorf("pool manifests: %w", err)
			}
			o.Namespace = n.Name
			_, err = ext.SandboxTemplates(n.Name).Create(ctx, &o, metav1.CreateOptions{})
		case "SandboxWarmPool":
			var o extv1beta1.SandboxWarmPool
			if err := yaml.UnmarshalStrict(doc, &o); err != nil {
				return fmt.Errorf("pool manifests: %w", err)
			}
			r := replicas[o.Name]
			o.Namespace, o.Spec.Replicas = n.Name, &r
			_, err = ext.SandboxWarmPools(n.Name).Create(ctx, &o, metav1.CreateOptions{})
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

// Delete removes the namespace and waits until no pod of it is left (the kubelet has then
// stopped their containers). It keeps trying while the API server is unreachable: a test on the
// same stack may be restarting it.
func (n *Namespace) Delete(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := n.stack.Kube.CoreV1().Namespaces().Delete(ctx, n.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			last = err
			return false, nil
		}
		pods, err := n.stack.Kube.CoreV1().Pods(n.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w (last error: %v)", n.Name, err, last)
	}
	return nil
}

// WaitPoolReady waits until the warm pool has exactly ready ready replicas.
func (s *Stack) WaitPoolReady(ctx context.Context, ns, pool string, ready int32) error {
	var last int32 = -1
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := s.Extensions.ExtensionsV1beta1().SandboxWarmPools(ns).Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p.Status.ReadyReplicas
		return last == ready, nil
	})
	if err != nil {
		return fmt.Errorf("warm pool %s/%s: %d ready, want %d: %w", ns, pool, last, ready, err)
	}
	return nil
}
