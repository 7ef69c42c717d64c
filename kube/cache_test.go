package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
)

// cachedFixture is an owned, bound claim and its Sandbox, carrying the labels the watches select on.
func cachedFixture(sbClaimUID string) []runtime.Object {
	claim := claimObj(testNS, "mine", map[string]string{testKey: testOwner}, readyStatus("sb-1", "10.0.0.9"))
	claim.UID = "uid-1"
	sb := sandboxObj(testNS, "sb-1", "sb-1.team-a.svc.cluster.local", []string{"10.0.0.7"}, cond("Ready", metav1.ConditionTrue, "DependenciesReady", ""))
	sb.Labels = map[string]string{claimUIDLabel: sbClaimUID, createdByLabel: createdByValue}
	return []runtime.Object{claim, sb}
}

// cacheWatches records the watches the cache opens (the only ones with a label selector),
// per namespace, so tests can see them start and stop.
type cacheWatches struct {
	mu  sync.Mutex
	per map[string][]*watch.RaceFreeFakeWatcher
}

// withCache gives f's client a watch cache bounded by o and records its watches.
func withCache(t *testing.T, f *fakes, o options) *cacheWatches {
	t.Helper()
	cw := &cacheWatches{per: map[string][]*watch.RaceFreeFakeWatcher{}}
	record := func(tracker clienttesting.ObjectTracker) clienttesting.WatchReactionFunc {
		return func(a clienttesting.Action) (bool, watch.Interface, error) {
			wa := a.(clienttesting.WatchActionImpl)
			if wa.ListOptions.LabelSelector == "" {
				return false, nil, nil // claimWaiter's watch: leave it to the default reactors
			}
			w, err := tracker.Watch(a.GetResource(), a.GetNamespace(), wa.ListOptions)
			if err == nil {
				cw.mu.Lock()
				cw.per[a.GetNamespace()] = append(cw.per[a.GetNamespace()], w.(*watch.RaceFreeFakeWatcher))
				cw.mu.Unlock()
			}
			return true, w, err
		}
	}
	f.ext.PrependWatchReactor("sandboxclaims", record(f.ext.Tracker()))
	f.core.PrependWatchReactor("sandboxes", record(f.core.Tracker()))
	f.c.cache = newWatchCache(f.ext, f.core, testKey, o)
	t.Cleanup(f.c.Close)
	return cw
}

// open counts the namespace's cache watches that are still running.
func (cw *cacheWatches) open(ns string) int {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	n := 0
	for _, w := range cw.per[ns] {
		if !w.IsStopped() {
			n++
		}
	}
	return n
}

func (cw *cacheWatches) namespaces() []string {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	var out []string
	for ns := range cw.per {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// peek returns a namespace's watch without counting as a use.
func (w *watchCache) peek(ns string) *nsWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ns[ns].Value.(*nsWatch)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitCached(t *testing.T, c *Client) {
	t.Helper()
	eventually(t, "the watch cache never answered", func() bool {
		_, _, ok := c.cache.lookup(testNS, "mine")
		return ok
	})
}

func TestGetAnswersFromTheWatchCache(t *testing.T) {
	f := newFakes(t, cachedFixture("uid-1")...)
	withCache(t, f, defaultOptions())
	// The first Get reads the API, finds the claim ours and starts the namespace's watches.
	if _, err := f.c.Get(context.Background(), testNS, "mine", testOwner); err != nil {
		t.Fatal(err)
	}
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
	// Another owner's claim is not found, whether the cache or the API answers.
	if _, err := f.c.Get(context.Background(), testNS, "mine", "someone-else"); !errors.Is(err, ErrNotFound) {
		t.Errorf("other owner: %v", err)
	}
}

func TestCacheIgnoresASandboxOfAnotherClaim(t *testing.T) {
	f := newFakes(t, cachedFixture("uid-of-an-older-claim")...)
	cw := withCache(t, f, defaultOptions())
	got, err := f.c.Get(context.Background(), testNS, "mine", testOwner)
	if err != nil || got.SandboxName != "sb-1" {
		t.Fatalf("from the API: %+v, %v", got, err)
	}
	eventually(t, "the watches never started", func() bool { return cw.open(testNS) == 2 })
	time.Sleep(200 * time.Millisecond)
	if _, _, ok := f.c.cache.lookup(testNS, "mine"); ok {
		t.Fatal("the cache paired a claim with a Sandbox bound to another claim")
	}
	got, err = f.c.Get(context.Background(), testNS, "mine", testOwner)
	if err != nil || got.SandboxName != "sb-1" {
		t.Errorf("fallback to the API: %+v, %v", got, err)
	}
}

func TestForbiddenWatchFallsBackToTheAPI(t *testing.T) {
	f := newFakes(t, cachedFixture("uid-1")...)
	f.core.PrependReactor("list", "sandboxes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: sandboxv1beta1.GroupVersion.Group, Resource: "sandboxes"}, "", errors.New("no list"))
	})
	withCache(t, f, defaultOptions())
	f.c.cache.observe(testNS)
	nw := f.c.cache.peek(testNS)
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

// Names made up by callers (the namespace flood of issue 14) must cost an API read and nothing
// that stays: no informer, no watch, no LIST.
func TestNoWatchWithoutAClaimOfOurs(t *testing.T) {
	others := claimObj("theirs", "c", map[string]string{testKey: "someone-else"}, readyStatus("sb"))
	calls := []struct {
		name string
		call func(c *Client, ns string) error
	}{
		{"get", func(c *Client, ns string) error {
			_, err := c.Get(context.Background(), ns, "nope", testOwner)
			return err
		}},
		{"status", func(c *Client, ns string) error {
			_, err := c.Status(context.Background(), ns, "nope", testOwner)
			return err
		}},
		{"list", func(c *Client, ns string) error { _, err := c.List(context.Background(), ns, testOwner); return err }},
		{"delete", func(c *Client, ns string) error { return c.Delete(context.Background(), ns, "nope", testOwner) }},
		{"another owner's claim", func(c *Client, _ string) error {
			_, err := c.Get(context.Background(), "theirs", "c", testOwner)
			return err
		}},
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, others)
			cw := withCache(t, f, defaultOptions())
			for i := range 200 {
				err := tt.call(f.c, fmt.Sprintf("ns-%d", i))
				if err != nil && !errors.Is(err, ErrNotFound) {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			time.Sleep(50 * time.Millisecond) // a wrongly started informer would have listed by now
			if got := f.c.cache.watched(); len(got) != 0 {
				t.Errorf("watched namespaces = %v, want none", got)
			}
			if got := cw.namespaces(); len(got) != 0 {
				t.Errorf("watches opened in %v", got)
			}
			if n := f.count("watch", "sandboxclaims"); n != 0 {
				t.Errorf("%d claim watches opened", n)
			}
			for _, a := range f.core.Actions() {
				t.Errorf("Sandbox API call %s %s in %s", a.GetVerb(), a.GetResource().Resource, a.GetNamespace())
			}
		})
	}
}

func TestWatchStartsWhereWeHaveClaims(t *testing.T) {
	t.Run("after a create", func(t *testing.T) {
		f := newFakes(t, sandboxObj(testNS, "sb", "", []string{"10.0.0.9"}))
		cw := withCache(t, f, defaultOptions())
		done := f.controller(f.createdNames(), f.status(readyStatus("sb")))
		if _, err := f.c.Create(context.Background(), CreateRequest{Namespace: testNS, WarmPool: "pool", Owner: testOwner, ReadyTimeout: 10 * time.Second}); err != nil {
			t.Fatalf("Create: %v", err)
		}
		checkController(t, done)
		if got := f.c.cache.watched(); !slices.Equal(got, []string{testNS}) {
			t.Errorf("watched namespaces = %v, want [%s]", got, testNS)
		}
		eventually(t, "the claim and Sandbox watches never started", func() bool { return cw.open(testNS) == 2 })
	})
	t.Run("after an API read found our claim", func(t *testing.T) {
		for _, read := range []string{"get", "status", "list"} {
			f := newFakes(t, cachedFixture("uid-1")...)
			cw := withCache(t, f, defaultOptions())
			var err error
			switch read {
			case "get":
				_, err = f.c.Get(context.Background(), testNS, "mine", testOwner)
			case "status":
				_, err = f.c.Status(context.Background(), testNS, "mine", testOwner)
			case "list":
				_, err = f.c.List(context.Background(), testNS, testOwner)
			}
			if err != nil {
				t.Fatalf("%s: %v", read, err)
			}
			if got := f.c.cache.watched(); !slices.Equal(got, []string{testNS}) {
				t.Errorf("%s: watched namespaces = %v, want [%s]", read, got, testNS)
			}
			eventually(t, read+": the watches never started", func() bool { return cw.open(testNS) == 2 })
		}
	})
}

func TestLeastRecentlyUsedNamespaceIsStoppedAtTheCap(t *testing.T) {
	f := newFakes(t)
	cw := withCache(t, f, options{maxWatched: 3, idle: time.Hour})
	for _, ns := range []string{"ns-0", "ns-1", "ns-2"} {
		f.c.cache.observe(ns)
	}
	f.c.cache.lookup("ns-0", "any") // a use keeps ns-0; ns-1 is now the least recently used
	eventually(t, "the watches never started", func() bool { return cw.open("ns-1") == 2 })
	evicted := f.c.cache.peek("ns-1")
	f.c.cache.observe("ns-3")
	if got, want := f.c.cache.watched(), []string{"ns-3", "ns-0", "ns-2"}; !slices.Equal(got, want) {
		t.Fatalf("watched = %v, want %v", got, want)
	}
	select {
	case <-evicted.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the evicted namespace's informers never returned")
	}
	if n := cw.open("ns-1"); n != 0 {
		t.Errorf("%d watches of the evicted namespace still open", n)
	}
	for _, ns := range []string{"ns-0", "ns-2", "ns-3"} {
		eventually(t, ns+": watches not running", func() bool { return cw.open(ns) == 2 })
	}
	// Whatever arrives, the cap holds.
	for i := range 50 {
		f.c.cache.observe(fmt.Sprintf("more-%d", i))
		if n := len(f.c.cache.watched()); n > 3 {
			t.Fatalf("%d namespaces watched, cap 3", n)
		}
	}
}

func TestIdleNamespacesAreStopped(t *testing.T) {
	f := newFakes(t)
	cw := withCache(t, f, options{maxWatched: 8, idle: 10 * time.Minute})
	now := testNow
	f.c.cache.now = func() time.Time { return now }
	f.c.cache.observe("quiet")
	f.c.cache.observe("busy")
	eventually(t, "the watches never started", func() bool { return cw.open("quiet") == 2 })
	quiet := f.c.cache.peek("quiet")
	now = now.Add(6 * time.Minute)
	f.c.cache.lookup("busy", "x")
	now = now.Add(6 * time.Minute) // quiet unused for 12 min, busy for 6
	f.c.cache.lookup("busy", "x")
	if got := f.c.cache.watched(); !slices.Equal(got, []string{"busy"}) {
		t.Fatalf("watched = %v, want [busy]", got)
	}
	select {
	case <-quiet.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the idle namespace's informers never returned")
	}
	if n := cw.open("quiet"); n != 0 {
		t.Errorf("%d watches of the idle namespace still open", n)
	}
}

func TestCloseStopsEveryWatch(t *testing.T) {
	f := newFakes(t)
	cw := withCache(t, f, defaultOptions())
	f.c.cache.observe("a")
	f.c.cache.observe("b")
	eventually(t, "the watches never started", func() bool { return cw.open("a")+cw.open("b") == 4 })
	f.c.Close()
	eventually(t, "watches still open after Close", func() bool { return cw.open("a")+cw.open("b") == 0 })
	f.c.cache.observe("c")
	if got := f.c.cache.watched(); len(got) != 0 {
		t.Errorf("a closed cache watches %v", got)
	}
}

// With no call at all, idle namespaces still stop: nothing stays up after a burst.
func TestIdleSweepRunsWithoutCalls(t *testing.T) {
	f := newFakes(t)
	cw := withCache(t, f, options{maxWatched: 8, idle: 100 * time.Millisecond})
	for round := range 2 { // the sweep ends with the last watch and starts again with the next
		f.c.cache.observe("burst")
		eventually(t, "the watches never started", func() bool { return cw.open("burst") == 2 })
		deadline := time.Now().Add(5 * time.Second)
		for len(f.c.cache.watched()) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: still watching %v", round, f.c.cache.watched())
			}
			time.Sleep(20 * time.Millisecond)
		}
		eventually(t, "the idle namespace's watches stayed open", func() bool { return cw.open("burst") == 0 })
	}
}

func TestCacheHoldsOnlyOurClaimsAndSandboxes(t *testing.T) {
	// Another client's claim and the Sandbox bound to it, in the same namespace.
	foreign := claimObj(testNS, "theirs", nil, readyStatus("sb-2", "10.0.0.8"))
	foreignSb := sandboxObj(testNS, "sb-2", "", []string{"10.0.0.8"})
	foreignSb.Labels = map[string]string{claimUIDLabel: "uid-2", createdByLabel: "python-client"}
	f := newFakes(t, append(cachedFixture("uid-1"), foreign, foreignSb)...)
	withCache(t, f, defaultOptions())
	if c, s := f.c.Cached(); c != 0 || s != 0 {
		t.Fatalf("before any call: Cached() = %d, %d, want 0, 0", c, s)
	}
	if _, err := f.c.Get(context.Background(), testNS, "mine", testOwner); err != nil {
		t.Fatalf("Get: %v", err)
	}
	eventually(t, "the cache never held our claim and its Sandbox", func() bool {
		c, s := f.c.Cached()
		return c == 1 && s == 1
	})
	f.c.Close()
	if c, s := f.c.Cached(); c != 0 || s != 0 {
		t.Errorf("after Close: Cached() = %d, %d, want 0, 0", c, s)
	}
}
