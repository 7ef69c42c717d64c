package kube

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// lifetimeClaim is a claim of testOwner created `age` before testNow, with a window and a
// shutdown time `left` after testNow.
func lifetimeClaim(age, window, left time.Duration) *extv1beta1.SandboxClaim {
	c := claimObj(testNS, "c1", map[string]string{testKey: testOwner}, extv1beta1.SandboxClaimStatus{})
	c.UID = "uid-1"
	c.CreationTimestamp = metav1.NewTime(testNow.Add(-age).Truncate(time.Second))
	at := metav1.NewTime(testNow.Add(left).Truncate(time.Second))
	c.Spec.Lifecycle = &extv1beta1.Lifecycle{ShutdownTime: &at, ShutdownPolicy: extv1beta1.ShutdownPolicyDelete}
	if window > 0 {
		c.Annotations = map[string]string{shutdownAfterAnno: strconv.Itoa(int(window / time.Second))}
	}
	return c
}

func shutdownOf(t *testing.T, f *fakes) (time.Time, string) {
	t.Helper()
	c, err := f.ext.ExtensionsV1beta1().SandboxClaims(testNS).Get(context.Background(), "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Spec.Lifecycle.ShutdownTime.Time, c.Annotations[shutdownAfterAnno]
}

func TestExtend(t *testing.T) {
	tests := []struct {
		name    string
		age     time.Duration
		after   time.Duration
		owner   string
		wantErr string
		want    time.Time
	}{
		{name: "within the cap", age: time.Hour, after: 2 * time.Hour, owner: testOwner, want: testNow.Add(2 * time.Hour).Truncate(time.Second)},
		{name: "past the cap", age: 23 * time.Hour, after: 2 * time.Hour, owner: testOwner, wantErr: "a sandbox lives at most 24h from its creation (until 2026-08-23T11:11:12Z): shutdown_after_seconds may be at most 3600 now"},
		{name: "another owner's", age: time.Hour, after: time.Hour, owner: "someone-else", wantErr: "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, lifetimeClaim(tt.age, 5*time.Minute, time.Minute))
			got, err := f.c.Extend(context.Background(), testNS, "c1", tt.owner, tt.after)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Extend: %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			at, w := shutdownOf(t, f)
			if !at.Equal(tt.want) || !got.ShutdownAt.Equal(tt.want) || w != strconv.Itoa(int(tt.after/time.Second)) {
				t.Errorf("shutdown %v (returned %v), window %q; want %v and %v", at, got.ShutdownAt, w, tt.want, tt.after)
			}
		})
	}
}

func TestRenewOnUse(t *testing.T) {
	tests := []struct {
		name      string
		lifetime  Lifetime
		age, left time.Duration
		want      time.Time // zero: no renewal
	}{
		{name: "under half left", lifetime: DefaultLifetime(), age: time.Minute, left: 20 * time.Second, want: testNow.Add(time.Minute).Truncate(time.Second)},
		{name: "more than half left", lifetime: DefaultLifetime(), age: time.Minute, left: 40 * time.Second},
		{name: "renewal off", lifetime: Lifetime{MaxLifetime: DefaultMaxLifetime}, age: time.Minute, left: 20 * time.Second},
		{name: "stops at the hard cap", lifetime: DefaultLifetime(), age: 24*time.Hour - 30*time.Second, left: 10 * time.Second,
			want: testNow.Add(30 * time.Second).Truncate(time.Second)},
		{name: "at the hard cap already", lifetime: DefaultLifetime(), age: 24*time.Hour - 10*time.Second, left: 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, lifetimeClaim(tt.age, time.Minute, tt.left))
			f.c.lifetime = tt.lifetime
			patched := make(chan struct{}, 16)
			f.ext.PrependReactor("patch", "sandboxclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
				patched <- struct{}{}
				return false, nil, nil
			})
			for range 10 { // a busy sandbox: many calls, at most one PATCH
				if _, err := f.c.Get(context.Background(), testNS, "c1", testOwner); err != nil {
					t.Fatal(err)
				}
			}
			if tt.want.IsZero() {
				select {
				case <-patched:
					t.Fatal("renewed, want no PATCH")
				case <-time.After(100 * time.Millisecond):
				}
				return
			}
			select {
			case <-patched:
			case <-time.After(5 * time.Second):
				t.Fatal("no renewal PATCH")
			}
			deadline := time.Now().Add(5 * time.Second)
			for at, _ := shutdownOf(t, f); !at.Equal(tt.want); at, _ = shutdownOf(t, f) {
				if time.Now().After(deadline) {
					t.Fatalf("shutdown time %v, want %v", at, tt.want)
				}
				time.Sleep(10 * time.Millisecond)
			}
			select {
			case <-patched:
				t.Error("two PATCHes for ten calls within half a window")
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
}

func TestExpiredClaimSaysWhen(t *testing.T) {
	f := newFakes(t)
	at := time.Date(2026, 8, 23, 9, 0, 0, 0, time.UTC)
	f.c.events = k8sfake.NewClientset(&corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: testNS, Name: "c1.expired"},
		InvolvedObject: corev1.ObjectReference{Kind: "SandboxClaim", Namespace: testNS, Name: "c1"},
		Reason:         extv1beta1.ClaimExpiredReason,
		EventTime:      metav1.NewMicroTime(at),
	}).CoreV1()
	_, err := f.c.Get(context.Background(), testNS, "c1", testOwner)
	var expired *ExpiredError
	if !errors.As(err, &expired) || !errors.Is(err, ErrNotFound) || !expired.At.Equal(at) ||
		!strings.Contains(err.Error(), "expired at 2026-08-23T09:00:00Z") {
		t.Fatalf("Get of an expired claim: %v, want an ExpiredError at %v that is also ErrNotFound", err, at)
	}
	if _, err := f.c.Get(context.Background(), testNS, "other", testOwner); errors.As(err, &expired) || !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a claim that never existed: %v, want plain not found", err)
	}
}
