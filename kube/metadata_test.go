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
