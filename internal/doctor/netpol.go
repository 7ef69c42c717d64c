package doctor

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// policyEngines are DaemonSet names (as their own manifests name them) of the engines that
// enforce NetworkPolicy. The API has no field saying whether NetworkPolicy is enforced, so an
// engine's workload is the only evidence it shows.
var policyEngines = []string{
	"calico-node", "cilium", "kube-router", "antrea-agent", "weave-net", "canal",
	"kube-network-policies", "anetd", "azure-npm", "romana-agent",
}

const netpolFix = "make sure the cluster enforces NetworkPolicy (an engine such as Calico, Cilium or kube-router): the example templates' policy isolates sandboxes only then"

// nonEnforcing are network plugins that do not enforce NetworkPolicy by themselves.
var nonEnforcing = []string{"kube-flannel", "flannel"}

// checkNetworkPolicy reports what the probe's sandbox could reach when --probe ran (the one
// test of enforcement itself), else a known engine's DaemonSet, else that the API cannot tell
// (an engine running as a host process, as on a hand-built node, leaves no object).
func checkNetworkPolicy(ctx context.Context, env Env, eg egress) Result {
	r := engines(ctx, env)
	if r.Status == Fail || !eg.tested {
		return r
	}
	if eg.reached {
		return Result{Check: CheckNetPol, Status: Warn, Fix: netpolFix,
			Message: fmt.Sprintf("the probe's sandbox (pool %s) reached the API server's Service at %s (%d tries, %s apart): NetworkPolicy is not enforced, or the pool's template does not deny it (the example templates' policy does)", eg.pool, eg.addr, egressTries, egressGap)}
	}
	return Result{Check: CheckNetPol, Status: OK,
		Message: fmt.Sprintf("enforced: the probe's sandbox (pool %s) could not connect to the API server's Service at %s, which its NetworkPolicy denies", eg.pool, eg.addr)}
}

// engines looks for a NetworkPolicy engine's DaemonSet.
func engines(ctx context.Context, env Env) Result {
	r := Result{Check: CheckNetPol}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	fix := netpolFix
	ds, err := env.Kube.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		r.Status, r.Fix = Warn, fix
		r.Message = "cannot tell from the API: listing DaemonSets (where NetworkPolicy engines run) failed: " + reason(err)
		return r
	}
	var engines, plain []string
	for _, d := range ds.Items {
		for _, name := range policyEngines {
			// A DaemonSet scheduled on no node (a Windows sister of a Linux cluster's engine,
			// azure-npm-win, calico-node-windows) neither enforces nor is down.
			if (d.Name == name || strings.HasPrefix(d.Name, name+"-")) && d.Status.DesiredNumberScheduled > 0 {
				engines = append(engines, fmt.Sprintf("%s (DaemonSet %s/%s, %d of %d ready)", name, d.Namespace, d.Name, d.Status.NumberReady, d.Status.DesiredNumberScheduled))
				if d.Status.NumberReady == 0 {
					r.Status = Fail
				}
			}
		}
		for _, name := range nonEnforcing {
			if d.Name == name || strings.HasPrefix(d.Name, name+"-") {
				plain = append(plain, d.Namespace+"/"+d.Name)
			}
		}
	}
	switch {
	case r.Status == Fail:
		r.Message, r.Fix = "NetworkPolicy engine not running: "+strings.Join(engines, ", "), "kubectl describe the engine's DaemonSet and its pods"
	case len(engines) > 0:
		r.Status, r.Message = OK, "enforced by "+strings.Join(engines, ", ")
	case len(plain) > 0:
		r.Status, r.Message, r.Fix = Warn, "the network plugin ("+strings.Join(plain, ", ")+") does not enforce NetworkPolicy, and no engine's DaemonSet is running", fix
	default:
		r.Status, r.Fix = Warn, fix
		r.Message = "cannot tell from the API: no DaemonSet of a known NetworkPolicy engine (" + strings.Join(policyEngines, ", ") +
			"); one running as a host process, or a managed cluster's built-in one, is invisible here"
	}
	return r
}
