package kube

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

const firstClaim = "sandbox-claim-00000001"

func baseRequest(timeout time.Duration) CreateRequest {
	return CreateRequest{Namespace: testNS, WarmPool: "pool", Owner: testOwner, ReadyTimeout: timeout}
}

// assertCleanedUp checks the failed claim was deleted with background propagation.
func assertCleanedUp(t *testing.T, f *fakes) {
	t.Helper()
	if f.claimExists(t, testNS, firstClaim) {
		t.Error("failed claim was left behind")
	}
	for _, a := range f.ext.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && a.GetResource().Resource == "sandboxclaims" {
			if p := d.GetDeleteOptions().PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
				t.Errorf("delete propagation = %v, want Background", p)
			}
			return
		}
	}
	t.Error("no delete was issued for the failed claim")
}

func TestCreateFailsFastOnTerminalReasons(t *testing.T) {
	tests := []struct {
		reason string
		cond   metav1.Condition
	}{
		{"TemplateNotFound", cond("Ready", metav1.ConditionFalse, "TemplateNotFound", `SandboxTemplate "t" not found`)},
		{"WarmPoolNotFound", cond("Ready", metav1.ConditionFalse, "WarmPoolNotFound", `SandboxWarmPool "pool" not found`)},
		{"WarmPoolNotFound", cond("Finished", metav1.ConditionUnknown, "WarmPoolNotFound", "pool gone (other condition)")},
		{"InvalidMetadata", cond("Ready", metav1.ConditionFalse, "InvalidMetadata", "label domain not allowed")},
		{"EnvVarsInjectionRejected", cond("Ready", metav1.ConditionFalse, "EnvVarsInjectionRejected", "env not allowed")},
		{"VolumeClaimTemplatesError", cond("Ready", metav1.ConditionFalse, "VolumeClaimTemplatesError", "bad pvc")},
		{"ClaimExpired", cond("Ready", metav1.ConditionFalse, "ClaimExpired", "claim expired")},
		{"ReconcilerError", cond("Ready", metav1.ConditionFalse, "ReconcilerError",
			`Error seen: environment variable override is not allowed by the template policy for variable "PATH"`)},
		{"SandboxExpired", cond("Ready", metav1.ConditionFalse, "SandboxExpired", "sandbox expired")},
	}
	for _, tt := range tests {
		t.Run(tt.reason+"/"+tt.cond.Type, func(t *testing.T) {
			f := newFakes(t)
			done := f.controller(f.createdNames(),
				f.status(extv1beta1.SandboxClaimStatus{Conditions: []metav1.Condition{tt.cond}}))
			start := time.Now()
			_, err := f.c.Create(context.Background(), baseRequest(time.Minute))
			checkController(t, done)
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %s; terminal reasons must fail fast", time.Since(start))
			}
			var failure *ClaimFailure
			if !errors.Is(err, ErrClaimFailed) || !errors.As(err, &failure) {
				t.Fatalf("err = %v, want a ClaimFailure", err)
			}
			if failure.Reason != tt.reason || failure.Message != tt.cond.Message {
				t.Errorf("failure = %+v, want reason %q message %q", failure, tt.reason, tt.cond.Message)
			}
			if !strings.Contains(err.Error(), tt.cond.Message) {
				t.Errorf("error %q lacks the controller message", err)
			}
			assertCleanedUp(t, f)
		})
	}
}

func TestCreateTimeoutDeletesClaim(t *testing.T) {
	f := newFakes(t)
	_, err := f.c.Create(context.Background(), baseRequest(300*time.Millisecond))
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "last state: pending") {
		t.Fatalf("err = %v, want ErrTimeout with the last state", err)
	}
	assertCleanedUp(t, f)
}

func TestCreateCancelDeletesClaim(t *testing.T) {
	f := newFakes(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := f.controller(f.createdNames(), func(string, string) error { cancel(); return nil })
	_, err := f.c.Create(ctx, baseRequest(time.Minute))
	checkController(t, done)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	assertCleanedUp(t, f)
}

func TestCreateClaimDeletedWhileWaiting(t *testing.T) {
	f := newFakes(t)
	done := f.controller(f.createdNames(), func(ns, name string) error {
		return f.ext.ExtensionsV1beta1().SandboxClaims(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	_, err := f.c.Create(context.Background(), baseRequest(time.Minute))
	checkController(t, done)
	var failure *ClaimFailure
	if !errors.As(err, &failure) || failure.Reason != "Deleted" {
		t.Fatalf("err = %v, want ClaimFailure Deleted", err)
	}
}

func TestCreateWatchForbiddenKeepsAPIError(t *testing.T) {
	f := newFakes(t)
	f.ext.PrependWatchReactor("sandboxclaims", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewForbidden(claimsGVR.GroupResource(), "", errors.New("no watch for you"))
	})
	_, err := f.c.Create(context.Background(), baseRequest(time.Minute))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want a Forbidden API error", err)
	}
	assertCleanedUp(t, f)
}

// TestCreateRecoversFromBrokenWatch breaks the first watch in several ways; the client must
// resume (re-GET on 410) and still see the claim become ready.
func TestCreateRecoversFromBrokenWatch(t *testing.T) {
	gone := apierrors.NewGone("too old resource version")
	tests := []struct {
		name    string
		first   func() (watch.Interface, error)
		wantGet bool
	}{
		{"stream closed", func() (watch.Interface, error) {
			w := watch.NewFake()
			w.Stop()
			return w, nil
		}, false},
		{"410 error event", func() (watch.Interface, error) {
			w := watch.NewRaceFreeFake()
			w.Error(&gone.ErrStatus)
			return w, nil
		}, true},
		{"410 on watch start", func() (watch.Interface, error) { return nil, gone }, true},
		{"expired on watch start", func() (watch.Interface, error) {
			return nil, apierrors.NewResourceExpired("expired")
		}, true},
		{"transient 500", func() (watch.Interface, error) {
			return nil, apierrors.NewInternalError(errors.New("etcd hiccup"))
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, sandboxObj(testNS, "sb", "", []string{"10.0.0.4"}))
			var calls atomic.Int32
			f.ext.PrependWatchReactor("sandboxclaims", func(clienttesting.Action) (bool, watch.Interface, error) {
				if calls.Add(1) > 1 {
					return false, nil, nil
				}
				w, err := tt.first()
				return true, w, err
			})
			done := f.controller(f.createdNames(), f.status(readyStatus("sb")))
			claim, err := f.c.Create(context.Background(), baseRequest(20*time.Second))
			checkController(t, done)
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			if claim.SandboxName != "sb" {
				t.Errorf("SandboxName = %q", claim.SandboxName)
			}
			if calls.Load() < 2 {
				t.Errorf("watch started %d times, want a restart", calls.Load())
			}
			if got := f.count("get", "sandboxclaims") > 0; got != tt.wantGet {
				t.Errorf("re-GET happened = %v, want %v", got, tt.wantGet)
			}
		})
	}
}

func TestCreateIgnoresOtherClaimsOnTheWatch(t *testing.T) {
	// A fake (or misbehaving) server ignores the field selector: another claim turning ready
	// or failing must not end the wait.
	other := claimObj(testNS, "other", map[string]string{testKey: testOwner}, extv1beta1.SandboxClaimStatus{})
	f := newFakes(t, other, sandboxObj(testNS, "sb", "", []string{"10.0.0.5"}))
	done := f.controller(f.createdNames(),
		func(ns, _ string) error {
			return f.setClaimStatus(ns, "other", extv1beta1.SandboxClaimStatus{Conditions: []metav1.Condition{
				cond("Ready", metav1.ConditionFalse, "InvalidMetadata", "not mine")}})
		},
		func(ns, _ string) error { return f.setClaimStatus(ns, "other", readyStatus("nope")) },
		f.status(readyStatus("sb")),
	)
	claim, err := f.c.Create(context.Background(), baseRequest(10*time.Second))
	checkController(t, done)
	if err != nil || claim.SandboxName != "sb" {
		t.Fatalf("Create = %+v, %v; want the own claim bound to sb", claim, err)
	}
}

func TestCreateCancelledDuringPostCleansUp(t *testing.T) {
	f := newFakes(t)
	ctx, cancel := context.WithCancel(context.Background())
	// The POST reaches the server, then the caller gives up before the response arrives.
	f.ext.PrependReactor("create", "sandboxclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.CreateAction).GetObject()
		if err := f.ext.Tracker().Create(claimsGVR, obj, testNS); err != nil {
			return true, nil, err
		}
		cancel()
		return true, nil, context.Canceled
	})
	_, err := f.c.Create(ctx, baseRequest(time.Minute))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	assertCleanedUp(t, f)
}
