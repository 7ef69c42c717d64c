package doctor

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// derivedPoolValue marks the pools the server derives for sandboxes built to order: they
// have no replicas by design, so they are not the operator's pools to check.
const derivedPoolValue = "k8s-sandbox-mcp"

// checkPools: in every namespace the server serves, each warm pool (or only the pinned one)
// has its template and at least one ready sandbox, which create_sandbox claims at once.
func checkPools(ctx context.Context, env Env) Result {
	r := Result{Check: CheckPools, Status: OK}
	var good, bad, fixes []string
	for _, ns := range env.namespaces() {
		g, b, f := poolsIn(ctx, env, ns)
		good, bad, fixes = append(good, g...), append(bad, b...), append(fixes, f...)
	}
	if len(bad) > 0 {
		r.Status, r.Message, r.Fix = Fail, strings.Join(bad, "; "), strings.Join(fixes, "; ")
		if len(good) > 0 {
			r.Message += " (ready: " + strings.Join(good, ", ") + ")"
		}
		return r
	}
	r.Message = "ready sandboxes: " + strings.Join(good, ", ")
	return r
}

// poolsIn returns the namespace's pools that are fine, those that are not, and the fixes.
func poolsIn(ctx context.Context, env Env, ns string) (good, bad, fixes []string) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	ext := env.Extensions.ExtensionsV1beta1()
	pools, err := ext.SandboxWarmPools(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, []string{fmt.Sprintf("namespace %s: listing warm pools: %s", ns, reason(err))},
			[]string{"grant list on sandboxwarmpools in " + ns + " (deploy/rbac.yaml's RoleBinding)"}
	}
	templates, err := ext.SandboxTemplates(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, []string{fmt.Sprintf("namespace %s: listing templates: %s", ns, reason(err))},
			[]string{"grant list on sandboxtemplates in " + ns + " (deploy/rbac.yaml's RoleBinding)"}
	}
	haveTemplate := map[string]bool{}
	for _, t := range templates.Items {
		haveTemplate[t.Name] = true
	}
	pin := env.Config.PinWarmpool
	seen := 0
	for _, p := range pools.Items {
		if p.Labels[kube.ManagedByLabel] == derivedPoolValue || (pin != "" && p.Name != pin) {
			continue
		}
		seen++
		want := int32(1)
		if p.Spec.Replicas != nil {
			want = *p.Spec.Replicas
		}
		name := ns + "/" + p.Name
		switch {
		case !haveTemplate[p.Spec.TemplateRef.Name]:
			bad = append(bad, fmt.Sprintf("pool %s names template %q, which does not exist: its claims fail", name, p.Spec.TemplateRef.Name))
			fixes = append(fixes, fmt.Sprintf("create SandboxTemplate %s in %s (deploy/examples/sandbox-pools.yaml)", p.Spec.TemplateRef.Name, ns))
		case want == 0:
			bad = append(bad, fmt.Sprintf("pool %s is scaled to zero: create_sandbox from it waits for a cold pod", name))
			fixes = append(fixes, fmt.Sprintf("kubectl -n %s scale sandboxwarmpool %s --replicas=2", ns, p.Name))
		case p.Status.ReadyReplicas == 0:
			bad = append(bad, fmt.Sprintf("pool %s has none of %d sandboxes ready: create_sandbox from it waits or times out", name, want))
			fixes = append(fixes, fmt.Sprintf("kubectl -n %s describe sandboxwarmpool %s, and its pods' events (image pull? resources?)", ns, p.Name))
		default:
			good = append(good, fmt.Sprintf("%s %d/%d", name, p.Status.ReadyReplicas, want))
		}
	}
	if seen == 0 {
		what := "no warm pool"
		if pin != "" {
			what = "no warm pool " + pin + " (K8S_SANDBOX_PIN__WARMPOOL)"
		}
		bad = append(bad, fmt.Sprintf("namespace %s has %s: create_sandbox has nothing to claim", ns, what))
		fixes = append(fixes, "kubectl -n "+ns+" apply -f deploy/examples/sandbox-pools.yaml")
	}
	return good, bad, fixes
}
