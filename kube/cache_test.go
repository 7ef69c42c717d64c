package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
)

// cachedFixture is an owned, bound claim and its Sandbox, carrying the labels the watches select on.
func cachedFixture(sbClaimUID string) []runtime.Object {
	claim := claimObj(testNS, "mine", map[string]string{testKey: testOwner}, readyStatus("sb-1", "10.0.0.9"))
	claim.UID = "uid-1"
	sb := sandboxObj(testNS, "sb-1", "sb-1.team-a.svc.cluster.local", []string{"10.0.0.7"}, cond("Ready", metav1.ConditionTrue, "DependenciesReady", ""))
	sb.Labels = map[string]string{claimUIDLabel: sbClaimUID}
	return []runtime.Object{claim, sb}
}

func waitCached(t *testing.T, c *Client) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, _, ok := c.cache.lookup(testNS, "mine"); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch cache never answered")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestGetAnswersFromTheWatchCache(t *testing.T) {
	f := newFakes(t, cachedFixture("uid-1")...)
	f.c.cache = newWatchCache(f.ext, f.core, testKey)
	t.Cleanup(f.c.Close)
	waitCached(t, f.c)
	before := f.count("get", "sandboxclaims") + f.count("get", "sandboxes")
	got, err := f.c.Get(context.Background(), testNS, "mine", testOwner)
	if err != nil {
		t.Fatal(err)
	}
	if got.SandboxName != "sb-1" || got.PodIPs[0] != "10.0.0.7" || got.ServiceFQDN == "" || !got.Ready {
		t.Errorf("cached claim %+v", got)
	}
	if n := f.count("get", "sandboxclaims") + f.count("get", "sandboxes") - before; n != 0 {
		t.Errorf("a cached Get made %d API GETs", n)
	}
	// Another owner's claim is never answered from the cache: the API says not found.
	if _, err := f.c.Get(context.Background(), testNS, "mine", "someone-else"); !errors.Is(err, ErrNotFound) {
		t.Errorf("other owner: %v", err)
	}
}

func TestCacheIgnoresASandboxOfAnotherClaim(t *testing.T) {
	f := newFakes(t, cachedFixture("uid-of-an-older-claim")...)
	f.c.cache = newWatchCache(f.ext, f.core, testKey)
	t.Cleanup(f.c.Close)
	time.Sleep(200 * time.Millisecond)
	if _, _, ok := f.c.cache.lookup(testNS, "mine"); ok {
		t.Fatal("the cache paired a claim with a Sandbox bound to another claim")
	}
	got, err := f.c.Get(context.Background(), testNS, "mine", testOwner)
	if err != nil || got.SandboxName != "sb-1" {
		t.Errorf("fallback to the API: %+v, %v", got, err)
	}
}

func TestForbiddenWatchFallsBackToTheAPI(t *testing.T) {
	f := newFakes(t, cachedFixture("uid-1")...)
	f.core.PrependReactor("list", "sandboxes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: sandboxv1beta1.GroupVersion.Group, Resource: "sandboxes"}, "", errors.New("no list"))
	})
	f.c.cache = newWatchCache(f.ext, f.core, testKey)
	t.Cleanup(f.c.Close)
	f.c.cache.lookup(testNS, "mine") // starts the watches
	nw := f.c.cache.watch(testNS)
	select {
	case <-nw.failed:
	case <-time.After(5 * time.Second):
		t.Fatal("a forbidden watch was not given up")
	}
	got, err := f.c.Get(context.Background(), testNS, "mine", testOwner)
	if err != nil || got.PodIPs[0] != "10.0.0.7" {
		t.Errorf("fallback: %+v, %v", got, err)
	}
}
