package kube

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clienttesting "k8s.io/client-go/testing"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

const testRequest = "job-42"

func requestReq() CreateRequest {
	return CreateRequest{Namespace: testNS, WarmPool: "pool", Owner: testOwner, RequestID: testRequest, ReadyTimeout: 10 * time.Second}
}

// requestClaimObj is the claim an earlier create of testRequest left, with st as its status.
func requestClaimObj(owner, pool string, st extv1beta1.SandboxClaimStatus) *extv1beta1.SandboxClaim {
	c := claimObj(testNS, RequestClaimName(owner, testRequest), map[string]string{testKey: owner}, st)
	c.Annotations = map[string]string{RequestIDAnnotation: testRequest, createCallAnnotation: "earlier-call"}
	c.Spec.WarmPoolRef.Name = pool
	return c
}

func claimCount(t *testing.T, f *fakes) int {
	t.Helper()
	list, err := f.ext.Tracker().List(claimsGVR, claimsGVR.GroupVersion().WithKind("SandboxClaim"), testNS)
	if err != nil {
		t.Fatal(err)
	}
	return len(list.(*extv1beta1.SandboxClaimList).Items)
}

// Issue 30.3: eight creates of one request racing make one claim; every call gets it back,
// ready, and exactly one of them posted it.
func TestRequestRaceMakesOneClaim(t *testing.T) {
	const racers = 8
	f := newFakes(t, sandboxObj(testNS, "pool-abcde", "", []string{"10.0.0.9"}))
	name := RequestClaimName(testOwner, testRequest)
	go func() {
		// None is ready before every racer watches, so each one waits for the same event.
		for range racers {
			<-f.watches
		}
		_ = f.setClaimStatus(testNS, name, readyStatus("pool-abcde", "10.0.0.9"))
	}()
	var wg sync.WaitGroup
	got := make([]Claim, racers)
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() { got[i], errs[i] = f.c.Create(context.Background(), requestReq()) })
	}
	wg.Wait()
	posted := 0
	for i := range racers {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		if got[i].Name != name || !got[i].Ready || got[i].SandboxName != "pool-abcde" || got[i].RequestID != testRequest {
			t.Errorf("racer %d got %+v", i, got[i])
		}
		if !got[i].Reused {
			posted++
		}
	}
	if posted != 1 {
		t.Errorf("%d racers say they posted the claim, want 1", posted)
	}
	if n := claimCount(t, f); n != 1 {
		t.Errorf("%d claims in the namespace, want 1", n)
	}
}

// A repeat that fails while waiting leaves the claim alone: the call that posted it answers for it.
func TestRequestRepeatNeverDeletesTheClaim(t *testing.T) {
	pending := extv1beta1.SandboxClaimStatus{Conditions: []metav1.Condition{cond("Ready", metav1.ConditionFalse, "DependenciesNotReady", "")}}
	f := newFakes(t, requestClaimObj(testOwner, "pool", pending))
	req := requestReq()
	req.ReadyTimeout = 300 * time.Millisecond
	if _, err := f.c.Create(context.Background(), req); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Create: %v, want a timeout", err)
	}
	if !f.claimExists(t, testNS, RequestClaimName(testOwner, testRequest)) || f.count("delete", "sandboxclaims") != 0 {
		t.Error("a repeated create deleted the claim it did not post")
	}
}

func TestRequestRefusals(t *testing.T) {
	deleting := requestClaimObj(testOwner, "pool", readyStatus("pool-abcde"))
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	deleting.Finalizers = []string{"test/keep"}
	forged := requestClaimObj(testOwner, "pool", readyStatus("pool-abcde"))
	forged.Annotations[RequestIDAnnotation] = "other-request"
	tests := []struct {
		name     string
		existing *extv1beta1.SandboxClaim
		attach   bool
		want     error
		wantText string
	}{
		{"another warm pool", requestClaimObj(testOwner, "other-pool", readyStatus("pool-abcde")), false, ErrInvalid, `from warm pool "other-pool"`},
		{"being deleted", deleting, false, ErrInvalid, "being deleted"},
		{"made for another request", forged, false, ErrInvalid, "choose another request_id"},
		{"attach without a claim", nil, true, ErrNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.existing != nil {
				objs = append(objs, tt.existing)
			}
			f := newFakes(t, objs...)
			req := requestReq()
			req.Attach = tt.attach
			_, err := f.c.Create(context.Background(), req)
			if !errors.Is(err, tt.want) || (tt.wantText != "" && !strings.Contains(err.Error(), tt.wantText)) {
				t.Fatalf("Create: %v, want %v with %q", err, tt.want, tt.wantText)
			}
			if f.count("delete", "sandboxclaims") != 0 {
				t.Error("a refused create deleted a claim")
			}
			if tt.attach && f.count("create", "sandboxclaims") != 0 {
				t.Error("attach posted a claim")
			}
		})
	}
}

// Attach returns the live claim of the request without posting one.
func TestRequestAttach(t *testing.T) {
	f := newFakes(t, requestClaimObj(testOwner, "pool", readyStatus("pool-abcde", "10.0.0.9")),
		sandboxObj(testNS, "pool-abcde", "", []string{"10.0.0.9"}, cond("Ready", metav1.ConditionTrue, "DependenciesReady", "")))
	req := requestReq()
	req.Attach = true
	c, err := f.c.Create(context.Background(), req)
	if err != nil || !c.Reused || !c.Ready || c.Name != RequestClaimName(testOwner, testRequest) {
		t.Fatalf("Create = %+v, %v", c, err)
	}
	if f.count("create", "sandboxclaims") != 0 {
		t.Error("attach posted a claim")
	}
}

// A POST cut off by cancellation may still have landed: the call deletes the claim only if
// it is its own, never the one a racer posted under the same name.
func TestRequestCancelledPostDeletesOnlyItsOwn(t *testing.T) {
	for _, landed := range []bool{false, true} {
		t.Run(map[bool]string{false: "a racer's claim", true: "its own claim"}[landed], func(t *testing.T) {
			var objs []runtime.Object
			if !landed {
				objs = append(objs, requestClaimObj(testOwner, "pool", readyStatus("pool-abcde")))
			}
			f := newFakes(t, objs...)
			ctx, cancel := context.WithCancel(context.Background())
			f.ext.PrependReactor("create", "sandboxclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if landed {
					obj := a.(clienttesting.CreateAction).GetObject().(*extv1beta1.SandboxClaim)
					if err := f.ext.Tracker().Create(claimsGVR, obj, testNS); err != nil {
						return true, nil, err
					}
				}
				cancel()
				return true, nil, context.Canceled
			})
			if _, err := f.c.Create(ctx, requestReq()); err == nil {
				t.Fatal("Create succeeded")
			}
			if exists := f.claimExists(t, testNS, RequestClaimName(testOwner, testRequest)); exists == landed {
				t.Errorf("claim exists = %v after a cancelled POST (landed = %v)", exists, landed)
			}
		})
	}
}

func TestRequestClaimName(t *testing.T) {
	a := RequestClaimName("owner-a", "r")
	if a != RequestClaimName("owner-a", "r") || a == RequestClaimName("owner-b", "r") || a == RequestClaimName("owner-a", "s") {
		t.Error("the name is not a function of owner and request id alone")
	}
	if errs := validation.IsDNS1123Label(a); len(errs) > 0 {
		t.Errorf("%q: %v", a, errs)
	}
}
