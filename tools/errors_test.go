package tools

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/workspace"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// TestAPIAdvice: an unusable API server is named with its URL and cause, and the model learns
// whether retrying helps or the person must fix the configuration.
func TestAPIAdvice(t *testing.T) {
	const server = "https://10.0.0.1:6443"
	// As client-go returns them: a *url.Error around the kube transport's APIError.
	viaClientGo := func(cause kube.Cause, inner error) error {
		api := &kube.APIError{URL: server, User: "alice", Cause: cause, Err: inner}
		return fmt.Errorf("getting sandbox claim %q in namespace %q: %w", "c", "ns",
			&url.Error{Op: "Get", URL: server + "/apis/x", Err: api})
	}
	forbidden := &apierrors.StatusError{ErrStatus: metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `sandboxclaims is forbidden: User "alice" cannot get resource "sandboxclaims" in the namespace "ns"`}}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"refused", viaClientGo(kube.CauseRefused, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}),
			"Could not get the status: the Kubernetes API server at https://10.0.0.1:6443 refused the connection. " +
				"Retry in a few seconds; if it persists, the API server at https://10.0.0.1:6443 is down — check the kubeconfig."},
		{"timeout", viaClientGo(kube.CauseTimeout, errors.New("context deadline exceeded")),
			"Could not get the status: the Kubernetes API server at https://10.0.0.1:6443 did not answer in time (timeout). " +
				"Retry in a few seconds; if it persists, the API server at https://10.0.0.1:6443 is down — check the kubeconfig."},
		{"TLS", viaClientGo(kube.CauseTLS, errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority")),
			"Could not get the status: the TLS handshake with the Kubernetes API server at https://10.0.0.1:6443 failed " +
				"(tls: failed to verify certificate: x509: certificate signed by unknown authority). " +
				"Retrying will not help: the person running this server must fix the kubeconfig (the cluster's certificate-authority data or its server URL)."},
		{"401", viaClientGo(kube.CauseUnauthorized, &apierrors.StatusError{ErrStatus: metav1.Status{Code: 401, Reason: metav1.StatusReasonUnauthorized, Message: "Unauthorized"}}),
			`Could not get the status: the Kubernetes API server at https://10.0.0.1:6443 rejected the credentials of user "alice" (401 Unauthorized). ` +
				`Retrying will not help: the person running this server must fix the credentials of user "alice" in the kubeconfig (expired or wrong token or certificate?).`},
		{"403", viaClientGo(kube.CauseForbidden, forbidden),
			`Could not get the status: the Kubernetes API server at https://10.0.0.1:6443 denied user "alice" (403 Forbidden: ` +
				`sandboxclaims is forbidden: User "alice" cannot get resource "sandboxclaims" in the namespace "ns"). ` +
				`Retrying will not help: use a namespace the server may use, or the person running this server must grant user "alice" access (RBAC).`},
		{"DNS", viaClientGo(kube.CauseDNS, &net.DNSError{Err: "no such host", Name: "api.example", IsNotFound: true}),
			"Could not get the status: the host name of the Kubernetes API server at https://10.0.0.1:6443 does not resolve (lookup api.example: no such host). " +
				"Retrying will not help: the person running this server must fix the server URL in the kubeconfig."},
		{"sandbox side network error", fmt.Errorf("exec: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}),
			"Could not get the status: sandbox \"c\" is unreachable (exec: dial tcp: connection refused). Check get_sandbox_status and retry in a few seconds."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := advice("get the status", claimRef{Namespace: "ns", Name: "c"}, tc.err); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestWorkspaceAdviceChanged: an edit that lost a race says nothing was written and to read
// the file and retry, not that the edit failed for good.
func TestWorkspaceAdviceChanged(t *testing.T) {
	msg := workspaceAdvice("edit the file", fmt.Errorf(`"f.txt": %w`, workspace.ErrChanged))
	for _, want := range []string{"changed while it was being edited", "nothing was written", "read_file", "edit_file again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("advice %q lacks %q", msg, want)
		}
	}
}
