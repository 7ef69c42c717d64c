package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// holderLease is another process's Lease on owner, renewed at renewed.
func holderLease(name, owner string, renewed time.Time) *coordinationv1.Lease {
	secs := int32(HoldDuration / time.Second)
	at := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: map[string]string{testKey: owner, holderLabel: "true"}},
		Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: &secs, RenewTime: &at},
	}
}

func TestHoldOthersAlive(t *testing.T) {
	for _, tc := range []struct {
		name      string
		others    []*coordinationv1.Lease
		wantAlive int
		wantLeft  int // Leases left after the count, this process's included
	}{
		{name: "alone", wantAlive: 0, wantLeft: 1},
		{name: "a live process of the owner", others: []*coordinationv1.Lease{holderLease("p2", testOwner, testNow.Add(-10*time.Second))},
			wantAlive: 1, wantLeft: 2},
		{name: "a process that died is collected", others: []*coordinationv1.Lease{holderLease("p2", testOwner, testNow.Add(-HoldDuration))},
			wantAlive: 0, wantLeft: 1},
		{name: "another owner's process does not count", others: []*coordinationv1.Lease{holderLease("p2", "someone-else", testNow)},
			wantAlive: 0, wantLeft: 2},
		{name: "a live process of the owner whose Lease is in another namespace", others: []*coordinationv1.Lease{
			inNamespace(holderLease("p2", testOwner, testNow), "team-b")}, wantAlive: 1, wantLeft: 2},
		{name: "one live, one dead", others: []*coordinationv1.Lease{
			holderLease("p2", testOwner, testNow), holderLease("p3", testOwner, testNow.Add(-2*HoldDuration))},
			wantAlive: 1, wantLeft: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := make([]runtime.Object, 0, len(tc.others))
			for _, l := range tc.others {
				objs = append(objs, l)
			}
			cs := k8sfake.NewClientset(objs...)
			f := newFakes(t)
			f.c.leases = cs.CoordinationV1()
			h, err := f.c.Hold(context.Background(), testNS, testOwner)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release(context.Background())
			alive, err := h.OthersAlive(context.Background())
			if err != nil || alive != tc.wantAlive {
				t.Fatalf("OthersAlive = %d, %v; want %d", alive, err, tc.wantAlive)
			}
			left, _ := cs.CoordinationV1().Leases("").List(context.Background(), metav1.ListOptions{})
			if len(left.Items) != tc.wantLeft {
				t.Errorf("%d Leases left, want %d", len(left.Items), tc.wantLeft)
			}
		})
	}
}

func TestHoldReleaseDeletesItsLease(t *testing.T) {
	cs := k8sfake.NewClientset()
	f := newFakes(t)
	f.c.leases = cs.CoordinationV1()
	h, err := f.c.Hold(context.Background(), testNS, testOwner)
	if err != nil {
		t.Fatal(err)
	}
	l, err := cs.CoordinationV1().Leases(testNS).Get(context.Background(), h.name, metav1.GetOptions{})
	if err != nil || l.Labels[testKey] != testOwner || !leaseLive(l, testNow) {
		t.Fatalf("the holder's Lease: %+v, %v", l, err)
	}
	h.Release(context.Background())
	h.Release(context.Background()) // twice is fine
	if _, err := cs.CoordinationV1().Leases(testNS).Get(context.Background(), h.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease outlived Release: %v", err)
	}
}

func TestHoldRefusedIsErrNoLeases(t *testing.T) {
	f := newFakes(t)
	if _, err := f.c.Hold(context.Background(), testNS, testOwner); !errors.Is(err, ErrNoLeases) {
		t.Errorf("without a leases client: %v", err)
	}
	cs := k8sfake.NewClientset()
	cs.PrependReactor("create", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), "", errors.New("RBAC"))
	})
	f.c.leases = cs.CoordinationV1()
	if _, err := f.c.Hold(context.Background(), testNS, testOwner); !errors.Is(err, ErrNoLeases) || !apierrors.IsForbidden(err) {
		t.Errorf("forbidden: %v", err)
	}
}

func inNamespace(l *coordinationv1.Lease, ns string) *coordinationv1.Lease {
	l.Namespace = ns
	return l
}
