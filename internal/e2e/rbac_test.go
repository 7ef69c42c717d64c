//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// probe runs the server as an identity that lacks some shipped permission, with the owner of
// the shared claim (a sandbox the full identity created) and without session-end cleanup.
type probe struct {
	ns    string
	id    identity
	env   []string
	claim string
}

func (p probe) session(t *testing.T, extra ...string) *mcp.ClientSession {
	t.Helper()
	return stdioSession(t, append(slices.Clone(p.env), extra...), "")
}

func (p probe) args(extra map[string]any) map[string]any {
	out := map[string]any{"sandbox_claim_name": p.claim, "namespace": p.ns}
	maps.Copy(out, extra)
	return out
}

// forbidden checks that msg reports the API server refusing exactly q to this identity.
func (p probe) forbidden(t *testing.T, msg string, q perm) {
	t.Helper()
	want := fmt.Sprintf("cannot %s resource %q", q.verb, q.resource)
	if !strings.Contains(msg, "forbidden") || !strings.Contains(msg, want) || !strings.Contains(msg, p.id.user) {
		t.Errorf("want the API server's refusal (%s, user %s), got: %s", want, p.id.user, msg)
	}
}

// createFails: create_sandbox is refused for q and leaves no claim behind.
func (p probe) createFails(t *testing.T, s *mcp.ClientSession, q perm) {
	t.Helper()
	tag := q.verb + "-" + q.resource
	msg := callError(t, s, "create_sandbox", map[string]any{"warmpool": localstack.SandboxdPool, "namespace": p.ns,
		"labels": map[string]any{caseLabel: tag}})
	p.forbidden(t, msg, q)
	waitNoClaims(t, p.ns, caseLabel, tag)
}

// claimAlive checks, as admin, that the shared claim exists and is not being deleted.
func (p probe) claimAlive(t *testing.T) {
	t.Helper()
	c, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(p.ns).Get(t.Context(), p.claim, metav1.GetOptions{})
	if err != nil || c.DeletionTimestamp != nil {
		t.Errorf("the shared claim should be untouched: %v %v", err, c.GetDeletionTimestamp())
	}
}

// toOrderFails: create_sandbox with cpus (a sandbox built to order) is refused, and no claim is made.
func toOrderFails(t *testing.T, p probe, q perm) {
	tag := q.verb + "-" + q.resource
	s := p.session(t, customEnv()...)
	p.forbidden(t, callError(t, s, "create_sandbox", map[string]any{"warmpool": localstack.PythonPool, "namespace": p.ns,
		"cpus": 0.25, "labels": map[string]any{caseLabel: tag}}), q)
	waitNoClaims(t, p.ns, caseLabel, tag)
}

type verbCase struct {
	perm  perm
	check func(t *testing.T, p probe, q perm)
}

// verbCases show, for each used verb, a tool call that fails without it.
func verbCases() []verbCase {
	claims := func(v string) perm { return perm{claimsGroup, "sandboxclaims", v} }
	exec := map[string]any{"command": "true"}
	return []verbCase{
		{claims("create"), func(t *testing.T, p probe, q perm) { p.createFails(t, p.session(t), q) }},
		{claims("get"), func(t *testing.T, p probe, q perm) { // every tool on a claim GETs it first (ownership)
			s := p.session(t)
			p.forbidden(t, callError(t, s, "execute_command", p.args(exec)), q)
			p.forbidden(t, callError(t, s, "delete_sandbox", p.args(nil)), q)
			p.claimAlive(t)
		}},
		{claims("list"), func(t *testing.T, p probe, q perm) {
			s := p.session(t)
			// The shipped per-owner cap counts the caller's claims before creating one.
			p.createFails(t, s, q)
			_, err := s.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "sandboxes://" + p.ns})
			if err == nil {
				t.Fatal("reading sandboxes:// succeeded without list")
			}
			p.forbidden(t, err.Error(), q)
			if code := readyz(t, httpServer(t, p.env)); code != http.StatusServiceUnavailable {
				t.Errorf("/readyz without list: %d, want 503", code)
			}
		}},
		{claims("watch"), func(t *testing.T, p probe, q perm) { p.createFails(t, p.session(t), q) }},
		{claims("patch"), func(t *testing.T, p probe, q perm) { // the exposure is recorded on the claim
			p.forbidden(t, callError(t, p.session(t), "expose_port", p.args(map[string]any{"port": 8000})), q)
		}},
		{claims("delete"), func(t *testing.T, p probe, q perm) {
			p.forbidden(t, callError(t, p.session(t), "delete_sandbox", p.args(nil)), q)
			p.claimAlive(t)
		}},
		{perm{sandboxGroup, "sandboxes", "get"}, func(t *testing.T, p probe, q perm) {
			s := p.session(t)
			// A fresh server's first call on a claim misses the cache and GETs the Sandbox. Later
			// calls (get_sandbox_status) may be answered by the Sandbox watch the claim's lookup
			// starts, which list and watch allow, so they are not asserted here.
			p.forbidden(t, callError(t, s, "execute_command", p.args(exec)), q)
			p.createFails(t, s, q) // the created claim is deleted again
		}},
		{perm{sandboxGroup, "sandboxes", "patch"}, func(t *testing.T, p probe, q perm) { // deploy/suspend/: the operatingMode
			// resume_sandbox on the running shared sandbox patches nothing, so only suspend is refused.
			p.forbidden(t, callError(t, p.session(t), "suspend_sandbox", p.args(nil)), q)
			sb := sandboxOf(t, p.ns, p.claim)
			if sb.Spec.OperatingMode == "Suspended" {
				t.Error("the shared sandbox was suspended without patch on sandboxes")
			}
		}},
		{perm{claimsGroup, "sandboxwarmpools", "list"}, func(t *testing.T, p probe, q perm) {
			p.forbidden(t, callError(t, p.session(t), "list_sandbox_templates", map[string]any{"namespace": p.ns}), q)
		}},
		{perm{claimsGroup, "sandboxtemplates", "list"}, func(t *testing.T, p probe, q perm) {
			p.forbidden(t, callError(t, p.session(t), "list_sandbox_templates", map[string]any{"namespace": p.ns}), q)
		}},
		{perm{metricsGroup, "pods", "get"}, func(t *testing.T, p probe, q perm) {
			// Not a failure: the figures come from inside the sandbox, and the note says why.
			got := call[metricsResult](t, p.session(t, gatewayEnv(p.ns, "rbac-gateway")...), "get_sandbox_metrics", p.args(nil)) // the shared claim runs the python runtime
			if len(got.Sandboxes) != 1 || got.Sandboxes[0].Source != "sandbox cgroup" || !strings.Contains(got.Sandboxes[0].Note, "(RBAC)") {
				t.Errorf("get_sandbox_metrics without %s: %+v", q, got)
			}
		}},
		{perm{claimsGroup, "sandboxtemplates", "get"}, toOrderFails},
		{perm{claimsGroup, "sandboxtemplates", "create"}, toOrderFails},
		{perm{claimsGroup, "sandboxwarmpools", "get"}, toOrderFails},
		{perm{claimsGroup, "sandboxwarmpools", "create"}, toOrderFails},
		{perm{gatewayGroup, "gateways", "get"}, func(t *testing.T, p probe, q perm) {
			p.forbidden(t, callError(t, p.session(t, gatewayEnv(p.ns, "rbac-gateway")...), "execute_command", p.args(exec)), q)
		}},
		{perm{gatewayGroup, "gateways", "watch"}, func(t *testing.T, p probe, q perm) { // waiting for an address
			p.forbidden(t, callError(t, p.session(t, gatewayEnv(p.ns, "rbac-gateway-pending")...), "execute_command", p.args(exec)), q)
		}},
	}
}

// TestRBACUnderTheRealAPIServer runs the server with a token of the shipped ServiceAccount,
// bound by the shipped RoleBindings (moved to the test namespace), against the real API
// server's RBAC: every tool works; without any one used verb, a specific call is refused.
func TestRBACUnderTheRealAPIServer(t *testing.T) {
	t.Parallel()
	holdShippedNamespace(t) // its ServiceAccount lives there
	m := loadDeploy(t)
	ns := stack.Namespace(t, bothPools...).Name
	applyShipped(t, m, ns)
	createGateway(t, ns, "rbac-gateway", stack.Env["GATEWAY_ADDRESS"])
	createGateway(t, ns, "rbac-gateway-pending", "")
	full := identityFor(t, m.sa.Namespace, m.sa.Name, ns)
	waitAuthorized(t, m.sa.Namespace, m.sa.Name, ns, m.perms(t), nil)
	settings := append(deploySettings(m, ns), "KUBECONFIG="+full.kubeconfig)
	probeEnv := func(id identity) []string {
		return append(slices.Clone(settings), "KUBECONFIG="+id.kubeconfig, "K8S_SANDBOX_STDIO_OWNER="+sharedOwner,
			"K8S_SANDBOX_KEEP_SANDBOXES_ON_SESSION_END=true")
	}

	owner := stdioSession(t, append(slices.Clone(settings), "K8S_SANDBOX_STDIO_OWNER="+sharedOwner), "")
	shared := call[createResult](t, owner, "create_sandbox", map[string]any{"warmpool": localstack.PythonPool, "namespace": ns}).SandboxClaimName

	t.Run("every tool works with the shipped ServiceAccount", func(t *testing.T) {
		scenario(t, stdioSession(t, settings, ""), ns, localstack.SandboxdPool)
		scenario(t, stdioSession(t, append(slices.Clone(settings), gatewayEnv(ns, "rbac-gateway")...), ""), ns, localstack.PythonPool)
		if got := readSandboxes(t, owner, ns); !slices.Equal(got, []string{shared}) {
			t.Errorf("sandboxes://%s: %v, want [%s]", ns, got, shared)
		}
		// With watch allowed, a Gateway without an address is waited for until the timeout.
		p := probe{ns: ns, id: full, env: probeEnv(full), claim: shared}
		msg := callError(t, p.session(t, gatewayEnv(ns, "rbac-gateway-pending")...), "execute_command", p.args(map[string]any{"command": "true"}))
		if !strings.Contains(msg, "no address after") || strings.Contains(msg, "forbidden") {
			t.Errorf("pending gateway under the shipped role: %s", msg)
		}
	})
	t.Run("the Deployment's command line serves HTTP behind its bearer token", func(t *testing.T) {
		serveLikeThePod(t, ns, settings)
	})
	for _, c := range verbCases() {
		t.Run("without "+c.perm.String(), func(t *testing.T) {
			id := reducedIdentity(t, m, ns, "rbac-no-"+c.perm.verb+"-"+c.perm.resource, c.perm)
			c.check(t, probe{ns: ns, id: id, env: probeEnv(id), claim: shared}, c.perm)
		})
	}
	t.Run("optional verbs are not needed", func(t *testing.T) {
		id := reducedIdentity(t, m, ns, "rbac-unused", optionalPerms...)
		s := stdioSession(t, append(probeEnv(id), gatewayEnv(ns, "rbac-gateway")...), "")
		scenario(t, s, ns, localstack.PythonPool)
		if got := readSandboxes(t, s, ns); !slices.Equal(got, []string{shared}) {
			t.Errorf("sandboxes://%s: %v, want [%s]", ns, got, shared)
		}
	})
	t.Run("without leases a fixed owner's end keeps its sandboxes", func(t *testing.T) {
		id := reducedIdentity(t, m, ns, "rbac-no-leases", leasePerms...)
		lone := "rbac-lone-" + randomHex(t)[:8]
		s := stdioSession(t, append(slices.Clone(settings), "KUBECONFIG="+id.kubeconfig, "K8S_SANDBOX_STDIO_OWNER="+lone), "")
		kept := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": localstack.SandboxdPool, "namespace": ns}).SandboxClaimName
		if err := s.Close(); err != nil {
			t.Errorf("closing the stdio session: %v", err)
		}
		obj, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).Get(t.Context(), kept, metav1.GetOptions{})
		if err != nil || obj.DeletionTimestamp != nil {
			t.Fatalf("a process that cannot tell whether another one is alive released its owner's sandbox: %v", err)
		}
		if err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).Delete(t.Context(), kept, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	})
	t.Run("session end deletes the sandbox under the shipped role", func(t *testing.T) {
		if err := owner.Close(); err != nil {
			t.Errorf("closing the stdio session: %v", err)
		}
		waitNoClaims(t, ns, ownerLabel, sharedOwner)
	})
}

// podCommand is how the Deployment starts the server: the container's args (the image's
// entrypoint is the binary alone, as ko builds it: hack/image.sh) and the container's literal env.
type podCommand struct {
	args []string
	env  map[string]string
}

const tokensFileVar = "K8S_SANDBOX_AUTH__TOKENS_FILE"

func loadPodCommand(t *testing.T) podCommand {
	t.Helper()
	root := filepath.Join(stack.RepoRoot, "deploy")
	data, err := os.ReadFile(filepath.Join(root, "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("deployment.yaml (%v) is not as expected", err)
	}
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	pc := podCommand{args: c.Args, env: map[string]string{}}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			pc.env[e.Name] = e.Value
		}
	}
	// The tokens file must be where the Deployment mounts the Secret's key.
	mounted := false
	for _, vm := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name != vm.Name || v.Secret == nil {
				continue
			}
			for _, it := range v.Secret.Items {
				mounted = mounted || filepath.Join(vm.MountPath, it.Path) == pc.env[tokensFileVar]
			}
		}
	}
	if !mounted {
		t.Fatalf("%s=%q is not a mounted Secret key", tokensFileVar, pc.env[tokensFileVar])
	}
	return pc
}

// withFlag replaces the value of a "--name value" pair in args.
func withFlag(t *testing.T, args []string, name, value string) []string {
	t.Helper()
	i := slices.Index(args, name)
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("the pod's command line %v has no %s", args, name)
	}
	out := slices.Clone(args)
	out[i+1] = value
	return out
}

// serveLikeThePod runs the binary with the pod's command line and env (listening on loopback,
// its default namespace moved to ns, the tokens file a local one) and checks that it demands
// the bearer token and, given it, works under the identity in env.
func serveLikeThePod(t *testing.T, ns string, settings []string) {
	t.Helper()
	pc := loadPodCommand(t)
	secret := make([]byte, 24)
	_, _ = rand.Read(secret)
	token := hex.EncodeToString(secret)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice:"+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := slices.Clone(settings)
	for k, v := range pc.env {
		if k == tokensFileVar {
			v = tokens
		}
		env = append(env, k+"="+v)
	}
	base := serve(t, 30*time.Second, false, env, withFlag(t, withFlag(t, pc.args, "--http", "127.0.0.1:0"), "--namespace", ns)...).base
	resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/mcp without a token: %d, want 401", resp.StatusCode)
	}
	cs, err := authSession(t, base, token, "")
	if err != nil {
		t.Fatalf("connecting with the token: %v", err)
	}
	created := call[struct {
		Name      string `json:"sandbox_claim_name"`
		Namespace string `json:"namespace"`
	}](t, cs, "create_sandbox", map[string]any{"warmpool": localstack.SandboxdPool})
	if created.Namespace != ns {
		t.Errorf("create_sandbox without a namespace went to %q, want --namespace %q", created.Namespace, ns)
	}
	call[struct{}](t, cs, "delete_sandbox", map[string]any{"sandbox_claim_name": created.Name, "namespace": created.Namespace})
	if code := readyz(t, base); code != http.StatusOK {
		t.Errorf("/readyz: %d", code)
	}
}
