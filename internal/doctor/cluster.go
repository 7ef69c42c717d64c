package doctor

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The agent-sandbox API the server uses: these resources at this version (kube/ is built on
// the v1beta1 clients).
const servedVersion = "v1beta1"

var wantResources = []struct{ group, resource string }{
	{"agents.x-k8s.io", "sandboxes"},
	{"extensions.agents.x-k8s.io", "sandboxclaims"},
	{"extensions.agents.x-k8s.io", "sandboxtemplates"},
	{"extensions.agents.x-k8s.io", "sandboxwarmpools"},
}

// Where upstream's release manifests put the controller (k8s/controller.yaml), and its
// leader-election Lease (cmd/agent-sandbox-controller: LeaderElectionID, in its own namespace).
const (
	controllerNamespace  = "agent-sandbox-system"
	controllerDeployment = "agent-sandbox-controller"
	controllerLease      = "a3317529.agent-sandbox.x-k8s.io"
	// leaseFresh is how recently a leader must have renewed to count as alive (controller-
	// runtime renews every 10 s by default and gives up after 15 s).
	leaseFresh = time.Minute
	metricsGV  = "metrics.k8s.io/v1beta1"
)

// agentSandboxVersion is the agent-sandbox module this binary is built against (go.mod is
// its one owner), for install advice.
func agentSandboxVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "sigs.k8s.io/agent-sandbox" {
				return d.Version
			}
		}
	}
	return ""
}

func installAdvice() string {
	url := "https://github.com/kubernetes-sigs/agent-sandbox/releases/latest/download/sandbox-with-extensions.yaml"
	if v := agentSandboxVersion(); v != "" {
		url = "https://github.com/kubernetes-sigs/agent-sandbox/releases/download/" + v + "/sandbox-with-extensions.yaml"
	}
	return "install agent-sandbox with its extensions: kubectl apply -f " + url
}

func checkAPI(ctx context.Context, env Env) Result {
	r := Result{Check: CheckAPI}
	v, err := env.Kube.Discovery().ServerVersion()
	if err != nil {
		r.Status, r.Message = Fail, fmt.Sprintf("the API server %s does not answer as user %q: %v", env.Server, env.User, err)
		r.Fix = "check the kubeconfig (--kubeconfig, --context), that the API server is up, and the user's credentials"
		return r
	}
	r.Status, r.Message = OK, fmt.Sprintf("API server %s (Kubernetes %s) answers", env.Server, v.GitVersion)
	if env.User != "" {
		r.Message += " as user " + env.User
	}
	return r
}

func checkCRDs(ctx context.Context, env Env) Result {
	r := Result{Check: CheckCRDs}
	groups, err := env.Kube.Discovery().ServerGroups()
	if err != nil {
		r.Status, r.Message, r.Fix = Fail, "reading the API groups: "+err.Error(), "check that the API server is healthy"
		return r
	}
	served := map[string][]string{}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			served[g.Name] = append(served[g.Name], v.Version)
		}
	}
	var missing, found []string
	for _, w := range wantResources {
		name := w.resource + "." + w.group
		if !slices.Contains(served[w.group], servedVersion) {
			if vs := served[w.group]; len(vs) > 0 {
				missing = append(missing, fmt.Sprintf("%s (serves %s, not %s)", name, strings.Join(vs, ", "), servedVersion))
			} else {
				missing = append(missing, name)
			}
			continue
		}
		list, err := env.Kube.Discovery().ServerResourcesForGroupVersion(w.group + "/" + servedVersion)
		if err != nil || !slices.ContainsFunc(list.APIResources, func(a metav1.APIResource) bool { return a.Name == w.resource }) {
			missing = append(missing, name)
			continue
		}
		found = append(found, fmt.Sprintf("%s (%s)", name, strings.Join(served[w.group], ", ")))
	}
	if len(missing) > 0 {
		r.Status, r.Message = Fail, "missing: "+strings.Join(missing, ", ")+": every tool fails"
		r.Fix = installAdvice()
		return r
	}
	r.Status, r.Message = OK, "served: "+strings.Join(found, ", ")
	return r
}

// checkController looks for the controller where upstream's manifests put it, then for its
// leader Lease. A controller run otherwise (outside the cluster, without leader election)
// leaves no trace the API shows: that is a WARN, and --probe proves it by a bound claim.
func checkController(ctx context.Context, env Env) Result {
	r := Result{Check: CheckController}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var seen []string
	d, err := env.Kube.AppsV1().Deployments(controllerNamespace).Get(ctx, controllerDeployment, metav1.GetOptions{})
	switch {
	case err == nil:
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		name := "Deployment " + controllerNamespace + "/" + controllerDeployment
		if d.Status.AvailableReplicas > 0 {
			r.Status, r.Message = OK, fmt.Sprintf("%s: %d of %d replicas available", name, d.Status.AvailableReplicas, want)
			return r
		}
		r.Status, r.Message = Fail, fmt.Sprintf("%s has no available replica (%d wanted): no claim gets a sandbox", name, want)
		r.Fix = "kubectl -n " + controllerNamespace + " describe deployment " + controllerDeployment + " (and its pods' logs)"
		return r
	default:
		seen = append(seen, "Deployment "+controllerNamespace+"/"+controllerDeployment+": "+reason(err))
	}
	l, err := env.Kube.CoordinationV1().Leases(controllerNamespace).Get(ctx, controllerLease, metav1.GetOptions{})
	switch {
	case err == nil && l.Spec.RenewTime != nil:
		age := time.Since(l.Spec.RenewTime.Time).Round(time.Second)
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if age <= leaseFresh {
			r.Status, r.Message = OK, fmt.Sprintf("leader Lease %s/%s renewed %s ago by %s", controllerNamespace, controllerLease, age, holder)
			return r
		}
		r.Status, r.Message = Fail, fmt.Sprintf("leader Lease %s/%s last renewed %s ago (by %s): no controller is leading", controllerNamespace, controllerLease, age, holder)
		r.Fix = "start the agent-sandbox controller (kubectl -n " + controllerNamespace + " get pods)"
		return r
	case err == nil:
		seen = append(seen, "leader Lease: never renewed")
	default:
		seen = append(seen, "leader Lease "+controllerLease+": "+reason(err))
	}
	// Last, what the controller leaves behind: warm pools it filled. Evidence that it ran,
	// not that it runs now (which --probe shows).
	ready, where := readyInPools(ctx, env)
	if ready > 0 {
		r.Status = OK
		r.Message = fmt.Sprintf("no Deployment or leader Lease visible (%s), but warm pools hold %d sandboxes the controller readied (%s): it ran; --probe shows it binds claims now",
			strings.Join(seen, "; "), ready, where)
		return r
	}
	r.Status = Warn
	r.Message = "cannot tell from the API whether the controller runs (" + strings.Join(seen, "; ") +
		"; no warm pool has a ready sandbox): it may run elsewhere or without leader election"
	r.Fix = "run doctor with --probe, which needs the controller to bind a claim; or " + installAdvice()
	return r
}

// readyInPools counts the ready sandboxes the served namespaces' warm pools report.
func readyInPools(ctx context.Context, env Env) (int32, string) {
	var n int32
	var where []string
	for _, ns := range env.namespaces() {
		pools, err := env.Extensions.ExtensionsV1beta1().SandboxWarmPools(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, p := range pools.Items {
			if p.Status.ReadyReplicas > 0 {
				n += p.Status.ReadyReplicas
				where = append(where, ns+"/"+p.Name)
			}
		}
	}
	return n, strings.Join(where, ", ")
}

// reason is an API error in a few words.
func reason(err error) string {
	switch {
	case apierrors.IsNotFound(err):
		return "not found"
	case apierrors.IsForbidden(err):
		return "not readable with these credentials"
	}
	return err.Error()
}

func checkMetrics(ctx context.Context, env Env) Result {
	r := Result{Check: CheckMetrics}
	if env.NoMetricsTool {
		r.Status, r.Message = OK, "not needed: the settings leave the metrics toolset (get_sandbox_metrics) out"
		return r
	}
	list, err := env.Kube.Discovery().ServerResourcesForGroupVersion(metricsGV)
	fix := "install metrics-server (kubectl apply -f https://github.com/kubernetes-sigs/metrics-server/releases/latest/download/components.yaml), " +
		"or leave the metrics toolset out (--toolsets, K8S_SANDBOX_TOOLSETS)"
	switch {
	case apierrors.IsNotFound(err):
		r.Status, r.Message, r.Fix = Fail, metricsGV+" is not served: get_sandbox_metrics falls back to reading inside each sandbox", fix
	case err != nil:
		r.Status, r.Message, r.Fix = Fail, metricsGV+" does not answer ("+err.Error()+"): get_sandbox_metrics falls back to reading inside each sandbox", fix
	case !slices.ContainsFunc(list.APIResources, func(a metav1.APIResource) bool { return a.Name == "pods" }):
		r.Status, r.Message, r.Fix = Fail, metricsGV+" serves no pods resource", fix
	default:
		r.Status, r.Message = OK, metricsGV+" serves pods (get_sandbox_metrics)"
	}
	return r
}
