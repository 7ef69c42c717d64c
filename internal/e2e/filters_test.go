//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOperatorFiltersMeanWhatTheySay is issue 43 point 6: each operator filter holds where the
// third attack run got past it.
func TestOperatorFiltersMeanWhatTheySay(t *testing.T) {
	t.Parallel()

	t.Run("an upload URL under --disable-destructive replaces no file", func(t *testing.T) {
		t.Parallel()
		ns := stack.Namespace(t)
		const token = "filters-alice-0123456789"
		c := connections()[4] // sandboxd-pod-ip
		env := append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + token}, c.env...)
		// The same principal on a server without the filter (another replica's settings, or
		// the server before a restart) makes the sandbox, its file and a grant.
		open, err := authSession(t, httpServer(t, env), token, "")
		if err != nil {
			t.Fatal(err)
		}
		filteredBase := httpServer(t, append([]string{"K8S_SANDBOX_DISABLE_DESTRUCTIVE=true"}, env...))
		filtered, err := authSession(t, filteredBase, token, "")
		if err != nil {
			t.Fatal(err)
		}
		created := call[createResult](t, open, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
		with := sandboxArgs(created.SandboxClaimName, ns.Name)
		call[struct{}](t, open, "upload_file", with(map[string]any{"path": "kept.txt", "content": "original\n"}))

		list, err := filtered.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list.Tools, func(tl *mcp.Tool) bool { return tl.Name == "create_transfer_url" })
		if i < 0 {
			t.Fatal("create_transfer_url is not listed under --disable-destructive: downloads should stay")
		}
		props, _ := list.Tools[i].InputSchema.(map[string]any)["properties"].(map[string]any)
		if dir := fmt.Sprint(props["direction"]); strings.Contains(dir, "upload") {
			t.Errorf("direction still offers upload: %s", dir)
		}
		type answer struct{ URL string }
		// put sends content to an upload URL's path on the filtered server.
		put := func(u, content string) (int, string) {
			_, rest, ok := strings.Cut(u, "/transfer/")
			if !ok {
				t.Fatalf("upload URL %q", u)
			}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, filteredBase+"/transfer/"+rest, strings.NewReader(content))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		args := with(map[string]any{"path": "kept.txt", "direction": "upload"})
		if res := callRaw(t, filtered, "create_transfer_url", args); !res.IsError {
			// The attack run's case: the URL was handed out and replaced the file.
			t.Errorf("create_transfer_url gave an upload URL under --disable-destructive")
			code, _ := put(decode[answer](t, res).URL, "replaced by the filtered server's URL\n")
			t.Logf("PUT through it: %d", code)
		} else {
			for _, want := range []string{"hands out no upload URLs", "--disable-destructive", "Use direction download"} {
				if msg := resultText(res); !strings.Contains(msg, want) {
					t.Errorf("upload refusal %q, want it to say %q", msg, want)
				}
			}
		}

		// A grant made without the filter, used on the filtered server: refused, unspent.
		up := call[answer](t, open, "create_transfer_url", args)
		if code, body := put(up.URL, "replaced through a grant made elsewhere\n"); code != http.StatusForbidden || !strings.Contains(body, "no upload URLs") {
			t.Errorf("PUT of another process's grant through the filtered server: %d %q, want 403", code, body)
		}
		if got := call[readFileResult](t, open, "read_file", with(map[string]any{"path": "kept.txt"})); got.Content != "1\toriginal\n" {
			t.Errorf("kept.txt after the upload URLs: %q, want it unchanged", got.Content)
		}
		// Downloads still work under the filter.
		if down := call[answer](t, filtered, "create_transfer_url", with(map[string]any{"path": "kept.txt", "direction": "download"})); down.URL == "" {
			t.Error("no download URL under the filter")
		}
	})

	t.Run("an in-cluster server refuses sandboxd's ports of a sandboxd pod", func(t *testing.T) {
		t.Parallel()
		ns := stack.Namespace(t)
		c := connections()[2] // in-cluster-pod-ip: a python-runtime connection
		s := stdioSession(t, c.env, "")
		created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name})
		with := sandboxArgs(created.SandboxClaimName, ns.Name)
		for port, does := range map[int]string{8080: "the sandbox's files", 9090: "command execution", 8888: "command execution"} {
			msg := callError(t, s, "expose_port", with(map[string]any{"port": port}))
			for _, want := range []string{fmt.Sprintf("port %d is", port), does, "expose your application's port instead",
				"not 8080, 8888, 9090"} {
				if !strings.Contains(msg, want) {
					t.Errorf("expose_port %d: %q, want it to say %q", port, msg, want)
				}
			}
		}
		if u := call[struct{ URL string }](t, s, "expose_port", with(map[string]any{"port": 8765})).URL; u == "" {
			t.Error("expose_port 8765 gave no URL")
		}
	})

	t.Run("create_sandbox refuses runtime, mesh and autoscaler annotations", func(t *testing.T) {
		t.Parallel()
		ns := stack.Namespace(t)
		c := connections()[4]
		s := stdioSession(t, c.env, "")
		keys := []string{"io.katacontainers.config.hypervisor.kernel_params", "io.kubernetes.cri-o.userns-mode",
			"dev.gvisor.flag.network", "io.containerd.runc.v2.group", "io.cilium.proxy-visibility",
			"ambient.istio.io/redirection", "cluster-autoscaler.kubernetes.io/safe-to-evict"}
		for _, key := range keys {
			msg := callError(t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name,
				"pod_annotations": map[string]any{key: "x"}})
			if want := fmt.Sprintf("pod annotation %q: this server refuses it", key); !strings.Contains(msg, want) || !strings.Contains(msg, "leave it out") {
				t.Errorf("pod annotation %s: %q, want %q and advice", key, msg, want)
			}
		}
		claims, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns.Name).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(claims.Items) != 0 {
			t.Errorf("refused creates left %d claims", len(claims.Items))
		}
	})

	t.Run("prompts under a pinned pool do not offer warmpool", func(t *testing.T) {
		t.Parallel()
		env := append([]string{"K8S_SANDBOX_PIN__WARMPOOL=sandboxd-pool"}, connections()[4].env...)
		for name, cs := range map[string]*mcp.ClientSession{
			"stdio": stdioSession(t, env, ""), "http": httpSession(t, httpServer(t, env), ""),
		} {
			t.Run(name, func(t *testing.T) {
				list, err := cs.ListPrompts(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(list.Prompts) == 0 {
					t.Fatal("no prompts listed")
				}
				for _, p := range list.Prompts {
					args := map[string]string{"warmpool": "python-pool"} // passed anyway
					for _, a := range p.Arguments {
						if a.Name == "warmpool" {
							t.Errorf("prompt %s offers warmpool", p.Name)
						}
						if a.Required {
							args[a.Name] = "x"
						}
					}
					res, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: p.Name, Arguments: args})
					if err != nil {
						t.Fatalf("prompts/get %s: %v", p.Name, err)
					}
					var text strings.Builder
					for _, m := range res.Messages {
						if tc, ok := m.Content.(*mcp.TextContent); ok {
							text.WriteString(tc.Text)
						}
					}
					if s := text.String() + p.Description; strings.Contains(s, "warmpool") || strings.Contains(s, "python-pool") {
						t.Errorf("prompt %s under a pinned pool names warmpool or follows it:\n%s", p.Name, s)
					}
				}
			})
		}
	})
}
