package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

// TestSyncedCacheAnswersNotFound: once a namespace is watched, the same missing or foreign
// name costs the API nothing within absentTTL, a claim created meanwhile is found, and
// get_sandbox_status reads the cache like every other claim-targeted call.
func TestSyncedCacheAnswersNotFound(t *testing.T) {
	f := newFakes(t, cachedFixture("uid-1")...)
	withCache(t, f, defaultOptions())
	now := testNow
	f.c.cache.now = func() time.Time { return now }
	ctx := context.Background()
	if _, err := f.c.Get(ctx, testNS, "mine", testOwner); err != nil {
		t.Fatal(err)
	}
	waitCached(t, f.c)
	gets := func() int { return f.count("get", "sandboxclaims") + f.count("get", "sandboxes") }

	for _, tc := range []struct {
		name, claim, owner string
		apiGets            int // API GETs for two calls in a row
		status             string
	}{
		{"status of a cached claim", "mine", testOwner, 0, StatusReady},
		{"another owner's claim", "mine", "someone-else", 0, ""},
		{"unknown name: the first call asks the API, the second does not", "nope", testOwner, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := gets()
			for range 2 {
				st, err := f.c.Status(ctx, testNS, tc.claim, tc.owner)
				if tc.status == "" {
					if !errors.Is(err, ErrNotFound) {
						t.Fatalf("Status = %+v, %v; want not found", st, err)
					}
				} else if err != nil || st.Status != tc.status {
					t.Fatalf("Status = %+v, %v; want %s", st, err, tc.status)
				}
			}
			if n := gets() - before; n != tc.apiGets {
				t.Errorf("%d API GETs, want %d", n, tc.apiGets)
			}
		})
	}

	// Deleting a cached claim needs only the DELETE (its UID precondition guards the read).
	before := gets()
	if err := f.c.Delete(ctx, testNS, "mine", testOwner); err != nil {
		t.Fatal(err)
	}
	if n := gets() - before; n != 0 || f.count("delete", "sandboxclaims") != 1 {
		t.Errorf("delete of a cached claim: %d GETs, %d DELETEs; want 0 and 1", n, f.count("delete", "sandboxclaims"))
	}

	// A claim created after the API said "nope" was not there comes through the watch.
	late := claimObj(testNS, "nope", map[string]string{testKey: testOwner}, readyStatus("sb-2", "10.0.0.8"))
	late.UID = "uid-late"
	sb := sandboxObj(testNS, "sb-2", "sb-2.team-a.svc.cluster.local", []string{"10.0.0.8"}, cond("Ready", metav1.ConditionTrue, "DependenciesReady", ""))
	sb.Labels = map[string]string{claimUIDLabel: "uid-late", createdByLabel: createdByValue}
	if _, err := f.core.AgentsV1beta1().Sandboxes(testNS).Create(ctx, sb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ext.ExtensionsV1beta1().SandboxClaims(testNS).Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the late claim never became visible", func() bool {
		_, err := f.c.Get(ctx, testNS, "nope", testOwner)
		return err == nil
	})

	// After absentTTL the API is asked again.
	before = gets()
	for range 2 {
		if _, err := f.c.Get(ctx, testNS, "gone", testOwner); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	now = now.Add(absentTTL + time.Millisecond) // the expiring cache counts an entry as live up to its TTL inclusive
	if _, err := f.c.Get(ctx, testNS, "gone", testOwner); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if n := gets() - before; n != 2 {
		t.Errorf("%d API GETs around the TTL, want 2", n)
	}
}

// TestDeletedClaimIsGoneBeforeTheWatchSaysSo: right after delete_sandbox the cache still holds
// the claim (here for good: the DELETE reaches no tracker), and status must say not found.
func TestDeletedClaimIsGoneBeforeTheWatchSaysSo(t *testing.T) {
	f := newFakes(t, cachedFixture("uid-1")...)
	withCache(t, f, defaultOptions())
	ctx := context.Background()
	if _, err := f.c.Get(ctx, testNS, "mine", testOwner); err != nil {
		t.Fatal(err)
	}
	waitCached(t, f.c)
	f.ext.PrependReactor("delete", "sandboxclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	if err := f.c.Delete(ctx, testNS, "mine", testOwner); err != nil {
		t.Fatal(err)
	}
	if st, err := f.c.Status(ctx, testNS, "mine", testOwner); !errors.Is(err, ErrNotFound) {
		t.Fatalf("status right after delete: %+v, %v; want not found", st, err)
	}
	if _, err := f.c.Get(ctx, testNS, "mine", testOwner); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get right after delete: %v; want not found", err)
	}
}
