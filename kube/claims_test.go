package kube

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

func ownedBy(owner string) map[string]string { return map[string]string{testKey: owner} }

func TestOwnershipHidesForeignClaims(t *testing.T) {
	objs := []runtime.Object{
		claimObj(testNS, "mine", ownedBy(testOwner), readyStatus("sb-mine", "10.0.0.1")),
		claimObj(testNS, "theirs", ownedBy("session-2"), readyStatus("sb-theirs")),
		claimObj(testNS, "unlabelled", nil, readyStatus("sb-x")),
		claimObj(testNS, "empty-owner", ownedBy(""), readyStatus("sb-y")),
		sandboxObj(testNS, "sb-mine", "", []string{"10.0.0.1"}, cond("Ready", metav1.ConditionTrue, "DependenciesReady", "Pod is Ready")),
	}
	ops := map[string]func(c *Client, name, owner string) error{
		"Get": func(c *Client, name, owner string) error {
			_, err := c.Get(context.Background(), testNS, name, owner)
			return err
		},
		"Status": func(c *Client, name, owner string) error {
			_, err := c.Status(context.Background(), testNS, name, owner)
			return err
		},
		"Delete": func(c *Client, name, owner string) error { return c.Delete(context.Background(), testNS, name, owner) },
		"Suspend": func(c *Client, name, owner string) error {
			c.suspendWait = time.Millisecond // no controller here to finish the suspension
			_, err := c.Suspend(context.Background(), testNS, name, owner)
			return err
		},
		"Resume": func(c *Client, name, owner string) error {
			_, err := c.Resume(context.Background(), testNS, name, owner, time.Second, nil)
			return err
		},
	}
	tests := []struct {
		claim, owner string
		found        bool
	}{
		{"mine", testOwner, true},
		{"theirs", testOwner, false},
		{"unlabelled", testOwner, false},
		{"missing", testOwner, false},
		{"empty-owner", "", false},
		{"unlabelled", "", false},
	}
	for opName, op := range ops {
		for _, tt := range tests {
			t.Run(opName+"/"+tt.claim+"/"+tt.owner, func(t *testing.T) {
				f := newFakes(t, objs...)
				err := op(f.c, tt.claim, tt.owner)
				if tt.found {
					if err != nil {
						t.Fatalf("%s: %v", opName, err)
					}
					return
				}
				want := `sandbox claim "` + tt.claim + `" not found in namespace "team-a"`
				if !errors.Is(err, ErrNotFound) || err.Error() != want {
					t.Fatalf("err = %v, want ErrNotFound %q", err, want)
				}
				if tt.claim != "missing" && !f.claimExists(t, testNS, tt.claim) {
					t.Error("someone else's claim was deleted")
				}
			})
		}
	}
}

func TestGetFillsSandboxDetails(t *testing.T) {
	tests := []struct {
		name string
		objs []runtime.Object
		want Claim
	}{
		{
			name: "sandbox present",
			objs: []runtime.Object{
				claimObj(testNS, "c", ownedBy(testOwner), readyStatus("sb", "10.0.0.1")),
				sandboxObj(testNS, "sb", "sb.team-a.svc.cluster.local", []string{"10.0.0.8"},
					cond("Ready", metav1.ConditionTrue, "DependenciesReady", "Pod is Ready")),
			},
			want: Claim{SandboxName: "sb", PodIPs: []string{"10.0.0.8"}, ServiceFQDN: "sb.team-a.svc.cluster.local", Ready: true},
		},
		{
			// agent-sandbox v1.0 mirrors serviceFQDN on the claim; the Sandbox's own wins.
			name: "claim mirrors the service name",
			objs: []runtime.Object{
				claimObj(testNS, "c", ownedBy(testOwner), withFQDN(readyStatus("sb", "10.0.0.1"), "sb.team-a.svc.cluster.local")),
				sandboxObj(testNS, "sb", "", []string{"10.0.0.8"}, cond("Ready", metav1.ConditionTrue, "DependenciesReady", "Pod is Ready")),
			},
			want: Claim{SandboxName: "sb", PodIPs: []string{"10.0.0.8"}, ServiceFQDN: "sb.team-a.svc.cluster.local", Ready: true},
		},
		{
			name: "the Sandbox's service name wins over the claim's mirror",
			objs: []runtime.Object{
				claimObj(testNS, "c", ownedBy(testOwner), withFQDN(readyStatus("sb", "10.0.0.1"), "old.team-a.svc.cluster.local")),
				sandboxObj(testNS, "sb", "sb.team-a.svc.cluster.local", []string{"10.0.0.8"}, cond("Ready", metav1.ConditionTrue, "DependenciesReady", "Pod is Ready")),
			},
			want: Claim{SandboxName: "sb", PodIPs: []string{"10.0.0.8"}, ServiceFQDN: "sb.team-a.svc.cluster.local", Ready: true},
		},
		{
			name: "a gone Sandbox's mirrors are dropped",
			objs: []runtime.Object{claimObj(testNS, "c", ownedBy(testOwner), withFQDN(readyStatus("sb", "10.0.0.1"), "sb.team-a.svc.cluster.local"))},
			want: Claim{SandboxName: "sb"},
		},
		{
			name: "sandbox not ready",
			objs: []runtime.Object{
				claimObj(testNS, "c", ownedBy(testOwner), readyStatus("sb")),
				sandboxObj(testNS, "sb", "", nil, cond("Ready", metav1.ConditionFalse, "DependenciesNotReady", "Pod does not exist")),
			},
			want: Claim{SandboxName: "sb"},
		},
		{
			name: "sandbox missing is not an error",
			objs: []runtime.Object{claimObj(testNS, "c", ownedBy(testOwner), readyStatus("sb", "10.0.0.1"))},
			want: Claim{SandboxName: "sb"},
		},
		{
			name: "claim not bound yet",
			objs: []runtime.Object{claimObj(testNS, "c", ownedBy(testOwner), extv1beta1.SandboxClaimStatus{})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, tt.objs...)
			got, err := f.c.Get(context.Background(), testNS, "c", testOwner)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			want := tt.want
			want.Namespace, want.Name, want.WarmPool = testNS, "c", "pool"
			want.Created = got.Created
			if got.Created.IsZero() {
				t.Error("Created not set")
			}
			if got.SandboxName != want.SandboxName || !slices.Equal(got.PodIPs, want.PodIPs) ||
				got.ServiceFQDN != want.ServiceFQDN || got.Ready != want.Ready || got.WarmPool != want.WarmPool {
				t.Errorf("Get = %+v, want %+v", got, want)
			}
		})
	}
}

func TestStatusMapping(t *testing.T) {
	tests := []struct {
		name    string
		claim   extv1beta1.SandboxClaimStatus
		sandbox []metav1.Condition // nil slice with sandboxExists=false: no Sandbox object
		exists  bool
		want    Status
	}{
		{"not bound", extv1beta1.SandboxClaimStatus{}, nil, true,
			Status{Status: "SandboxNotFound", Message: "Sandbox object not found in Kubernetes."}},
		{"sandbox missing", readyStatus("sb"), nil, false,
			Status{Status: "SandboxNotFound", Message: "Sandbox object not found in Kubernetes."}},
		{"ready", readyStatus("sb"), []metav1.Condition{cond("Ready", metav1.ConditionTrue, "DependenciesReady", "Pod is Ready")}, true,
			Status{Status: "SandboxReady", Ready: true, Message: "Pod is Ready"}},
		{"not ready", readyStatus("sb"), []metav1.Condition{cond("Ready", metav1.ConditionFalse, "DependenciesNotReady", "Pod exists with phase: Pending")}, true,
			Status{Status: "SandboxNotReady", Message: "Pod exists with phase: Pending"}},
		{"unknown", readyStatus("sb"), []metav1.Condition{cond("Ready", metav1.ConditionUnknown, "X", "")}, true,
			Status{Status: "SandboxNotReady"}},
		{"no ready condition", readyStatus("sb"), []metav1.Condition{cond("PodScheduled", metav1.ConditionTrue, "PodScheduled", "scheduled")}, true,
			Status{Status: "SandboxNotReady"}},
		{"no conditions", readyStatus("sb"), nil, true, Status{Status: "SandboxNotReady"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{claimObj(testNS, "c", ownedBy(testOwner), tt.claim)}
			if tt.exists && tt.claim.SandboxStatus.Name != "" {
				objs = append(objs, sandboxObj(testNS, tt.claim.SandboxStatus.Name, "", nil, tt.sandbox...))
			}
			f := newFakes(t, objs...)
			got, err := f.c.Status(context.Background(), testNS, "c", testOwner)
			if err != nil {
				t.Fatalf("Status: %v", err)
			}
			if got != tt.want {
				t.Errorf("Status = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestListByOwner(t *testing.T) {
	f := newFakes(t,
		claimObj(testNS, "b", ownedBy(testOwner), readyStatus("sb-b", "10.0.0.2")),
		claimObj(testNS, "a", ownedBy(testOwner), extv1beta1.SandboxClaimStatus{}),
		claimObj(testNS, "c", ownedBy("session-2"), extv1beta1.SandboxClaimStatus{}),
		claimObj("team-b", "z", ownedBy(testOwner), extv1beta1.SandboxClaimStatus{}),
		claimObj("team-b", "y", nil, extv1beta1.SandboxClaimStatus{}),
	)
	names := func(cs []Claim) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Namespace+"/"+c.Name)
		}
		return out
	}
	got, err := f.c.List(context.Background(), testNS, testOwner)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if want := []string{"team-a/a", "team-a/b"}; !slices.Equal(names(got), want) {
		t.Errorf("List = %v, want %v", names(got), want)
	}
	if !got[1].Ready || got[1].SandboxName != "sb-b" || !slices.Equal(got[1].PodIPs, []string{"10.0.0.2"}) || got[0].Ready {
		t.Errorf("List details from claim status wrong: %+v", got)
	}
	all, err := f.c.ListAllNamespaces(context.Background(), testOwner)
	if err != nil {
		t.Fatalf("ListAllNamespaces: %v", err)
	}
	if want := []string{"team-a/a", "team-a/b", "team-b/z"}; !slices.Equal(names(all), want) {
		t.Errorf("ListAllNamespaces = %v, want %v", names(all), want)
	}
	for _, a := range f.ext.Actions() {
		if l, ok := a.(clienttesting.ListAction); ok && l.GetListRestrictions().Labels.String() != testKey+"="+testOwner {
			t.Errorf("list selector = %q, want the owner label", l.GetListRestrictions().Labels)
		}
	}
	if _, err := f.c.List(context.Background(), testNS, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("List with empty owner: err = %v, want ErrInvalid", err)
	}
}

func TestListForbiddenKeepsAPIError(t *testing.T) {
	f := newFakes(t)
	f.ext.PrependReactor("list", "sandboxclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(claimsGVR.GroupResource(), "", errors.New("cluster scope denied"))
	})
	if _, err := f.c.ListAllNamespaces(context.Background(), testOwner); !apierrors.IsForbidden(err) {
		t.Errorf("ListAllNamespaces err = %v, want Forbidden", err)
	}
	if err := f.c.Probe(context.Background(), testNS); !apierrors.IsForbidden(err) {
		t.Errorf("Probe err = %v, want Forbidden", err)
	}
}

func TestProbeListsOneClaim(t *testing.T) {
	f := newFakes(t)
	if err := f.c.Probe(context.Background(), testNS); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	acts := f.ext.Actions()
	if len(acts) != 1 {
		t.Fatalf("Probe made %d calls, want 1", len(acts))
	}
	l, ok := acts[0].(clienttesting.ListActionImpl)
	if !ok || l.GetNamespace() != testNS || l.ListOptions.Limit != 1 {
		t.Errorf("Probe call = %#v, want a limit-1 list in %s", acts[0], testNS)
	}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name     string
		reaction func(clienttesting.Action) (bool, runtime.Object, error)
		wantErr  bool
	}{
		{"deletes", nil, false},
		{"vanished before DELETE", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewNotFound(claimsGVR.GroupResource(), "c")
		}, false},
		{"forbidden", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(claimsGVR.GroupResource(), "c", errors.New("no"))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, claimObj(testNS, "c", ownedBy(testOwner), readyStatus("sb")))
			if tt.reaction != nil {
				f.ext.PrependReactor("delete", "sandboxclaims", tt.reaction)
			}
			err := f.c.Delete(context.Background(), testNS, "c", testOwner)
			if tt.wantErr {
				if !apierrors.IsForbidden(err) {
					t.Fatalf("err = %v, want Forbidden kept", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if tt.reaction == nil && f.claimExists(t, testNS, "c") {
				t.Error("claim still exists")
			}
			for _, a := range f.ext.Actions() {
				if d, ok := a.(clienttesting.DeleteAction); ok {
					if p := d.GetDeleteOptions().PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
						t.Errorf("propagation = %v, want Background", p)
					}
				}
			}
		})
	}
}

func TestLabelValidators(t *testing.T) {
	keys := map[string]bool{
		"team": true, "mcp.k8s-agent-sandbox/session-id": true, "a/b/c": false, "": false, "bad key": false,
		"-x": false, "example.com/": false,
	}
	for k, want := range keys {
		if got := ValidLabelKey(k); got != want {
			t.Errorf("ValidLabelKey(%q) = %v, want %v", k, got, want)
		}
	}
	values := map[string]bool{"": true, "abc-1.2_3": true, "-x": false, "a b": false, "01234567890123456789012345678901234567890123456789012345678901234": false}
	for v, want := range values {
		if got := ValidLabelValue(v); got != want {
			t.Errorf("ValidLabelValue(%q) = %v, want %v", v, got, want)
		}
	}
}
