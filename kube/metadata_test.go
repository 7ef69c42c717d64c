package kube

import (
	"context"
	"errors"
	"testing"
)

func TestMetadataPolicy(t *testing.T) {
	tests := []struct {
		name   string
		policy MetadataPolicy
		key    string
		refuse bool
	}{
		{"default allows a plain key", DefaultMetadataPolicy(), "example.com/team", false},
		{"default denies by prefix", DefaultMetadataPolicy(), "linkerd.io/inject", true},
		{"default denies an exact key", DefaultMetadataPolicy(), "openshift.io/scc", true},
		{"exact entry is not a prefix", DefaultMetadataPolicy(), "openshift.io/scc-x", false},
		{"default denies Kata's hypervisor settings", DefaultMetadataPolicy(), "io.katacontainers.config.hypervisor.kernel_params", true},
		{"default denies CRI-O's user namespace", DefaultMetadataPolicy(), "io.kubernetes.cri-o.userns-mode", true},
		{"default denies CRI-O's devices", DefaultMetadataPolicy(), "io.kubernetes.cri-o.Devices", true},
		{"default denies gVisor's flags", DefaultMetadataPolicy(), "dev.gvisor.flag.network", true},
		{"default denies containerd's keys", DefaultMetadataPolicy(), "io.containerd.runc.v2.group", true},
		{"default denies containerd CRI's untrusted workload", DefaultMetadataPolicy(), "io.kubernetes.cri.untrusted-workload", true},
		{"default denies Cilium's legacy proxy visibility", DefaultMetadataPolicy(), "io.cilium.proxy-visibility", true},
		{"default denies Cilium's slash keys", DefaultMetadataPolicy(), "io.cilium/egress-gateway", true},
		{"default denies Istio's ambient redirection", DefaultMetadataPolicy(), "ambient.istio.io/redirection", true},
		{"default denies the autoscaler's safe-to-evict", DefaultMetadataPolicy(), "cluster-autoscaler.kubernetes.io/safe-to-evict", true},
		{"default denies Karpenter's do-not-disrupt", DefaultMetadataPolicy(), "karpenter.sh/do-not-disrupt", true},
		{"default denies legacy AppArmor", DefaultMetadataPolicy(), "container.apparmor.security.beta.kubernetes.io/sandbox", true},
		{"default denies legacy seccomp", DefaultMetadataPolicy(), "seccomp.security.alpha.kubernetes.io/pod", true},
		{"a runtime prefix is not a lookalike domain", DefaultMetadataPolicy(), "io.containerdish.example/x", false},
		{"a plain key under kubernetes.io's other domains", DefaultMetadataPolicy(), "app.kubernetes.io/name", false},
		{"allowlist admits its prefix", MetadataPolicy{Allowed: []string{"example.com/*"}}, "example.com/a", false},
		{"allowlist refuses the rest", MetadataPolicy{Allowed: []string{"example.com/*"}}, "other.org/a", true},
		{"deny wins over allow", MetadataPolicy{Allowed: []string{"*"}, Denied: []string{"example.com/secret"}}, "example.com/secret", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.check(tt.key) != ""; got != tt.refuse {
				t.Errorf("check(%q) refuses = %v, want %v", tt.key, got, tt.refuse)
			}
		})
	}
}

func TestMetadataPolicyOption(t *testing.T) {
	f := newFakes(t)
	f.c.metadata = MetadataPolicy{Allowed: []string{"example.com/*"}}
	req := CreateRequest{Namespace: testNS, WarmPool: "pool", Owner: testOwner, PodLabels: map[string]string{"other.org/a": "b"}}
	if _, err := f.c.Create(context.Background(), req); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Create with a key outside the allowlist: %v, want ErrInvalid", err)
	}
}
