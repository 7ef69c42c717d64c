package kube

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

func ptr[T any](v T) *T { return &v }

func TestCreateBuildsClaim(t *testing.T) {
	shutdownAt := metav1.NewTime(time.Date(2026, 8, 23, 10, 12, 42, 0, time.UTC)) // testNow+90s, whole seconds
	tests := []struct {
		name string
		req  CreateRequest
		want func(c *extv1beta1.SandboxClaim)
	}{
		{
			name: "minimal",
			req:  CreateRequest{},
			want: func(*extv1beta1.SandboxClaim) {},
		},
		{
			name: "labels lifecycle and pod metadata",
			req: CreateRequest{
				Labels:         map[string]string{"team": "a"},
				ShutdownAfter:  ptr(90 * time.Second),
				PodLabels:      map[string]string{"sandbox.users.io/x": "y"},
				PodAnnotations: map[string]string{"example.com/note": "free text"},
			},
			want: func(c *extv1beta1.SandboxClaim) {
				c.Labels["team"] = "a"
				c.Annotations[shutdownAfterAnno] = "90"
				c.Spec.Lifecycle = &extv1beta1.Lifecycle{ShutdownTime: &shutdownAt, ShutdownPolicy: extv1beta1.ShutdownPolicyDelete}
				c.Spec.AdditionalPodMetadata = sandboxv1beta1.PodMetadata{
					Labels:      map[string]string{"sandbox.users.io/x": "y"},
					Annotations: map[string]string{"example.com/note": "free text"},
				}
			},
		},
		{
			name: "env sorted by name",
			req:  CreateRequest{Env: map[string]string{"ZED": "1", "ALPHA": "a b"}},
			want: func(c *extv1beta1.SandboxClaim) {
				c.Spec.Env = []extv1beta1.EnvVar{{Name: "ALPHA", Value: "a b"}, {Name: "ZED", Value: "1"}}
			},
		},
		{
			name: "pod annotations only",
			req:  CreateRequest{PodLabels: map[string]string{}, PodAnnotations: map[string]string{"example.com/a": "b"}},
			want: func(c *extv1beta1.SandboxClaim) {
				c.Spec.AdditionalPodMetadata = sandboxv1beta1.PodMetadata{Annotations: map[string]string{"example.com/a": "b"}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, sandboxObj(testNS, "pool-abcde", "", []string{"10.0.0.9"}))
			f.c.lifetime.MaxLifetime = 0 // the cap's lifecycle: TestCreateUnderTheCap
			var (
				mu   sync.Mutex
				sent *extv1beta1.SandboxClaim
			)
			f.ext.PrependReactor("create", "sandboxclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				sent = a.(clienttesting.CreateAction).GetObject().(*extv1beta1.SandboxClaim).DeepCopy()
				return false, nil, nil
			})
			done := f.controller(f.createdNames(), f.status(readyStatus("pool-abcde")))
			req := tt.req
			req.Namespace, req.WarmPool, req.Owner, req.ReadyTimeout = testNS, "pool", testOwner, 10*time.Second
			if _, err := f.c.Create(context.Background(), req); err != nil {
				t.Fatalf("Create: %v", err)
			}
			checkController(t, done)

			want := &extv1beta1.SandboxClaim{
				TypeMeta: metav1.TypeMeta{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxClaim"},
				ObjectMeta: metav1.ObjectMeta{
					Name:      "sandbox-claim-00000001",
					Namespace: testNS,
					Labels:    map[string]string{testKey: testOwner, "agents.x-k8s.io/created-by": "k8s-sandbox-mcp"},
					Annotations: map[string]string{
						"agents.x-k8s.io/client-first-requested-at": "2026-08-23T10:11:12.3456789Z",
					},
				},
				Spec: extv1beta1.SandboxClaimSpec{WarmPoolRef: extv1beta1.SandboxWarmPoolRef{Name: "pool"}},
			}
			tt.want(want)
			mu.Lock()
			defer mu.Unlock()
			if !equality.Semantic.DeepEqual(sent, want) {
				t.Errorf("claim sent differs differs:\n%s", jsonDiff(sent, want))
			}
		})
	}
}

func TestCreateValidation(t *testing.T) {
	valid := CreateRequest{Namespace: testNS, WarmPool: "pool", Owner: testOwner}
	tests := []struct {
		name   string
		mutate func(r *CreateRequest)
		want   string
	}{
		{"empty warm pool", func(r *CreateRequest) { r.WarmPool = "" }, "warm pool name is required"},
		{"empty owner", func(r *CreateRequest) { r.Owner = "" }, "owner"},
		{"bad namespace", func(r *CreateRequest) { r.Namespace = "Not_A_NS" }, "namespace"},
		{"owner key in labels", func(r *CreateRequest) { r.Labels = map[string]string{testKey: "other"} }, "reserved"},
		{"attach without request id", func(r *CreateRequest) { r.Attach = true }, "attach needs a request id"},
		{"bad label key", func(r *CreateRequest) { r.Labels = map[string]string{"bad key": "v"} }, `label key "bad key"`},
		{"bad label value", func(r *CreateRequest) { r.Labels = map[string]string{"k": "-bad-"} }, `value "-bad-"`},
		{"bad pod label key", func(r *CreateRequest) { r.PodLabels = map[string]string{"a/b/c": "v"} }, `pod label key "a/b/c"`},
		{"bad pod label value", func(r *CreateRequest) { r.PodLabels = map[string]string{"sandbox.users.io/k": strings.Repeat("x", 64)} }, "pod label"},
		{"bad pod annotation key", func(r *CreateRequest) { r.PodAnnotations = map[string]string{"no spaces": "v"} }, "pod annotation key"},
		{"server's domain in labels", func(r *CreateRequest) { r.Labels = map[string]string{"mcp.k8s-agent-sandbox/principal": "x"} }, "reserved for the server"},
		{"controller's domain in labels", func(r *CreateRequest) { r.Labels = map[string]string{"agents.x-k8s.io/created-by": "x"} }, "domain agents.x-k8s.io"},
		{"controller's subdomain in pod labels", func(r *CreateRequest) { r.PodLabels = map[string]string{"extensions.agents.x-k8s.io/x": "y"} }, "domain agents.x-k8s.io"},
		{"server's domain in pod annotations", func(r *CreateRequest) { r.PodAnnotations = map[string]string{"mcp.k8s-agent-sandbox/ports": "{}"} }, "reserved"},
		{"multus network annotation", func(r *CreateRequest) {
			r.PodAnnotations = map[string]string{"k8s.v1.cni.cncf.io/networks": "macvlan"}
		}, `pod annotation "k8s.v1.cni.cncf.io/networks": this server refuses it`},
		{"istio injection label", func(r *CreateRequest) { r.PodLabels = map[string]string{"sidecar.istio.io/inject": "true"} }, "networking, mesh, runtime isolation, security or eviction"},
		{"zero shutdown", func(r *CreateRequest) { r.ShutdownAfter = ptr(time.Duration(0)) }, "shutdown"},
		{"negative shutdown", func(r *CreateRequest) { r.ShutdownAfter = ptr(-time.Minute) }, "shutdown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t)
			req := valid
			tt.mutate(&req)
			_, err := f.c.Create(context.Background(), req)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Create error = %v, want ErrInvalid mentioning %q", err, tt.want)
			}
			if n := len(f.ext.Actions()); n != 0 {
				t.Errorf("%d API calls made for an invalid request", n)
			}
		})
	}
}

func TestCreateWaitsForReadyThroughWatch(t *testing.T) {
	// Warm-pool adoption: the Sandbox is named after the pool, not the claim.
	f := newFakes(t, sandboxObj(testNS, "pool-x1y2z", "pool-x1y2z.team-a.svc.cluster.local", []string{"10.0.0.7"}))
	f.c.lifetime.MaxLifetime = 0 // the cap's lifecycle: TestCreateUnderTheCap
	done := f.controller(f.createdNames(),
		f.status(extv1beta1.SandboxClaimStatus{Conditions: []metav1.Condition{
			cond("Ready", metav1.ConditionFalse, "SandboxNotReady", "Pod exists with phase: Pending")}}),
		f.status(extv1beta1.SandboxClaimStatus{Conditions: readyStatus("").Conditions}),
		f.status(readyStatus("pool-x1y2z", "10.0.0.1")),
	)
	var (
		mu       sync.Mutex
		messages []string
	)
	claim, err := f.c.Create(context.Background(), CreateRequest{
		Namespace: testNS, WarmPool: "pool", Owner: testOwner, ReadyTimeout: 10 * time.Second,
		Progress: func(m string) { mu.Lock(); messages = append(messages, m); mu.Unlock() },
	})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	checkController(t, done)

	want := Claim{Namespace: testNS, Name: "sandbox-claim-00000001", WarmPool: "pool", SandboxName: "pool-x1y2z",
		PodIPs: []string{"10.0.0.7"}, ServiceFQDN: "pool-x1y2z.team-a.svc.cluster.local", Ready: true}
	if !reflect.DeepEqual(claim, want) {
		t.Errorf("claim differs:\n%s", jsonDiff(claim, want))
	}
	wantMsgs := []string{
		"claim created",
		"waiting for sandbox: pending",
		"waiting for sandbox: SandboxNotReady: Pod exists with phase: Pending",
		"waiting for sandbox: ready, waiting for the claim to be bound",
		"ready",
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(messages, wantMsgs) {
		t.Errorf("progress = %q, want %q", messages, wantMsgs)
	}
	if n := f.count("get", "sandboxclaims"); n != 0 {
		t.Errorf("claim was polled with %d GETs; readiness must come from the watch", n)
	}
	if !f.claimExists(t, testNS, "sandbox-claim-00000001") {
		t.Error("ready claim was deleted")
	}
}

func TestCreatePodIPsFallBackToClaimStatus(t *testing.T) {
	f := newFakes(t, sandboxObj(testNS, "sb", "", nil))
	done := f.controller(f.createdNames(), f.status(readyStatus("sb", "10.0.0.2")))
	claim, err := f.c.Create(context.Background(), CreateRequest{Namespace: testNS, WarmPool: "pool", Owner: testOwner, ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	checkController(t, done)
	if !slices.Equal(claim.PodIPs, []string{"10.0.0.2"}) {
		t.Errorf("PodIPs = %v, want the claim's [10.0.0.2]", claim.PodIPs)
	}
}

func TestCreateRetriesNameCollision(t *testing.T) {
	taken := claimObj(testNS, "sandbox-claim-00000001", map[string]string{testKey: "someone"}, extv1beta1.SandboxClaimStatus{})
	f := newFakes(t, taken, sandboxObj(testNS, "sb", "", []string{"10.0.0.3"}))
	done := f.controller(f.createdNames(), f.status(readyStatus("sb")))
	claim, err := f.c.Create(context.Background(), CreateRequest{Namespace: testNS, WarmPool: "pool", Owner: testOwner, ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	checkController(t, done)
	if claim.Name != "sandbox-claim-00000002" {
		t.Errorf("Name = %q, want the second generated name", claim.Name)
	}
	if !f.claimExists(t, testNS, "sandbox-claim-00000001") {
		t.Error("someone else's claim was touched")
	}
}
