//go:build e2e

package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/owner"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// TestCapHoldsAcrossConcurrentSessions: with a cap of 2, one principal opening four sessions
// and creating eight sandboxes at once (two per session, in both protocol eras) ends up with
// exactly 2 claims in the cluster, all labelled with that principal; the refusals say why.
func TestCapHoldsAcrossConcurrentSessions(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	const token = "carol-token-0123456789"
	env := append(append([]string{}, connections()[4].env...),
		"K8S_SANDBOX_AUTH__TOKENS=carol:"+token, "K8S_SANDBOX_MAX_SANDBOXES_PER_OWNER=2")
	base := httpServer(t, env)
	var sessions []*mcp.ClientSession
	for _, era := range []string{"", "2025-11-25", "", "2025-11-25"} {
		s, err := authSession(t, base, token, era)
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	var mu sync.Mutex
	created, refused := 0, 0
	var wg sync.WaitGroup
	for i := range 8 {
		s := sessions[i%len(sessions)]
		wg.Go(func() {
			res := callRaw(t, s, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case !res.IsError:
				created++
			case strings.Contains(resultText(res), "the most this server allows"):
				refused++
			default:
				t.Errorf("unexpected error: %s", resultText(res))
			}
		})
	}
	wg.Wait()
	if created != 2 || refused != 6 {
		t.Errorf("%d created, %d refused; want 2 and 6", created, refused)
	}
	claims, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns.Name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := owner.ForPrincipal(auth.Static("carol"))
	if len(claims.Items) != 2 {
		t.Errorf("%d claims in the cluster, want 2", len(claims.Items))
	}
	for _, c := range claims.Items {
		if got := c.Labels[kube.PrincipalLabel]; got != want {
			t.Errorf("claim %s: principal label %q, want %q", c.Name, got, want)
		}
	}
}
