package doctor

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// Verb is one RBAC verb the server uses, the component of deploy/ that grants it, and what
// breaks without it (deploy/README.md's table says the same; rbac_test.go checks this table
// against the ClusterRoles in deploy/, rule for rule).
type Verb struct {
	Component string // "" for deploy/rbac.yaml, else deploy/<component>/rbac.yaml
	Group     string
	Resource  string
	Verb      string
	// Needed: without it a tool fails (FAIL); else the server works, degraded (WARN).
	Needed bool
	Breaks string
}

// Components of deploy/ with RBAC of their own, and where their RoleBinding goes.
const (
	componentBase    = ""
	componentSuspend = "suspend"
	componentCustom  = "custom-sandboxes"
	componentGateway = "gateway"
)

const (
	claimsGroup  = "extensions.agents.x-k8s.io"
	sandboxGroup = "agents.x-k8s.io"
)

// Verbs is every verb the shipped ClusterRoles grant.
var Verbs = []Verb{
	{componentBase, claimsGroup, "sandboxclaims", "create", true, "create_sandbox"},
	{componentBase, claimsGroup, "sandboxclaims", "get", true, "every tool on a sandbox (ownership check)"},
	{componentBase, claimsGroup, "sandboxclaims", "list", true, "list_sandboxes, /readyz, the per-owner cap, cleanup at session end, the watch cache"},
	{componentBase, claimsGroup, "sandboxclaims", "watch", true, "create_sandbox (waiting for ready), the watch cache"},
	{componentBase, claimsGroup, "sandboxclaims", "delete", true, "delete_sandbox, cleanup of failed creates and ended sessions"},
	{componentBase, claimsGroup, "sandboxclaims", "patch", true, "expose_port, unexpose_port, extend_sandbox, renewal on use"},
	{componentBase, sandboxGroup, "sandboxes", "get", true, "create_sandbox, get_sandbox_status, every tool that reaches a sandbox"},
	{componentBase, sandboxGroup, "sandboxes", "list", false, "the watch cache (every call then reads the API)"},
	{componentBase, sandboxGroup, "sandboxes", "watch", false, "the watch cache (every call then reads the API)"},
	{componentBase, claimsGroup, "sandboxwarmpools", "list", true, "list_sandbox_templates, create_sandbox's hint naming the pools"},
	{componentBase, claimsGroup, "sandboxtemplates", "list", true, "list_sandbox_templates"},
	{componentBase, "metrics.k8s.io", "pods", "get", true, "get_sandbox_metrics from metrics-server (it falls back to reading inside the sandbox)"},
	{componentBase, "", "pods", "get", false, "get_sandbox_status saying why a pod is not running (evicted, killed, an image it cannot pull)"},
	{componentBase, "", "events", "create", false, "the audit trail (Events on claims)"},
	{componentBase, "", "events", "patch", false, "the audit trail (Events on claims)"},
	{componentBase, "", "events", "list", false, "saying when an expired sandbox expired"},
	{componentBase, "coordination.k8s.io", "leases", "create", false, "stdio with K8S_SANDBOX_STDIO_OWNER: holding its Lease"},
	{componentBase, "coordination.k8s.io", "leases", "patch", false, "stdio with K8S_SANDBOX_STDIO_OWNER: holding its Lease"},
	{componentBase, "coordination.k8s.io", "leases", "list", false, "stdio with K8S_SANDBOX_STDIO_OWNER: holding its Lease"},
	{componentBase, "coordination.k8s.io", "leases", "delete", false, "stdio with K8S_SANDBOX_STDIO_OWNER: holding its Lease"},
	{componentSuspend, sandboxGroup, "sandboxes", "patch", false, "suspend_sandbox, resume_sandbox (component deploy/suspend/)"},
	{componentCustom, claimsGroup, "sandboxtemplates", "get", true, "create_sandbox with image, cpus or memory"},
	{componentCustom, claimsGroup, "sandboxtemplates", "create", true, "create_sandbox with image, cpus or memory"},
	{componentCustom, claimsGroup, "sandboxtemplates", "delete", false, "collecting unused derived templates"},
	{componentCustom, claimsGroup, "sandboxwarmpools", "get", true, "create_sandbox with image, cpus or memory"},
	{componentCustom, claimsGroup, "sandboxwarmpools", "create", true, "create_sandbox with image, cpus or memory"},
	{componentCustom, claimsGroup, "sandboxwarmpools", "patch", false, "marking reused derived pools"},
	{componentCustom, claimsGroup, "sandboxwarmpools", "delete", false, "collecting unused derived pools"},
	{componentGateway, "gateway.networking.k8s.io", "gateways", "get", true, "every tool that reaches a sandbox (the Gateway's address)"},
	{componentGateway, "gateway.networking.k8s.io", "gateways", "list", false, "nothing (granted for completeness)"},
	{componentGateway, "gateway.networking.k8s.io", "gateways", "watch", true, "waiting for a Gateway that has no address yet"},
}

// scope is where the server uses a verb under env's settings; nil: not used.
func (v Verb) scope(env Env) []string {
	switch {
	case v.Component == componentGateway:
		if env.Config.Connection.Type != conn.TypeGateway {
			return nil
		}
		return []string{env.Config.Connection.GatewayNamespace}
	case v.Component == componentCustom && len(env.Config.Custom.AllowedImages) == 0:
		return nil
	case v.Group == "metrics.k8s.io" && env.NoMetricsTool:
		return nil
	case v.Resource == "leases":
		return []string{env.Namespace} // stdio's Lease lives in the default namespace
	}
	return env.namespaces()
}

// checkRBAC asks the API server, with a SelfSubjectAccessReview per verb and namespace,
// whether the identity in use may do what the server does.
func checkRBAC(ctx context.Context, env Env) Result {
	r := Result{Check: CheckRBAC, Status: OK}
	var missing, errs []string
	asked := 0
	for _, v := range Verbs {
		for _, ns := range v.scope(env) {
			asked++
			allowed, err := allowed(ctx, env, v, ns)
			switch {
			case err != nil:
				errs = append(errs, fmt.Sprintf("%s/%s in %s: %v", v.Resource, v.Verb, ns, err))
			case !allowed:
				missing = append(missing, fmt.Sprintf("%s %s in %s (breaks %s)", v.Verb, v.Resource, ns, v.Breaks))
				if v.Needed {
					r.Status = Fail
				} else if r.Status == OK {
					r.Status = Warn
				}
			}
		}
	}
	switch {
	case len(errs) > 0:
		r.Status, r.Message = Fail, "SelfSubjectAccessReview failed: "+strings.Join(errs, "; ")
		r.Fix = "check that the API server serves authorization.k8s.io/v1"
	case len(missing) > 0:
		r.Message = "missing: " + strings.Join(missing, "; ")
		r.Fix = "bind the ClusterRoles of deploy/rbac.yaml (and of the components in use) to this identity with a RoleBinding in each namespace named"
	default:
		r.Message = fmt.Sprintf("all %d verbs the server uses are allowed", asked)
		if env.User != "" {
			r.Message += " for " + env.User
		}
	}
	return r
}

func allowed(ctx context.Context, env Env, v Verb, ns string) (bool, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: v.Verb, Group: v.Group, Resource: v.Resource}}}
	res, err := env.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return res.Status.Allowed, nil
}
