package kube

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// Issue 30.3: what one process created, another process (a restart, a replica) of the same
// owner lists and uses, reading only the API: nothing of it lives in the first one's memory.
func TestAnotherProcessOfTheOwnerFindsItsClaims(t *testing.T) {
	f := newFakes(t, sandboxObj(testNS, "pool-abcde", "", []string{"10.0.0.9"}, cond("Ready", metav1.ConditionTrue, "DependenciesReady", "")))
	done := f.controller(f.createdNames(), f.status(readyStatus("pool-abcde", "10.0.0.9")))
	req := CreateRequest{Namespace: testNS, WarmPool: "pool", Owner: testOwner, Labels: map[string]string{"team": "a"},
		RequestID: "job-1", ShutdownAfter: ptr(time.Hour), ReadyTimeout: 10 * time.Second}
	made, err := f.c.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	checkController(t, done)

	restarted := NewFromClients(f.ext, f.core, f.dyn, testKey)
	list, err := restarted.List(context.Background(), testNS, testOwner)
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	c := list[0]
	if c.Name != made.Name || c.RequestID != "job-1" || c.WarmPool != "pool" || !c.Ready || c.Suspended ||
		len(c.Labels) != 1 || c.Labels["team"] != "a" || c.ShutdownAt.IsZero() {
		t.Errorf("listed %+v", c)
	}
	got, err := restarted.Get(context.Background(), testNS, made.Name, testOwner)
	if err != nil || !got.Ready || len(got.PodIPs) != 1 {
		t.Errorf("Get = %+v, %v", got, err)
	}
	if others, _ := restarted.List(context.Background(), testNS, "someone-else"); len(others) != 0 {
		t.Errorf("another owner lists %+v", others)
	}
	// The same request from the restarted process is the same sandbox.
	again, err := restarted.Create(context.Background(), req)
	if err != nil || again.Name != made.Name || !again.Reused {
		t.Errorf("repeat after the restart = %+v, %v", again, err)
	}
}

// A suspended sandbox shows as such in List (the claim's mirrored Ready reason) and Get (the
// Sandbox's own operating mode, before the controller caught up).
func TestSuspendedClaims(t *testing.T) {
	suspended := extv1beta1.SandboxClaimStatus{
		Conditions:    []metav1.Condition{cond("Ready", metav1.ConditionFalse, sandboxv1beta1.SandboxReasonSuspended, "")},
		SandboxStatus: extv1beta1.SandboxStatus{Name: "sb-s"},
	}
	sbSuspending := sandboxObj(testNS, "sb-g", "", nil)
	sbSuspending.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended
	f := newFakes(t,
		claimObj(testNS, "s", map[string]string{testKey: testOwner, "team": "x", PrincipalLabel: "p-1"}, suspended),
		claimObj(testNS, "g", map[string]string{testKey: testOwner}, readyStatus("sb-g")),
		claimObj(testNS, "r", map[string]string{testKey: testOwner}, readyStatus("sb-r")),
		sandboxObj(testNS, "sb-s", "", nil), sbSuspending, sandboxObj(testNS, "sb-r", "", nil))
	list, err := f.c.List(context.Background(), testNS, testOwner)
	if err != nil || len(list) != 3 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	for _, c := range list {
		if c.Suspended != (c.Name == "s") {
			t.Errorf("listed %s suspended = %v", c.Name, c.Suspended)
		}
	}
	if l := list[2].Labels; len(l) != 1 || l["team"] != "x" {
		t.Errorf("labels of s: %v (the server's own are left out)", l)
	}
	tests := []struct {
		name string
		want bool
	}{{"s", true}, {"g", true}, {"r", false}}
	for _, tt := range tests {
		if c, err := f.c.Get(context.Background(), testNS, tt.name, testOwner); err != nil || c.Suspended != tt.want {
			t.Errorf("Get(%s) suspended = %v, %v; want %v", tt.name, c.Suspended, err, tt.want)
		}
	}
}
