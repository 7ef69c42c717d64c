//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// claimGone waits until the claim no longer exists in the API.
func claimGone(t *testing.T, ns, name string, within time.Duration) {
	t.Helper()
	waitFor(t, within, func() bool {
		_, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func claimExists(t *testing.T, ns, name string) bool {
	t.Helper()
	_, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	return err == nil
}

// TestSessionEndReleasesSandboxes: DELETE, stdio EOF, server shutdown and the idle sweep of a
// client that never says goodbye each delete the session's sandboxes.
func TestSessionEndReleasesSandboxes(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	env := connections()[4].env
	t.Run("http DELETE", func(t *testing.T) {
		cs := httpSession(t, httpServer(t, env), "2025-11-25")
		c := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name})
		if err := cs.Close(); err != nil { // sends DELETE
			t.Fatal(err)
		}
		claimGone(t, ns.Name, c.SandboxClaimName, 30*time.Second)
	})
	t.Run("stdio EOF", func(t *testing.T) {
		cs := stdioSession(t, env, "")
		c := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name})
		_ = cs.Close()
		claimGone(t, ns.Name, c.SandboxClaimName, 30*time.Second)
	})
	t.Run("server shutdown", func(t *testing.T) {
		cmd, base := startServer(t, env)
		cs := httpSession(t, base, "2025-11-25")
		c := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name})
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		claimGone(t, ns.Name, c.SandboxClaimName, 30*time.Second)
	})
	t.Run("idle client without DELETE", func(t *testing.T) {
		_, base := startServer(t, env, "--session-idle-ttl", "3s")
		rc := rawClient{base: base}
		rc.post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"silent","version":"0"}}}`)
		rc.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		out := rc.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_sandbox","arguments":{"warmpool":"sandboxd-pool","namespace":%q}}}`, ns.Name))
		i := strings.Index(out, `"sandbox_claim_name":"`)
		if i < 0 {
			t.Fatalf("create over raw HTTP: %s", out)
		}
		name := out[i+len(`"sandbox_claim_name":"`):]
		name = name[:strings.Index(name, `"`)]
		time.Sleep(time.Second)
		if !claimExists(t, ns.Name, name) {
			t.Fatal("claim vanished before the idle TTL")
		}
		// The client goes silent: no DELETE, no further requests.
		claimGone(t, ns.Name, name, 60*time.Second)
	})
	t.Run("keep configured", func(t *testing.T) {
		cs := stdioSession(t, append(append([]string{}, env...), "K8S_SANDBOX_KEEP_SANDBOXES_ON_SESSION_END=true"), "")
		c := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name, "shutdown_after_seconds": 60})
		_ = cs.Close()
		time.Sleep(3 * time.Second)
		if !claimExists(t, ns.Name, c.SandboxClaimName) {
			t.Error("the operator asked to keep sandboxes, but the claim was deleted")
		}
		_ = stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns.Name).Delete(context.Background(), c.SandboxClaimName, metav1.DeleteOptions{})
	})
}

// rawClient speaks streamable HTTP by hand, like a client that never sends DELETE.
type rawClient struct {
	base    string
	session string
}

func (c *rawClient) post(t *testing.T, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %d %s", body, resp.StatusCode, b)
	}
	return string(b)
}
