package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// versioned makes the fake clientset treat a claim patch that names a resourceVersion as the
// API server does: a conflict unless it is the claim's current one; every write makes a new
// one. The fake runs its reactors under one lock, so the check and the write are atomic.
// before, when set, runs ahead of each patch's check; when it says it changed the claim, that
// is written first: another replica's write between this one's read and its own.
func versioned(f *fakes, before func(claim *extv1beta1.SandboxClaim) bool) {
	n := 1
	write := func(c *extv1beta1.SandboxClaim) error {
		n++
		c.ResourceVersion = strconv.Itoa(n)
		return f.ext.Tracker().Update(claimsGVR, c, c.Namespace)
	}
	f.ext.PrependReactor("patch", "sandboxclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa := a.(clienttesting.PatchAction)
		cur, err := f.ext.Tracker().Get(claimsGVR, pa.GetNamespace(), pa.GetName())
		if err != nil {
			return true, nil, err
		}
		if c := cur.(*extv1beta1.SandboxClaim); before != nil && before(c) {
			if err := write(c); err != nil {
				return true, nil, err
			}
		}
		cur, _ = f.ext.Tracker().Get(claimsGVR, pa.GetNamespace(), pa.GetName())
		var p struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(pa.GetPatch(), &p); err != nil {
			return true, nil, err
		}
		if p.Metadata.ResourceVersion != "" && p.Metadata.ResourceVersion != cur.(*extv1beta1.SandboxClaim).ResourceVersion {
			return true, nil, apierrors.NewConflict(claimsGVR.GroupResource(), pa.GetName(), errors.New("the object has been modified"))
		}
		_, out, err := clienttesting.ObjectReaction(f.ext.Tracker())(a)
		if err != nil {
			return true, nil, err
		}
		c := out.(*extv1beta1.SandboxClaim)
		return true, c, write(c)
	})
}

func transferFakes(t *testing.T, before func(*extv1beta1.SandboxClaim) bool) (*fakes, *time.Time) {
	t.Helper()
	mine := claimObj(testNS, "mine", map[string]string{testKey: testOwner}, readyStatus("sb", "10.0.0.7"))
	mine.ResourceVersion = "1"
	foreign := claimObj(testNS, "foreign", map[string]string{"app": "x"}, readyStatus("sb2"))
	f := newFakes(t, mine, foreign, sandboxObj(testNS, "sb", "sb.team-a.svc", []string{"10.0.0.7"}))
	versioned(f, before)
	now := testNow
	f.c.now = func() time.Time { return now }
	return f, &now
}

func grant(hash string, at time.Time) TransferGrant {
	return TransferGrant{TokenHash: hash, Principal: "static:alice", Path: "/data/" + hash, Direction: "upload", ExpiresAt: at.Add(time.Minute)}
}

func TestTransferGrantsAreBoundedAndExpire(t *testing.T) {
	ctx := context.Background()
	f, now := transferFakes(t, nil)
	c := f.c
	for i := range MaxTransferGrants {
		if err := c.GrantTransfer(ctx, testNS, "mine", testOwner, grant(fmt.Sprint("h", i), *now)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.GrantTransfer(ctx, testNS, "mine", testOwner, grant("over", *now)); !errors.Is(err, ErrTooManyTransfers) {
		t.Errorf("grant %d: %v, want ErrTooManyTransfers", MaxTransferGrants+1, err)
	}
	*now = now.Add(time.Minute) // every grant so far expires now
	if err := c.GrantTransfer(ctx, testNS, "mine", testOwner, grant("late", *now)); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	obj, _ := f.ext.Tracker().Get(claimsGVR, testNS, "mine")
	var stored []TransferGrant
	if err := json.Unmarshal([]byte(obj.(*extv1beta1.SandboxClaim).Annotations[transferAnnotation]), &stored); err != nil || len(stored) != 1 || stored[0].TokenHash != "late" {
		t.Errorf("annotation after a write past expiry holds %+v (%v), want only the new grant: expired ones are pruned", stored, err)
	}

	cases := []struct {
		name, claim, owner string
		err                error
	}{
		{"another owner", "mine", "session-2", ErrNotFound},
		{"a claim the server did not make", "foreign", testOwner, ErrNotFound},
		{"no such claim", "absent", testOwner, ErrNotFound},
	}
	for _, tc := range cases {
		if err := c.GrantTransfer(ctx, testNS, tc.claim, tc.owner, grant("x", *now)); !errors.Is(err, tc.err) {
			t.Errorf("%s: grant: %v, want %v", tc.name, err, tc.err)
		}
		if _, err := c.TransferGrants(ctx, testNS, tc.claim, tc.owner); !errors.Is(err, tc.err) {
			t.Errorf("%s: list: %v, want %v", tc.name, err, tc.err)
		}
	}
}

func TestConsumeTransfer(t *testing.T) {
	ctx := context.Background()
	errRefused := errors.New("refused")
	accept := func(TransferGrant) error { return nil }
	cases := []struct {
		name    string
		claim   string
		hash    string
		accept  func(TransferGrant) error
		advance time.Duration
		err     error
		left    []string // hashes still granted afterwards
	}{
		{"unknown token", "mine", "nope", accept, 0, ErrNoTransfer, []string{"a", "b"}},
		{"refused by accept: nothing spent", "mine", "a", func(TransferGrant) error { return errRefused }, 0, errRefused, []string{"a", "b"}},
		{"used", "mine", "a", accept, 0, nil, []string{"b"}},
		{"used twice", "mine", "a", accept, 0, ErrNoTransfer, []string{"b"}},
		{"a claim the server did not make", "foreign", "b", accept, 0, ErrNotFound, []string{"b"}},
		{"no such claim", "absent", "b", accept, 0, ErrNotFound, []string{"b"}},
		{"expired", "mine", "b", accept, time.Minute, ErrNoTransfer, nil},
	}
	f, now := transferFakes(t, nil)
	for _, h := range []string{"a", "b"} {
		if err := f.c.GrantTransfer(ctx, testNS, "mine", testOwner, grant(h, *now)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		*now = now.Add(tc.advance)
		claim, g, err := f.c.ConsumeTransfer(ctx, testNS, tc.claim, tc.hash, tc.accept)
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
		if err == nil && (g.TokenHash != tc.hash || g.Path != "/data/"+tc.hash || claim.SandboxName != "sb" ||
			!slices.Equal(claim.PodIPs, []string{"10.0.0.7"}) || claim.ServiceFQDN != "sb.team-a.svc") {
			t.Errorf("%s: consumed %+v of %+v", tc.name, g, claim)
		}
		live, _ := f.c.TransferGrants(ctx, testNS, "mine", testOwner)
		var left []string
		for _, g := range live {
			left = append(left, g.TokenHash)
		}
		if !slices.Equal(left, tc.left) {
			t.Errorf("%s: grants left %v, want %v", tc.name, left, tc.left)
		}
	}
}

// Another replica uses the URL between this one's read and its write: the write conflicts,
// the new read lacks the grant, and this replica answers not found.
func TestConsumeTransferLosesToAnotherReplica(t *testing.T) {
	ctx := context.Background()
	var armed bool
	f, now := transferFakes(t, func(c *extv1beta1.SandboxClaim) bool {
		if !armed {
			return false
		}
		armed = false
		delete(c.Annotations, transferAnnotation)
		return true
	})
	if err := f.c.GrantTransfer(ctx, testNS, "mine", testOwner, grant("a", *now)); err != nil {
		t.Fatal(err)
	}
	armed = true
	_, _, err := f.c.ConsumeTransfer(ctx, testNS, "mine", "a", func(TransferGrant) error { return nil })
	if !errors.Is(err, ErrNoTransfer) {
		t.Errorf("consumed after another replica: %v, want ErrNoTransfer", err)
	}
	if n := f.count("get", "sandboxclaims"); n < 3 {
		t.Errorf("%d claim reads: the conflict was not retried from a new read", n)
	}
}

func TestConsumeTransferConcurrently(t *testing.T) {
	ctx := context.Background()
	f, now := transferFakes(t, nil)
	if err := f.c.GrantTransfer(ctx, testNS, "mine", testOwner, grant("a", *now)); err != nil {
		t.Fatal(err)
	}
	const consumers = 8
	var wg sync.WaitGroup
	errs := make(chan error, consumers)
	for range consumers {
		wg.Go(func() {
			_, _, err := f.c.ConsumeTransfer(ctx, testNS, "mine", "a", func(TransferGrant) error { return nil })
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrNoTransfer):
			t.Errorf("a losing consumer: %v, want ErrNoTransfer", err)
		}
	}
	if won != 1 {
		t.Errorf("%d consumers used the URL, want exactly 1", won)
	}
}
