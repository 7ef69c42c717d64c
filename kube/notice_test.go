package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

func TestFailedRenewalIsNoticed(t *testing.T) {
	claim := lifetimeClaim(time.Minute, time.Minute, 20*time.Second) // under half its window left
	f := newFakes(t, claim)
	f.c.lifetime = DefaultLifetime()
	f.ext.PrependReactor("patch", "sandboxclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the API server is away")
	})
	got := make(chan Notice, 4)
	f.c.notices = func(n Notice) { got <- n }
	if _, err := f.c.Get(context.Background(), testNS, "c1", testOwner); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n.Kind != RenewalFailed || n.Namespace != testNS || n.Name != "c1" || n.Owner != testOwner ||
			!n.At.Equal(claim.Spec.Lifecycle.ShutdownTime.Time) || n.Err == nil {
			t.Errorf("notice %+v", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notice of the failed renewal")
	}
}

// A claim of ours that goes at or after its shutdown time expired; one that goes before it was
// deleted (delete_sandbox, a release), and one without a shutdown time never expires.
func TestExpiryIsNoticed(t *testing.T) {
	cases := []struct {
		name     string
		shutdown time.Duration // from testNow; 0: no lifecycle
		want     bool
	}{
		{"past its shutdown time", -time.Second, true},
		{"before its shutdown time", time.Hour, false},
		{"no shutdown time", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := cachedFixture("uid-1")
			claim := objs[0].(*extv1beta1.SandboxClaim)
			if tc.shutdown != 0 {
				at := metav1.NewTime(testNow.Add(tc.shutdown).Truncate(time.Second))
				claim.Spec.Lifecycle = &extv1beta1.Lifecycle{ShutdownTime: &at, ShutdownPolicy: extv1beta1.ShutdownPolicyDelete}
			}
			f := newFakes(t, objs...)
			got := make(chan Notice, 4)
			o := defaultOptions()
			o.notices = func(n Notice) { got <- n }
			withCache(t, f, o)
			f.c.cache.now = func() time.Time { return testNow }
			f.c.cache.observe(testNS)
			waitCached(t, f.c)
			if err := f.ext.Tracker().Delete(claimsGVR, testNS, "mine"); err != nil {
				t.Fatal(err)
			}
			wait := 300 * time.Millisecond // for a notice that must not come
			if tc.want {
				wait = 5 * time.Second
			}
			select {
			case n := <-got:
				if !tc.want {
					t.Fatalf("notice %+v, want none", n)
				}
				if n.Kind != Expired || n.Namespace != testNS || n.Name != "mine" || n.Owner != testOwner || !n.At.Equal(claim.Spec.Lifecycle.ShutdownTime.Time) {
					t.Errorf("notice %+v", n)
				}
			case <-time.After(wait):
				if tc.want {
					t.Fatal("no notice of the expiry")
				}
			}
		})
	}
}
