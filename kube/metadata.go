package kube

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ServerDomain is this server's own label and annotation domain (owner, principal, ports).
const ServerDomain = "mcp.k8s-agent-sandbox"

// reservedDomains are the domains no caller may set a label or annotation in: this server's
// and agent-sandbox's (agents.x-k8s.io and its subdomains, such as extensions.agents.x-k8s.io),
// whose keys the server and the controller read as their own facts about a sandbox.
var reservedDomains = []string{ServerDomain, "agents.x-k8s.io"}

// DefaultDeniedMetadataKeys are pod label and annotation keys that change a sandbox's
// networking, mesh membership, isolation or security profile rather than describe it:
//   - another CNI network (Multus); a mesh sidecar, its traffic capture or ambient redirection
//     (Istio, Linkerd, Kuma, Consul); a CNI's own address or policy hints (Calico, Cilium,
//     including Cilium's legacy dotted keys such as io.cilium.proxy-visibility);
//   - the container runtime's own keys, which containerd and CRI-O pass to the runtime when
//     its handler allows pod annotations and which then reconfigure the sandbox's isolation
//     (Kata's hypervisor and kernel settings, gVisor's runsc flags and mounts, CRI-O's user
//     namespace and devices, containerd's and its CRI plugin's, such as the legacy
//     untrusted-workload switch);
//   - the legacy AppArmor and seccomp annotations ("unconfined" drops the profile) and an
//     OpenShift security context;
//   - the node autoscalers' eviction keys, with which a sandbox would pin its node against
//     scale-down (cluster-autoscaler's safe-to-evict, Karpenter's do-not-disrupt).
//
// Runtime keys have no "/" (io.katacontainers.config.hypervisor.kernel_params), so they are
// prefixes ending in "."; a domain is a prefix ending in "/".
var DefaultDeniedMetadataKeys = []string{
	"k8s.v1.cni.cncf.io/*", "v1.multus-cni.io/*",
	"sidecar.istio.io/*", "traffic.sidecar.istio.io/*", "proxy.istio.io/*", "istio.io/*", "ambient.istio.io/*",
	"linkerd.io/*", "config.linkerd.io/*", "config.alpha.linkerd.io/*",
	"kuma.io/*", "consul.hashicorp.com/*",
	"cni.projectcalico.org/*", "io.cilium/*", "io.cilium.*", "policy.cilium.io/*",
	"io.katacontainers.*", "dev.gvisor.*", "io.kubernetes.cri-o.*", "io.containerd.*", "io.kubernetes.cri.*",
	"container.apparmor.security.beta.kubernetes.io/*", "seccomp.security.alpha.kubernetes.io/*",
	"openshift.io/scc",
	"cluster-autoscaler.kubernetes.io/*", "karpenter.sh/do-not-disrupt",
}

// MetadataPolicy is the operator's rule for create_sandbox's labels, pod_labels and pod_annotations keys.
// An entry is an exact key, or a prefix when it ends in "*" ("sidecar.istio.io/*").
type MetadataPolicy struct {
	Allowed []string // when not empty, the only keys allowed
	Denied  []string // refused even when Allowed matches
}

// WithMetadataPolicy sets the rule for pod label and annotation keys (default DefaultMetadataPolicy).
func WithMetadataPolicy(p MetadataPolicy) Option { return func(o *options) { o.metadata = &p } }

// DefaultMetadataPolicy denies DefaultDeniedMetadataKeys and allows the rest.
func DefaultMetadataPolicy() MetadataPolicy {
	return MetadataPolicy{Denied: slices.Clone(DefaultDeniedMetadataKeys)}
}

func matchKey(patterns []string, key string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(key, prefix) || p == key {
			return true
		}
	}
	return false
}

// check explains why a pod label or annotation key is refused, or returns "".
func (p MetadataPolicy) check(key string) string {
	if matchKey(p.Denied, key) {
		return "this server refuses it (it would change the sandbox's networking, mesh, runtime isolation, security or eviction, not describe it); leave it out"
	}
	if len(p.Allowed) > 0 && !matchKey(p.Allowed, key) {
		return "this server allows only " + strings.Join(p.Allowed, ", ")
	}
	return ""
}

// reservedDomain returns the reserved domain a key is in, or "".
func reservedDomain(key string) string {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return ""
	}
	for _, r := range reservedDomains {
		if domain == r || strings.HasSuffix(domain, "."+r) {
			return r
		}
	}
	return ""
}

// checkMetadata refuses claim labels, pod labels and pod annotations in the reserved domains,
// and pod keys the operator's policy refuses.
func (c *Client) checkMetadata(req CreateRequest) []error {
	var errs []error
	for _, set := range []struct {
		what string
		m    map[string]string
	}{{"label", req.Labels}, {"pod label", req.PodLabels}, {"pod annotation", req.PodAnnotations}} {
		for _, k := range slices.Sorted(maps.Keys(set.m)) {
			if d := reservedDomain(k); d != "" {
				errs = append(errs, fmt.Errorf("%s %q is in the domain %s, which is reserved for the server and agent-sandbox", set.what, k, d))
			} else if why := c.metadata.check(k); why != "" {
				errs = append(errs, fmt.Errorf("%s %q: %s", set.what, k, why))
			}
		}
	}
	return errs
}
