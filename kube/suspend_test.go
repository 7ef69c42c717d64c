package kube

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

var (
	readyCond       = cond("Ready", metav1.ConditionTrue, "DependenciesReady", "Pod is Ready")
	suspendedCond   = cond("Suspended", metav1.ConditionTrue, "PodTerminated", "Pod has been terminated. Sandbox is suspended")
	suspendingReady = cond("Ready", metav1.ConditionFalse, "SandboxSuspended", "Sandbox is suspending")
)

// sandboxController plays the Sandbox controller on each read of the Sandbox: what react
// returns replaces its status, as a reconcile of the current spec would.
func (f *fakes) sandboxController(react func(mode sandboxv1beta1.SandboxOperatingMode) sandboxv1beta1.SandboxStatus) {
	f.core.PrependReactor("get", "sandboxes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := f.core.Tracker().Get(sandboxGVR, a.GetNamespace(), a.(clienttesting.GetAction).GetName())
		if err != nil {
			return false, nil, nil
		}
		sb := obj.(*sandboxv1beta1.Sandbox)
		sb.Status = react(sb.Spec.OperatingMode)
		return false, nil, f.core.Tracker().Update(sandboxGVR, sb, sb.Namespace)
	})
}

// reconciled is a controller that finishes every suspension and resume at once; the resumed
// pod has a new IP.
func reconciled(mode sandboxv1beta1.SandboxOperatingMode) sandboxv1beta1.SandboxStatus {
	if mode == sandboxv1beta1.SandboxOperatingModeSuspended {
		return sandboxv1beta1.SandboxStatus{Conditions: []metav1.Condition{
			cond("Ready", metav1.ConditionFalse, "SandboxSuspended", "Sandbox is suspended"), suspendedCond}}
	}
	return sandboxv1beta1.SandboxStatus{PodIPs: []string{"10.0.0.9"}, Conditions: []metav1.Condition{readyCond}}
}

func suspendFixtures(mode sandboxv1beta1.SandboxOperatingMode, claimMut func(*extv1beta1.SandboxClaim)) []runtime.Object {
	claim := claimObj(testNS, "mine", ownedBy(testOwner), readyStatus("sb-mine", "10.0.0.1"))
	if claimMut != nil {
		claimMut(claim)
	}
	sb := sandboxObj(testNS, "sb-mine", "", []string{"10.0.0.1"}, readyCond)
	sb.Spec.OperatingMode = mode
	return []runtime.Object{claim, sb}
}

func modeOf(t *testing.T, f *fakes) sandboxv1beta1.SandboxOperatingMode {
	t.Helper()
	obj, err := f.core.Tracker().Get(sandboxGVR, testNS, "sb-mine")
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*sandboxv1beta1.Sandbox).Spec.OperatingMode
}

func TestSuspend(t *testing.T) {
	shutdown := metav1.NewTime(testNow.Add(10 * time.Minute))
	withLifetime := func(c *extv1beta1.SandboxClaim) {
		c.Spec.Lifecycle = &extv1beta1.Lifecycle{ShutdownTime: &shutdown, ShutdownPolicy: extv1beta1.ShutdownPolicyDelete}
	}
	tests := []struct {
		name          string
		objs          []runtime.Object
		controller    func(sandboxv1beta1.SandboxOperatingMode) sandboxv1beta1.SandboxStatus
		pause         bool
		noCap         bool // Lifetime.MaxLifetime 0
		wantStatus    Status
		wantLifetime  bool   // the claim keeps its shutdownTime
		wantLeftAnno  string // LifetimeLeftAnnotation after
		wantErr       error
		wantNoPatches bool
	}{
		{name: "running", objs: suspendFixtures("", withLifetime), controller: reconciled, wantLifetime: true,
			wantStatus: Status{Status: StatusSuspended, Message: "PodTerminated: Pod has been terminated. Sandbox is suspended"}},
		{name: "pod still terminating when the wait ends", objs: suspendFixtures(sandboxv1beta1.SandboxOperatingModeRunning, nil),
			controller: func(sandboxv1beta1.SandboxOperatingMode) sandboxv1beta1.SandboxStatus {
				return sandboxv1beta1.SandboxStatus{Conditions: []metav1.Condition{suspendingReady,
					cond("Suspended", metav1.ConditionFalse, "PodTerminating", "Pod is terminating. Sandbox is suspending")}}
			},
			wantStatus: Status{Status: StatusSuspended, Message: "PodTerminating: Pod is terminating. Sandbox is suspending"}},
		{name: "already suspended", objs: suspendFixtures(sandboxv1beta1.SandboxOperatingModeSuspended, nil), controller: reconciled,
			wantStatus: Status{Status: StatusSuspended, Message: "PodTerminated: Pod has been terminated. Sandbox is suspended"}, wantNoPatches: true},
		{name: "lifetime paused", objs: suspendFixtures("", withLifetime), controller: reconciled, pause: true, noCap: true, wantLeftAnno: "600",
			wantStatus: Status{Status: StatusSuspended, Message: "PodTerminated: Pod has been terminated. Sandbox is suspended"}},
		// The hard cap keeps a shutdownTime (TestSuspendResumeUnderTheCap checks which).
		{name: "lifetime paused under the cap", objs: suspendFixtures("", withLifetime), controller: reconciled, pause: true, wantLeftAnno: "600",
			wantLifetime: true, wantStatus: Status{Status: StatusSuspended, Message: "PodTerminated: Pod has been terminated. Sandbox is suspended"}},
		{name: "no sandbox yet", objs: []runtime.Object{claimObj(testNS, "mine", ownedBy(testOwner), extv1beta1.SandboxClaimStatus{})},
			wantErr: ErrNotReady, wantNoPatches: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, tt.objs...)
			f.c.pauseLifetime = tt.pause
			if tt.noCap {
				f.c.lifetime.MaxLifetime = 0
			}
			f.c.suspendWait = 300 * time.Millisecond
			if tt.controller != nil {
				f.sandboxController(tt.controller)
			}
			st, err := f.c.Suspend(context.Background(), testNS, "mine", testOwner)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if st != tt.wantStatus {
				t.Errorf("status = %+v, want %+v", st, tt.wantStatus)
			}
			if m := modeOf(t, f); m != sandboxv1beta1.SandboxOperatingModeSuspended {
				t.Errorf("operatingMode = %q", m)
			}
			if n := f.core.Actions(); tt.wantNoPatches && countVerb(n, "patch") > 0 {
				t.Errorf("%d patches of a sandbox already suspended", countVerb(n, "patch"))
			}
			obj, err := f.ext.Tracker().Get(claimsGVR, testNS, "mine")
			if err != nil {
				t.Fatal(err)
			}
			claim := obj.(*extv1beta1.SandboxClaim)
			if got := !shutdownTime(claim).IsZero(); got != tt.wantLifetime {
				t.Errorf("claim has shutdownTime: %v, want %v", got, tt.wantLifetime)
			}
			if got := claim.Annotations[LifetimeLeftAnnotation]; got != tt.wantLeftAnno {
				t.Errorf("lifetime left annotation = %q, want %q", got, tt.wantLeftAnno)
			}
		})
	}
}

func countVerb(actions []clienttesting.Action, verb string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == verb {
			n++
		}
	}
	return n
}

func TestResume(t *testing.T) {
	paused := func(c *extv1beta1.SandboxClaim) {
		c.Annotations = map[string]string{LifetimeLeftAnnotation: "600"}
		c.Status.SandboxStatus.PodIPs = nil
	}
	tests := []struct {
		name       string
		objs       []runtime.Object
		controller func(sandboxv1beta1.SandboxOperatingMode) sandboxv1beta1.SandboxStatus
		wantErr    error
		wantIPs    []string
		wantAt     time.Time // the claim's shutdownTime after; zero: none
		progress   []string
	}{
		{name: "suspended", objs: suspendFixtures(sandboxv1beta1.SandboxOperatingModeSuspended, nil), controller: reconciled,
			wantIPs: []string{"10.0.0.9"}, progress: []string{"resuming", "waiting for sandbox: SandboxSuspended: Sandbox is suspended", "ready"}},
		{name: "lifetime restarted", objs: suspendFixtures(sandboxv1beta1.SandboxOperatingModeSuspended, paused), controller: reconciled,
			wantIPs: []string{"10.0.0.9"}, wantAt: testNow.Add(10 * time.Minute).Truncate(time.Second),
			progress: []string{"resuming", "waiting for sandbox: SandboxSuspended: Sandbox is suspended", "ready"}},
		{name: "running already", objs: suspendFixtures(sandboxv1beta1.SandboxOperatingModeRunning, nil), controller: reconciled,
			wantIPs: []string{"10.0.0.9"}, progress: []string{"ready"}},
		{name: "pod never ready", objs: suspendFixtures(sandboxv1beta1.SandboxOperatingModeSuspended, nil),
			controller: func(sandboxv1beta1.SandboxOperatingMode) sandboxv1beta1.SandboxStatus {
				return sandboxv1beta1.SandboxStatus{Conditions: []metav1.Condition{
					cond("Ready", metav1.ConditionFalse, "DependenciesNotReady", "Pod exists with phase: Pending")}}
			}, wantErr: ErrTimeout},
		{name: "someone else's", objs: []runtime.Object{claimObj(testNS, "mine", ownedBy("session-2"), readyStatus("sb-mine"))},
			wantErr: ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, tt.objs...)
			if tt.controller != nil {
				f.sandboxController(tt.controller)
			}
			var got []string
			// The fixture's Sandbox reads as reconciled at once: the first read after the
			// patch already shows the new state, so the suspended state is the patch's echo.
			c, err := f.c.Resume(context.Background(), testNS, "mine", testOwner, 500*time.Millisecond, func(m string) { got = append(got, m) })
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if m := modeOf(t, f); m != sandboxv1beta1.SandboxOperatingModeRunning {
				t.Errorf("operatingMode = %q", m)
			}
			if !c.Ready || c.Suspended || !slices.Equal(c.PodIPs, tt.wantIPs) || c.SandboxName != "sb-mine" {
				t.Errorf("claim = %+v", c)
			}
			if !c.ShutdownAt.Equal(tt.wantAt) {
				t.Errorf("ShutdownAt = %v, want %v", c.ShutdownAt, tt.wantAt)
			}
			if !slices.Equal(got, tt.progress) {
				t.Errorf("progress = %q, want %q", got, tt.progress)
			}
			obj, _ := f.ext.Tracker().Get(claimsGVR, testNS, "mine")
			if _, ok := obj.(*extv1beta1.SandboxClaim).Annotations[LifetimeLeftAnnotation]; ok {
				t.Error("the lifetime-left annotation outlived the resume")
			}
		})
	}
}

func TestStatusAndGetOfSuspended(t *testing.T) {
	tests := []struct {
		name  string
		conds []metav1.Condition
		want  Status
	}{
		{"suspended", []metav1.Condition{cond("Ready", metav1.ConditionFalse, "SandboxSuspended", "Sandbox is suspended"), suspendedCond},
			Status{Status: StatusSuspended, Message: "PodTerminated: Pod has been terminated. Sandbox is suspended"}},
		{"not reconciled yet", []metav1.Condition{readyCond, cond("Suspended", metav1.ConditionFalse, "NotSuspended", "Sandbox is not suspended")},
			Status{Status: StatusSuspended, Message: "DependenciesReady: Pod is Ready"}},
		{"no conditions", nil, Status{Status: StatusSuspended, Message: "suspension requested"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := suspendFixtures(sandboxv1beta1.SandboxOperatingModeSuspended, nil)
			objs[1].(*sandboxv1beta1.Sandbox).Status.Conditions = tt.conds
			f := newFakes(t, objs...)
			st, err := f.c.Status(context.Background(), testNS, "mine", testOwner)
			if err != nil || st != tt.want {
				t.Errorf("Status = %+v, %v; want %+v", st, err, tt.want)
			}
			c, err := f.c.Get(context.Background(), testNS, "mine", testOwner)
			if err != nil || !c.Suspended {
				t.Errorf("Get = %+v, %v; want Suspended", c, err)
			}
		})
	}
}
