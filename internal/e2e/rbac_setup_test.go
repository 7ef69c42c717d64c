//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// perm is one verb on one resource, as an RBAC rule grants it.
type perm struct{ group, resource, verb string }

func (p perm) String() string { return p.resource + "/" + p.verb }

var (
	claimsGroup  = "extensions.agents.x-k8s.io"
	sandboxGroup = "agents.x-k8s.io"
	gatewayGroup = "gateway.networking.k8s.io"
	metricsGroup = "metrics.k8s.io"
	// coordinationGroup's Leases say which stdio processes of a fixed owner are alive.
	coordinationGroup = "coordination.k8s.io"
	gatewayGVR        = schema.GroupVersionResource{Group: gatewayGroup, Version: "v1", Resource: "gateways"}
)

// specPerms are the spec's RBAC sentence, plus what gateway mode reads and what
// list_sandbox_templates lists and get_sandbox_metrics reads, and the components' (sandboxes
// built to order, suspend and resume).
var specPerms = append([]perm{
	{claimsGroup, "sandboxclaims", "create"}, {claimsGroup, "sandboxclaims", "get"}, {claimsGroup, "sandboxclaims", "list"},
	{claimsGroup, "sandboxclaims", "watch"}, {claimsGroup, "sandboxclaims", "delete"}, {claimsGroup, "sandboxclaims", "patch"},
	{sandboxGroup, "sandboxes", "get"}, {sandboxGroup, "sandboxes", "list"}, {sandboxGroup, "sandboxes", "watch"},
	{gatewayGroup, "gateways", "get"}, {gatewayGroup, "gateways", "list"}, {gatewayGroup, "gateways", "watch"},
	{claimsGroup, "sandboxwarmpools", "list"}, {claimsGroup, "sandboxtemplates", "list"},
	{metricsGroup, "pods", "get"}, {"", "events", "create"}, {"", "events", "patch"}, {"", "events", "list"},
	{claimsGroup, "sandboxtemplates", "get"}, {claimsGroup, "sandboxtemplates", "create"}, {claimsGroup, "sandboxtemplates", "delete"},
	{claimsGroup, "sandboxwarmpools", "get"}, {claimsGroup, "sandboxwarmpools", "create"}, {claimsGroup, "sandboxwarmpools", "patch"},
	{claimsGroup, "sandboxwarmpools", "delete"}, {sandboxGroup, "sandboxes", "patch"}, {"", "pods", "get"},
}, leasePerms...)

// optionalPerms are granted because the spec lists them; the server works without them:
// list/watch on sandboxes feed the watch cache (without it every call reads the API), and
// list on gateways is never used (one Gateway is read and watched by name); patch on warm pools and
// delete on warm pools and templates keep sandboxes built to order tidy (marking a reused derived
// pool, collecting unused ones: TestCreateToOrder), and a create works without them; events
// are the audit trail (TestPrometheusMetrics reads them), which no tool waits for, and list
// on them only says when an expired sandbox expired (without it: plain "not found"); get on
// pods says why a pod is not running in get_sandbox_status (without it: the Sandbox's word); leases
// tell a stdio process of a fixed owner whether another one is alive (without them its end
// keeps the owner's sandboxes: TestRBACUnderTheRealAPIServer).
var optionalPerms = append([]perm{{sandboxGroup, "sandboxes", "list"}, {sandboxGroup, "sandboxes", "watch"}, {gatewayGroup, "gateways", "list"},
	{claimsGroup, "sandboxwarmpools", "patch"}, {claimsGroup, "sandboxwarmpools", "delete"}, {claimsGroup, "sandboxtemplates", "delete"},
	{"", "events", "create"}, {"", "events", "patch"}, {"", "events", "list"}, {"", "pods", "get"}}, leasePerms...)

// leasePerms are what a stdio process of a fixed owner needs to hold its Lease.
var leasePerms = []perm{{coordinationGroup, "leases", "create"}, {coordinationGroup, "leases", "patch"},
	{coordinationGroup, "leases", "list"}, {coordinationGroup, "leases", "delete"}}

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
// verb is either shown to be needed by TestRBACUnderTheRealAPIServer or listed as optional.
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
	covered := slices.Clone(optionalPerms)
	for _, c := range verbCases() {
		covered = append(covered, c.perm)
	}
	if got, want := permNames(covered), permNames(specPerms); !slices.Equal(got, want) {
		t.Errorf("verbs with a test that shows they are needed, or listed as optional\n got %v\nwant %v", got, want)
	}
}

// shippedNamespace is held by the tests that use deploy/'s namespace and cluster-wide objects
// (TestServerAsAPod deletes the namespace when it ends, TestRBACUnderTheRealAPIServer needs the
// ServiceAccount in it): they run one at a time, each in parallel with everything else.
var shippedNamespace sync.Mutex

// holdShippedNamespace takes shippedNamespace until t and every cleanup registered after this
// call have run.
func holdShippedNamespace(t *testing.T) {
	shippedNamespace.Lock()
	t.Cleanup(shippedNamespace.Unlock)
}

// identity is a ServiceAccount's kubeconfig and RBAC user name.
type identity struct{ kubeconfig, user string }

// applyShipped creates the shipped ServiceAccount and ClusterRoles as they are (updating the
// cluster-scoped ones, which other runs share) and the RoleBindings in ns instead of theirs.
func applyShipped(t *testing.T, m deployManifests, ns string) {
	t.Helper()
	ctx := t.Context()
	// TestServerAsAPod deletes this namespace before; it may still be terminating.
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		cur, err := stack.Kube.CoreV1().Namespaces().Get(ctx, m.sa.Namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = stack.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.sa.Namespace}}, metav1.CreateOptions{})
			return err == nil, nil
		}
		return err == nil && cur.DeletionTimestamp == nil, nil
	})
	if err == nil {
		_, err = stack.Kube.CoreV1().ServiceAccounts(m.sa.Namespace).Create(ctx, &m.sa, metav1.CreateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("service account: %v", err)
	}
	roles := stack.Kube.RbacV1().ClusterRoles()
	for _, cr := range m.roles {
		_, err := roles.Create(ctx, &cr, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var cur *rbacv1.ClusterRole
			// Other runs share it: write only when the manifest changed.
			if cur, err = roles.Get(ctx, cr.Name, metav1.GetOptions{}); err == nil && !reflect.DeepEqual(cur.Rules, cr.Rules) {
				cur.Rules = cr.Rules
				_, err = roles.Update(ctx, cur, metav1.UpdateOptions{})
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
