// Package localstack gives end-to-end tests the project's local agent-sandbox stack
// (hack/localstack/stack.sh): a one-node cluster of real components (control plane, kubelet
// with containerd and runc, kube-proxy, CoreDNS, metrics-server) with the real agent-sandbox
// controller and router. The stack is global per machine: Start brings it up once and every
// test package reuses it; each test gets its own namespace with its own warm pools. Pod
// addresses exist only in the stack's network namespace, so the test process must run there
// (hack/test.sh runs it with `stack.sh exec`).
package localstack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	sandboxclient "sigs.k8s.io/agent-sandbox/clients/k8s/clientset/versioned"
	extclient "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/clientset/versioned"
)

// Stack is a running local stack.
type Stack struct {
	Kubeconfig string
	// Env holds the KEY=VALUE lines of the stack's run/env file: KUBECONFIG, APISERVER_URL,
	// ROUTER_URL, GATEWAY_NAME, GATEWAY_NAMESPACE, GATEWAY_ADDRESS, K8S_SANDBOX_DNS_SERVER,
	// NODE_NAME, NETNS, HOST_NETNS (a handle on the host's network namespace), RUN_DIR, POOLS_MANIFEST, SANDBOXD_POOL, PYTHON_POOL, CONN_<KIND>,
	// AGENT_SANDBOX_VERSION (the one the stack runs) and its SANDBOXD_IMAGE and PYTHON_IMAGE.
	Env        map[string]string
	RestConfig *rest.Config
	Kube       kubernetes.Interface
	Sandboxes  sandboxclient.Interface // agents.x-k8s.io
	Extensions extclient.Interface     // extensions.agents.x-k8s.io
	RepoRoot   string
}

// Start brings the stack up with `hack/localstack/stack.sh up` (which reuses a healthy
// stack and serialises concurrent callers with a file lock) and connects to it. A cold
// build of the binaries takes many minutes; a warm start well under 30 s.
func Start(ctx context.Context) (*Stack, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	s := &Stack{RepoRoot: root}
	if _, err := s.script(ctx, "up"); err != nil {
		return nil, err
	}
	if s.Env, err = readEnv(ctx, filepath.Join(root, "hack", "localstack")); err != nil {
		return nil, err
	}
	if err := inNetNS(s.Env["NETNS"]); err != nil {
		return nil, err
	}
	s.Kubeconfig = s.Env["KUBECONFIG"]
	if s.RestConfig, err = clientcmd.BuildConfigFromFlags("", s.Kubeconfig); err != nil {
		return nil, fmt.Errorf("localstack kubeconfig: %w", err)
	}
	s.RestConfig.QPS, s.RestConfig.Burst = 50, 100
	if s.Kube, err = kubernetes.NewForConfig(s.RestConfig); err != nil {
		return nil, fmt.Errorf("localstack client: %w", err)
	}
	if s.Sandboxes, err = sandboxclient.NewForConfig(s.RestConfig); err != nil {
		return nil, fmt.Errorf("localstack client: %w", err)
	}
	if s.Extensions, err = extclient.NewForConfig(s.RestConfig); err != nil {
		return nil, fmt.Errorf("localstack client: %w", err)
	}
	return s, nil
}

// Connection returns the K8S_SANDBOX_* settings of one connection type: GATEWAY, DIRECT,
// IN_CLUSTER_POD_IP, IN_CLUSTER_DNS, SANDBOXD_POD_IP or SANDBOXD_SERVICE.
func (s *Stack) Connection(kind string) (map[string]string, error) {
	v, ok := s.Env["CONN_"+kind]
	if !ok {
		return nil, fmt.Errorf("localstack: unknown connection kind %q", kind)
	}
	out := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(kv, "=")
		out[k] = val
	}
	return out, nil
}

// StopAPIServer stops kube-apiserver alone. It disturbs every test that uses the stack at
// the same time; `stack.sh up` (hence Start) waits until StartAPIServer instead of rebuilding.
func (s *Stack) StopAPIServer() error {
	_, err := s.script(context.Background(), "apiserver-stop")
	return err
}

// StartAPIServer restarts kube-apiserver after StopAPIServer and waits until it is ready.
func (s *Stack) StartAPIServer() error {
	_, err := s.script(context.Background(), "apiserver-start")
	return err
}

// script runs stack.sh with its output captured: the stack's daemons must not inherit the
// test's stdout/stderr, or `go test` would wait for them to exit.
func (s *Stack) script(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.RepoRoot, "hack", "localstack", "stack.sh"), args...)
	cmd.Dir = s.RepoRoot
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("stack.sh %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.Bytes(), nil
}

// readEnv parses the stack's run/env file, located with `stack.sh`'s own cache logic.
func readEnv(ctx context.Context, dir string) (map[string]string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-c", `. ./versions.sh && echo "$LOCALSTACK_CACHE/run/env"`)
	cmd.Dir = dir
	path, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("locate localstack env: %w", err)
	}
	f, err := os.Open(strings.TrimSpace(string(path)))
	if err != nil {
		return nil, fmt.Errorf("localstack env: %w", err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("localstack env: %w", err)
	}
	if env["KUBECONFIG"] == "" {
		return nil, fmt.Errorf("localstack env %s has no KUBECONFIG", strings.TrimSpace(string(path)))
	}
	return env, nil
}

// repoRoot is the nearest directory at or above the working directory (a test's is its
// package's) that holds hack/localstack/stack.sh. Not this source file's path: hack/test.sh
// builds with -trimpath, which leaves runtime.Caller a module path.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("localstack: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "localstack", "stack.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("localstack: no hack/localstack/stack.sh at or above the working directory")
		}
		dir = parent
	}
}

// inNetNS fails unless this process runs in the network namespace at path: only there do
// pod and Service addresses exist.
func inNetNS(path string) error {
	want, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("localstack: the stack's network namespace: %w", err)
	}
	self, err := os.Stat("/proc/self/ns/net")
	if err != nil {
		return fmt.Errorf("localstack: %w", err)
	}
	if !os.SameFile(want, self) {
		return fmt.Errorf("localstack: this test must run in the stack's network namespace %s, where pod addresses exist: "+
			"run it as `hack/localstack/stack.sh exec go test ...` (hack/test.sh does)", path)
	}
	return nil
}
