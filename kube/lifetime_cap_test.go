package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

func dur(d time.Duration) *time.Duration { return &d }

// TestCreateUnderTheCap: create_sandbox's window past the hard cap is refused with extend's
// message before any API call; none (null) means the cap; without a cap nothing changes.
func TestCreateUnderTheCap(t *testing.T) {
	sec := func(d time.Duration) time.Time { return testNow.Add(d).UTC().Truncate(time.Second) }
	tests := []struct {
		name       string
		maxLife    time.Duration
		after      *time.Duration
		wantErr    string
		wantAt     time.Time // zero: no lifecycle
		wantWindow string    // the window annotation; "": none
	}{
		{name: "within the cap", maxLife: time.Hour, after: dur(10 * time.Minute), wantAt: sec(10 * time.Minute), wantWindow: "600"},
		{name: "at the cap", maxLife: time.Hour, after: dur(time.Hour), wantAt: sec(time.Hour), wantWindow: "3600"},
		{name: "past the cap", maxLife: 150 * time.Second, after: dur(600 * time.Second),
			wantErr: "invalid request: a sandbox lives at most 2m30s from its creation (until 2026-08-23T10:13:42Z): shutdown_after_seconds may be at most 150 now"},
		{name: "a year under the default cap", maxLife: DefaultMaxLifetime, after: dur(365 * 24 * time.Hour),
			wantErr: "a sandbox lives at most 24h from its creation (until 2026-08-24T10:11:12Z): shutdown_after_seconds may be at most 86400 now"},
		{name: "none under the cap is the cap", maxLife: 150 * time.Second, wantAt: sec(150 * time.Second)},
		{name: "none without a cap", maxLife: 0},
		{name: "a year without a cap", maxLife: 0, after: dur(365 * 24 * time.Hour), wantAt: sec(365 * 24 * time.Hour), wantWindow: "31536000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t)
			f.c.lifetime = Lifetime{RenewOnUse: true, MaxLifetime: tt.maxLife}
			req := CreateRequest{Namespace: testNS, WarmPool: "pool", Owner: testOwner, ShutdownAfter: tt.after}
			if tt.wantErr != "" {
				_, err := f.c.Create(context.Background(), req)
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Create: %v\nwant ErrInvalid containing %s", err, tt.wantErr)
				}
				if n := len(f.ext.Actions()); n > 0 {
					t.Errorf("%d API calls for a refused create, want none", n)
				}
				return
			}
			claim := f.c.buildClaim(req, "c1")
			var at time.Time
			if lc := claim.Spec.Lifecycle; lc != nil && lc.ShutdownTime != nil {
				at = lc.ShutdownTime.Time
				if lc.ShutdownPolicy != extv1beta1.ShutdownPolicyDelete {
					t.Errorf("shutdown policy %q", lc.ShutdownPolicy)
				}
			}
			if !at.Equal(tt.wantAt) || claim.Annotations[shutdownAfterAnno] != tt.wantWindow {
				t.Errorf("shutdown time %v, window %q; want %v, %q", at, claim.Annotations[shutdownAfterAnno], tt.wantAt, tt.wantWindow)
			}
		})
	}
}

// TestExtendPastAReachedCap: the one message says so when nothing is left.
func TestExtendPastAReachedCap(t *testing.T) {
	f := newFakes(t, lifetimeClaim(25*time.Hour, 5*time.Minute, time.Minute))
	_, err := f.c.Extend(context.Background(), testNS, "c1", testOwner, time.Minute)
	want := "a sandbox lives at most 24h from its creation (until 2026-08-23T09:11:12Z): this one has reached it and is deleted; create a new sandbox"
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Extend: %v\nwant %s", err, want)
	}
}

// TestSuspendResumeUnderTheCap: with the lifetime paused, a suspended claim still ends at
// creation plus the cap, a resume never restarts it past that, and one past it is ended with
// the cap's message instead of resumed.
func TestSuspendResumeUnderTheCap(t *testing.T) {
	created := func(age time.Duration, shutdownIn time.Duration, leftAnno string) func(*extv1beta1.SandboxClaim) {
		return func(c *extv1beta1.SandboxClaim) {
			c.CreationTimestamp = metav1.NewTime(testNow.Add(-age).Truncate(time.Second))
			if shutdownIn != 0 {
				at := metav1.NewTime(testNow.Add(shutdownIn).Truncate(time.Second))
				c.Spec.Lifecycle = &extv1beta1.Lifecycle{ShutdownTime: &at, ShutdownPolicy: extv1beta1.ShutdownPolicyDelete}
			}
			if leftAnno != "" {
				c.Annotations = map[string]string{LifetimeLeftAnnotation: leftAnno}
			}
		}
	}
	capAt := func(age time.Duration) time.Time { return testNow.Add(-age).Truncate(time.Second).Add(time.Hour) }
	tests := []struct {
		name    string
		suspend bool // else resume
		mode    sandboxv1beta1.SandboxOperatingMode
		claim   func(*extv1beta1.SandboxClaim)
		wantAt  time.Time // the claim's shutdownTime after; zero: none
		wantErr string
		wantOp  sandboxv1beta1.SandboxOperatingMode // the Sandbox's mode after
	}{
		{name: "suspend keeps the cap", suspend: true, claim: created(10*time.Minute, 5*time.Minute, ""),
			wantAt: capAt(10 * time.Minute), wantOp: sandboxv1beta1.SandboxOperatingModeSuspended},
		{name: "resume within the cap", mode: sandboxv1beta1.SandboxOperatingModeSuspended, claim: created(10*time.Minute, 50*time.Minute, "300"),
			wantAt: testNow.Add(5 * time.Minute).Truncate(time.Second), wantOp: sandboxv1beta1.SandboxOperatingModeRunning},
		{name: "resume clamped to the cap", mode: sandboxv1beta1.SandboxOperatingModeSuspended, claim: created(58*time.Minute, 2*time.Minute, "600"),
			wantAt: capAt(58 * time.Minute), wantOp: sandboxv1beta1.SandboxOperatingModeRunning},
		{name: "resume past the cap ends it", mode: sandboxv1beta1.SandboxOperatingModeSuspended, claim: created(2*time.Hour, 0, "600"),
			wantAt: capAt(2 * time.Hour), wantOp: sandboxv1beta1.SandboxOperatingModeSuspended,
			wantErr: "a sandbox lives at most 1h from its creation (until 2026-08-23T09:11:12Z): this one has reached it and is deleted; create a new sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, suspendFixtures(tt.mode, tt.claim)...)
			f.c.lifetime = Lifetime{RenewOnUse: true, MaxLifetime: time.Hour}
			f.c.pauseLifetime = true
			f.c.suspendWait = 300 * time.Millisecond
			f.sandboxController(reconciled)
			var err error
			if tt.suspend {
				_, err = f.c.Suspend(context.Background(), testNS, "mine", testOwner)
			} else {
				_, err = f.c.Resume(context.Background(), testNS, "mine", testOwner, 500*time.Millisecond, nil)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			obj, err := f.ext.Tracker().Get(claimsGVR, testNS, "mine")
			if err != nil {
				t.Fatal(err)
			}
			if at := shutdownTime(obj.(*extv1beta1.SandboxClaim)); !at.Equal(tt.wantAt) {
				t.Errorf("shutdownTime %v, want %v", at, tt.wantAt)
			}
			if m := modeOf(t, f); m != tt.wantOp {
				t.Errorf("operatingMode %q, want %q", m, tt.wantOp)
			}
		})
	}
}
