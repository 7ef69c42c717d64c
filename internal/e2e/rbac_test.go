package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// perm is one verb on one resource, as an RBAC rule grants it.
type perm struct{ group, resource, verb string }

func (p perm) String() string { return p.resource + "/" + p.verb }

var (
	claimsGroup  = "extensions.agents.x-k8s.io"
	sandboxGroup = "agents.x-k8s.io"
	gatewayGroup = "gateway.networking.k8s.io"
	gatewayGVR   = schema.GroupVersionResource{Group: gatewayGroup, Version: "v1", Resource: "gateways"}
)

// specPerms are the spec's RBAC sentence, plus what gateway mode reads.
var specPerms = []perm{
	{claimsGroup, "sandboxclaims", "create"}, {claimsGroup, "sandboxclaims", "get"}, {claimsGroup, "sandboxclaims", "list"},
	{claimsGroup, "sandboxclaims", "watch"}, {claimsGroup, "sandboxclaims", "delete"},
	{sandboxGroup, "sandboxes", "get"}, {sandboxGroup, "sandboxes", "list"}, {sandboxGroup, "sandboxes", "watch"},
	{gatewayGroup, "gateways", "get"}, {gatewayGroup, "gateways", "list"}, {gatewayGroup, "gateways", "watch"},
}

// unusedPerms are granted because the spec lists them, but the server never uses them: it
// GETs Sandboxes by name and GETs, then watches, one Gateway by name.
var unusedPerms = []perm{{sandboxGroup, "sandboxes", "list"}, {sandboxGroup, "sandboxes", "watch"}, {gatewayGroup, "gateways", "list"}}

// deployManifests is what the tests take from deploy/: the RBAC objects and the settings.
type deployManifests struct {
	sa       corev1.ServiceAccount
	roles    map[string]rbacv1.ClusterRole
	bindings []rbacv1.RoleBinding
	settings map[string]string // ConfigMap data
}

func loadDeploy(t *testing.T) deployManifests {
	t.Helper()
	root := filepath.Join(stack.RepoRoot, "deploy")
	m := deployManifests{roles: map[string]rbacv1.ClusterRole{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" || d.Name() == "kustomization.yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			var tm metav1.TypeMeta
			if err == nil {
				err = yaml.Unmarshal(doc, &tm)
			}
			switch {
			case err != nil:
			case tm.Kind == "ServiceAccount":
				err = yaml.UnmarshalStrict(doc, &m.sa)
			case tm.Kind == "ClusterRole":
				var cr rbacv1.ClusterRole
				err = yaml.UnmarshalStrict(doc, &cr)
				m.roles[cr.Name] = cr
			case tm.Kind == "RoleBinding":
				var rb rbacv1.RoleBinding
				err = yaml.UnmarshalStrict(doc, &rb)
				m.bindings = append(m.bindings, rb)
			case tm.Kind == "Role" || tm.Kind == "ClusterRoleBinding":
				err = fmt.Errorf("a %s: grants are ClusterRoles bound per namespace by RoleBindings, never cluster-wide", tm.Kind)
			case tm.Kind == "ConfigMap" && path == filepath.Join(root, "configmap.yaml"):
				var cm corev1.ConfigMap
				err = yaml.UnmarshalStrict(doc, &cm)
				m.settings = cm.Data
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
	})
	if err != nil {
		t.Fatalf("reading deploy/: %v", err)
	}
	if m.sa.Name == "" || len(m.roles) == 0 || len(m.bindings) == 0 || m.settings == nil {
		t.Fatalf("deploy/ lacks a ServiceAccount, ClusterRole, RoleBinding or ConfigMap: %+v", m)
	}
	return m
}

// perms flattens the shipped ClusterRoles; anything wider than plain verbs on resources fails.
func (m deployManifests) perms(t *testing.T) []perm {
	t.Helper()
	var out []perm
	for _, cr := range m.roles {
		for _, r := range cr.Rules {
			if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
				t.Errorf("ClusterRole %s: rule %+v: resourceNames/nonResourceURLs are not expected", cr.Name, r)
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						if g == "*" || res == "*" || v == "*" {
							t.Errorf("ClusterRole %s grants a wildcard: %+v", cr.Name, r)
						}
						out = append(out, perm{g, res, v})
					}
				}
			}
		}
	}
	return out
}

func permNames(ps []perm) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.group+"/"+p.String())
	}
	sort.Strings(out)
	return out
}

// TestRBACManifestsGrantExactlyTheSpecVerbs: the shipped ClusterRoles grant exactly the spec's
// verbs, every binding binds the shipped ServiceAccount to a shipped ClusterRole, and every
// verb is either shown to be needed by TestRBACUnderTheRealAPIServer or listed as unused.
func TestRBACManifestsGrantExactlyTheSpecVerbs(t *testing.T) {
	m := loadDeploy(t)
	if got, want := permNames(m.perms(t)), permNames(specPerms); !slices.Equal(got, want) {
		t.Errorf("shipped permissions\n got %v\nwant %v", got, want)
	}
	for _, rb := range m.bindings {
		if _, ok := m.roles[rb.RoleRef.Name]; rb.RoleRef.Kind != "ClusterRole" || !ok {
			t.Errorf("RoleBinding %s refers to %s %s, not a shipped ClusterRole", rb.Name, rb.RoleRef.Kind, rb.RoleRef.Name)
		}
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: m.sa.Name, Namespace: m.sa.Namespace}}
		if !slices.Equal(rb.Subjects, want) {
			t.Errorf("RoleBinding %s subjects %+v, want only %+v", rb.Name, rb.Subjects, want)
		}
	}
	covered := slices.Clone(unusedPerms)
	for _, c := range verbCases() {
		covered = append(covered, c.perm)
	}
	if got, want := permNames(covered), permNames(specPerms); !slices.Equal(got, want) {
		t.Errorf("verbs with a test that shows they are needed, or listed as unused\n got %v\nwant %v", got, want)
	}
}

// identity is a ServiceAccount's kubeconfig and RBAC user name.
type identity struct{ kubeconfig, user string }

// applyShipped creates the shipped ServiceAccount and ClusterRoles as they are (updating the
// cluster-scoped ones, which other runs share) and the RoleBindings in ns instead of theirs.
func applyShipped(t *testing.T, m deployManifests, ns string) {
	t.Helper()
	ctx := t.Context()
	_, err := stack.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.sa.Namespace}}, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) {
		_, err = stack.Kube.CoreV1().ServiceAccounts(m.sa.Namespace).Create(ctx, &m.sa, metav1.CreateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("service account: %v", err)
	}
	roles := stack.Kube.RbacV1().ClusterRoles()
	for _, cr := range m.roles {
		if _, err := roles.Create(ctx, &cr, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			cur, gerr := roles.Get(ctx, cr.Name, metav1.GetOptions{})
			if gerr == nil {
				cur.Rules = cr.Rules
				_, err = roles.Update(ctx, cur, metav1.UpdateOptions{})
			} else {
				err = gerr
			}
		}
		if err != nil {
			t.Fatalf("ClusterRole %s: %v", cr.Name, err)
		}
	}
	for _, rb := range m.bindings {
		rb.Namespace = ns
		if _, err := stack.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rb, metav1.CreateOptions{}); err != nil {
			t.Fatalf("RoleBinding %s: %v", rb.Name, err)
		}
	}
}

// reducedIdentity is a ServiceAccount in ns whose Role grants the shipped permissions but drop.
func reducedIdentity(t *testing.T, m deployManifests, ns, name string, drop ...perm) identity {
	t.Helper()
	ctx := t.Context()
	var granted []perm
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, p := range m.perms(t) {
		if !slices.Contains(drop, p) {
			granted = append(granted, p)
			role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{p.group}, Resources: []string{p.resource}, Verbs: []string{p.verb}})
		}
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
	_, err := stack.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err == nil {
		_, err = stack.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
	}
	if err == nil {
		_, err = stack.Kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("identity %s: %v", name, err)
	}
	id := identityFor(t, ns, name, ns)
	waitAuthorized(t, ns, name, ns, granted, drop)
	return id
}

// identityFor mints a token for the ServiceAccount with the TokenRequest API and writes a
// kubeconfig with it (the stack's server and CA, context namespace ctxNS).
func identityFor(t *testing.T, saNS, name, ctxNS string) identity {
	t.Helper()
	secs := int64(3600)
	tr, err := stack.Kube.CoreV1().ServiceAccounts(saNS).CreateToken(t.Context(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", saNS, name, err)
	}
	ca := stack.RestConfig.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(stack.RestConfig.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["stack"] = &clientcmdapi.Cluster{Server: stack.RestConfig.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["rbac"] = &clientcmdapi.Context{Cluster: "stack", AuthInfo: name, Namespace: ctxNS}
	cfg.CurrentContext = "rbac"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return identity{kubeconfig: path, user: "system:serviceaccount:" + saNS + ":" + name}
}

// waitAuthorized waits until the API server's authorizer has caught up with new bindings:
// every allow permission allowed and every deny permission denied, in ns.
func waitAuthorized(t *testing.T, saNS, name, ns string, allow, deny []perm) {
	t.Helper()
	check := func(p perm) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + saNS + ":" + name,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + saNS, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: p.verb, Group: p.group, Resource: p.resource}}}
		res, err := stack.Kube.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
		return err == nil && res.Status.Allowed == slices.Contains(allow, p)
	}
	waitFor(t, 30*time.Second, func() bool {
		for _, p := range append(slices.Clone(allow), deny...) {
			if !check(p) {
				return false
			}
		}
		return true
	})
}

// createGateway copies the stack's Gateway into ns; address "" leaves it without one.
func createGateway(t *testing.T, ns, name, address string) {
	t.Helper()
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(stack.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	src, err := dyn.Resource(gatewayGVR).Namespace(stack.Env["GATEWAY_NAMESPACE"]).Get(ctx, stack.Env["GATEWAY_NAME"], metav1.GetOptions{})
	if err != nil {
		t.Fatalf("stack gateway: %v", err)
	}
	gw := &unstructured.Unstructured{Object: map[string]any{"apiVersion": src.GetAPIVersion(), "kind": src.GetKind(), "spec": src.Object["spec"]}}
	gw.SetName(name)
	if _, err := dyn.Resource(gatewayGVR).Namespace(ns).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatalf("gateway %s: %v", name, err)
	}
	if address != "" {
		patch := fmt.Sprintf(`{"status":{"addresses":[{"type":"IPAddress","value":%q}]}}`, address)
		if _, err := dyn.Resource(gatewayGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("gateway %s status: %v", name, err)
		}
	}
}

// deploySettings is the shipped ConfigMap as an environment, with its namespaces set to ns.
func deploySettings(m deployManifests, ns string) []string {
	var env []string
	for k, v := range m.settings {
		if k == "K8S_SANDBOX_ALLOWED_NAMESPACES" || k == "K8S_SANDBOX_PROBE_NAMESPACE" {
			v = ns
		}
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// gatewayEnv switches a server to gateway mode through the Gateway name in ns.
func gatewayEnv(ns, name string) []string {
	return append(slices.Clone(connections()[0].env), "K8S_SANDBOX_CONNECTION__GATEWAY_NAMESPACE="+ns,
		"K8S_SANDBOX_CONNECTION__GATEWAY_NAME="+name, "K8S_SANDBOX_CONNECTION__GATEWAY_READY_TIMEOUT=2")
}

func readyz(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// claimsLabelled lists the claims in ns carrying label key=value, with the admin client.
func claimsLabelled(t *testing.T, ns, key, value string) []string {
	t.Helper()
	list, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).List(t.Context(), metav1.ListOptions{LabelSelector: key + "=" + value})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list.Items {
		names = append(names, c.Name)
	}
	return names
}

// waitNoClaims waits until no claim in ns carries key=value (a failed create's claim is deleted).
func waitNoClaims(t *testing.T, ns, key, value string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for left := claimsLabelled(t, ns, key, value); len(left) > 0; left = claimsLabelled(t, ns, key, value) {
		if time.Now().After(deadline) {
			t.Fatalf("claims left behind after the failure: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const (
	sharedOwner = "rbac-shared"
	ownerLabel  = "mcp.k8s-agent-sandbox/session-id" // the server's default owner label key
	caseLabel   = "rbac-case"
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
	t.Logf("MSG %s: %s", q, msg)
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
		{claims("delete"), func(t *testing.T, p probe, q perm) {
			p.forbidden(t, callError(t, p.session(t), "delete_sandbox", p.args(nil)), q)
			p.claimAlive(t)
		}},
		{perm{sandboxGroup, "sandboxes", "get"}, func(t *testing.T, p probe, q perm) {
			s := p.session(t)
			p.forbidden(t, callError(t, s, "execute_command", p.args(exec)), q)
			p.forbidden(t, callError(t, s, "get_sandbox_status", p.args(nil)), q)
			p.createFails(t, s, q) // the created claim is deleted again
		}},
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
	m := loadDeploy(t)
	ns := stack.Namespace(t).Name
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
		if code := readyz(t, httpServer(t, settings)); code != http.StatusOK {
			t.Errorf("/readyz: %d", code)
		}
		// With watch allowed, a Gateway without an address is waited for until the timeout.
		p := probe{ns: ns, id: full, env: probeEnv(full), claim: shared}
		msg := callError(t, p.session(t, gatewayEnv(ns, "rbac-gateway-pending")...), "execute_command", p.args(map[string]any{"command": "true"}))
		if !strings.Contains(msg, "no address after") || strings.Contains(msg, "forbidden") {
			t.Errorf("pending gateway under the shipped role: %s", msg)
		}
	})
	for _, c := range verbCases() {
		t.Run("without "+c.perm.String(), func(t *testing.T) {
			id := reducedIdentity(t, m, ns, "rbac-no-"+c.perm.verb+"-"+c.perm.resource, c.perm)
			c.check(t, probe{ns: ns, id: id, env: probeEnv(id), claim: shared}, c.perm)
		})
	}
	t.Run("unused verbs are not needed", func(t *testing.T) {
		id := reducedIdentity(t, m, ns, "rbac-unused", unusedPerms...)
		s := stdioSession(t, append(probeEnv(id), gatewayEnv(ns, "rbac-gateway")...), "")
		scenario(t, s, ns, localstack.PythonPool)
		if got := readSandboxes(t, s, ns); !slices.Equal(got, []string{shared}) {
			t.Errorf("sandboxes://%s: %v, want [%s]", ns, got, shared)
		}
	})
	t.Run("session end deletes the sandbox under the shipped role", func(t *testing.T) {
		if err := owner.Close(); err != nil {
			t.Errorf("closing the stdio session: %v", err)
		}
		waitNoClaims(t, ns, ownerLabel, sharedOwner)
	})
}
