//go:build e2e

package localstack_test

import (
	"os"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// Stopping the apiserver disturbs every other user of the stack (other test packages run in
// parallel under go test ./...), so this test runs only when asked for.
func TestAPIServerStopAndStart(t *testing.T) {
	if stack == nil {
		t.Skip("-short: the local stack is not started")
	}
	if os.Getenv("LOCALSTACK_E2E_DISRUPTIVE") == "" {
		t.Skip("set LOCALSTACK_E2E_DISRUPTIVE=1 to stop and restart the shared kube-apiserver")
	}
	s := stack // not parallel: runs before the parallel tests of this package
	if err := s.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Kube.Discovery().ServerVersion(); err == nil {
		_ = s.StartAPIServer()
		t.Fatal("apiserver still answers after StopAPIServer")
	}
	if err := s.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Kube.Discovery().ServerVersion(); err != nil {
		t.Fatalf("apiserver down after StartAPIServer: %v", err)
	}
	// The controllers and the kubelet reconnect: a claim still gets Ready.
	ns := s.Namespace(t, localstack.PythonPool)
	if _, err := s.Claim(testContext(t), ns.Name, localstack.PythonPool); err != nil {
		t.Fatal(err)
	}
}
