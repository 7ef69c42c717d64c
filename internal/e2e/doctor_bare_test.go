//go:build e2e

package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestDoctorBareAPIServer: against a real API server with neither the agent-sandbox CRDs nor
// the metrics API, doctor names both as FAIL lines and exits 1. The server is a throwaway
// etcd and kube-apiserver of the stack's own binaries on free loopback ports (no controllers,
// no node): removing the shared stack's CRDs or APIService would break the tests running on it.
func TestDoctorBareAPIServer(t *testing.T) {
	t.Parallel()
	kubeconfig := bareAPIServer(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "KUBECONFIG=" + kubeconfig,
		"K8S_SANDBOX_CONNECTION__TYPE=sandboxd-in-cluster", "K8S_SANDBOX_CONNECTION__MODE=in-cluster-pod-ip"}
	lines, _, code := runDoctor(t, env, "--probe")
	wantLine(t, lines, "api", "OK", "answers as user admin")
	wantLine(t, lines, "crds", "FAIL", "missing: sandboxes.agents.x-k8s.io, sandboxclaims.extensions.agents.x-k8s.io")
	wantLine(t, lines, "metrics", "FAIL", "metrics.k8s.io/v1beta1 is not served")
	wantLine(t, lines, "probe", "FAIL", "CRDs are missing")
	if !strings.Contains(lines["crds"].Fix, "kubectl apply -f https://github.com/kubernetes-sigs/agent-sandbox/releases/download/v") {
		t.Errorf("crds fix %q does not say how to install agent-sandbox", lines["crds"].Fix)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

// bareAPIServer starts etcd and kube-apiserver from the stack's binaries, each with its own
// directory and loopback ports, waits until the API server is ready, stops both when the test
// ends, and returns an admin kubeconfig (a static token of group system:masters).
func bareAPIServer(t *testing.T) string {
	t.Helper()
	locate := exec.Command("bash", "-c", `. ./versions.sh && echo "$STACK_BIN"`)
	locate.Dir = filepath.Join(stack.RepoRoot, "hack", "localstack")
	out, err := locate.Output()
	if err != nil {
		t.Fatalf("locating the stack's binaries: %v", err)
	}
	bin := strings.TrimSpace(string(out))
	if bin == "" || !strings.HasPrefix(bin, "/") {
		t.Fatalf("no STACK_BIN from hack/localstack/versions.sh: %q", out)
	}
	dir := t.TempDir()
	client, peer, api := freePort(t), freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	start(t, filepath.Join(dir, "etcd.log"), filepath.Join(bin, "etcd"), "--name=bare", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL, "--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL, "--initial-cluster=bare="+peerURL, "--unsafe-no-fsync", "--log-level=warn")

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile, pubFile, tokens := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub"), filepath.Join(dir, "tokens.csv")
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	writeFile(t, pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	token := rand.Text()
	writeFile(t, tokens, []byte(token+`,admin,admin,"system:masters"`+"\n"))
	apiserver := start(t, filepath.Join(dir, "apiserver.log"), filepath.Join(bin, "kube-apiserver"), "--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none", fmt.Sprintf("--secure-port=%d", api), "--cert-dir="+filepath.Join(dir, "pki"),
		"--token-auth-file="+tokens, "--authorization-mode=RBAC", "--service-cluster-ip-range=10.254.0.0/24",
		"--service-account-issuer=https://bare.invalid", "--service-account-key-file="+pubFile,
		"--service-account-signing-key-file="+keyFile, "--profiling=false", "--v=0")

	server := fmt.Sprintf("https://127.0.0.1:%d", api)
	// Its own self-signed certificate: the readiness poll skips verification, as the kubeconfig does.
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	waitFor(t, 90*time.Second, func() bool {
		if apiserver.ProcessState != nil {
			t.Fatalf("kube-apiserver exited: %s", apiserver.ProcessState)
		}
		req, _ := http.NewRequest(http.MethodGet, server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bare"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["bare"] = &clientcmdapi.Context{Cluster: "bare", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "bare"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// start runs a daemon with its output in logPath and stops it (and waits) when the test ends;
// a failed test prints the log's tail.
func start(t *testing.T, logPath, bin string, args ...string) *exec.Cmd {
	t.Helper()
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // sets ProcessState when it exits
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s log (tail):\n%s", filepath.Base(bin), b)
		}
	})
	return cmd
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
