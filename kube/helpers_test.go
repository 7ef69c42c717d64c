package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	corefake "sigs.k8s.io/agent-sandbox/clients/k8s/clientset/versioned/fake"
	extfake "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/clientset/versioned/fake"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

const (
	testNS    = "team-a"
	testOwner = "session-1"
	testKey   = "mcp.k8s-agent-sandbox/session-id"
)

var (
	testNow    = time.Date(2026, 8, 23, 10, 11, 12, 345678900, time.UTC)
	claimsGVR  = extv1beta1.SchemeGroupVersion.WithResource("sandboxclaims")
	sandboxGVR = sandboxv1beta1.SchemeGroupVersion.WithResource("sandboxes")
)

type fakes struct {
	c    *Client
	ext  *extfake.Clientset
	core *corefake.Clientset
	dyn  *dynfake.FakeDynamicClient
	// watches is signalled each time a claim watch is registered with the tracker, so tests
	// can change the claim knowing the change will arrive as a watch event.
	watches chan struct{}
}

func newFakes(t *testing.T, objs ...runtime.Object) *fakes {
	t.Helper()
	f := &fakes{
		ext:  extfake.NewSimpleClientset(),
		core: corefake.NewSimpleClientset(),
		dyn: dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{gatewayGVR: "GatewayList"}),
		watches: make(chan struct{}, 16),
	}
	// Tracker.Create with an explicit resource: the constructors' kind-to-resource guess
	// yields "sandboxs" and "gatewaies".
	for _, o := range objs {
		var err error
		switch obj := o.(type) {
		case *extv1beta1.SandboxClaim:
			err = f.ext.Tracker().Create(claimsGVR, obj, obj.Namespace)
		case *sandboxv1beta1.Sandbox:
			err = f.core.Tracker().Create(sandboxGVR, obj, obj.Namespace)
		case *unstructured.Unstructured:
			err = f.dyn.Tracker().Create(gatewayGVR, obj, obj.GetNamespace())
		default:
			err = fmt.Errorf("unexpected fixture %T", o)
		}
		if err != nil {
			t.Fatalf("adding fixture: %v", err)
		}
	}
	f.ext.PrependWatchReactor("sandboxclaims", func(a clienttesting.Action) (bool, watch.Interface, error) {
		wa := a.(clienttesting.WatchActionImpl)
		w, err := f.ext.Tracker().Watch(a.GetResource(), a.GetNamespace(), wa.ListOptions)
		select {
		case f.watches <- struct{}{}:
		default: // nobody is listening; never block the client
		}
		return true, w, err
	})
	var n atomic.Int32
	f.c = NewFromClients(f.ext, f.core, f.dyn, testKey)
	f.c.now = func() time.Time { return testNow }
	f.c.newName = func() (string, error) { return fmt.Sprintf("sandbox-claim-%08x", n.Add(1)), nil }
	return f
}

// createdNames reports the name of every claim the client creates.
func (f *fakes) createdNames() <-chan string {
	ch := make(chan string, 8)
	f.ext.PrependReactor("create", "sandboxclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ch <- a.(clienttesting.CreateAction).GetObject().(*extv1beta1.SandboxClaim).Name
		return false, nil, nil
	})
	return ch
}

// setClaimStatus replaces the claim's status like the controller would.
func (f *fakes) setClaimStatus(ns, name string, st extv1beta1.SandboxClaimStatus) error {
	// Through the tracker, so the client's own actions stay countable.
	obj, err := f.ext.Tracker().Get(claimsGVR, ns, name)
	if err != nil {
		return err
	}
	claim := obj.(*extv1beta1.SandboxClaim)
	claim.Status = st
	return f.ext.Tracker().Update(claimsGVR, claim, ns)
}

func (f *fakes) claimExists(t *testing.T, ns, name string) bool {
	t.Helper()
	_, err := f.ext.Tracker().Get(claimsGVR, ns, name)
	return err == nil
}

func (f *fakes) count(verb, resource string) int {
	n := 0
	for _, a := range f.ext.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}

func readyStatus(sandbox string, ips ...string) extv1beta1.SandboxClaimStatus {
	return extv1beta1.SandboxClaimStatus{
		Conditions:    []metav1.Condition{cond("Ready", metav1.ConditionTrue, "DependenciesReady", "Pod is Ready")},
		SandboxStatus: extv1beta1.SandboxStatus{Name: sandbox, PodIPs: ips},
	}
}

func withFQDN(st extv1beta1.SandboxClaimStatus, fqdn string) extv1beta1.SandboxClaimStatus {
	st.SandboxStatus.ServiceFQDN = fqdn
	return st
}

func claimObj(ns, name string, labels map[string]string, st extv1beta1.SandboxClaimStatus) *extv1beta1.SandboxClaim {
	return &extv1beta1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
			CreationTimestamp: metav1.NewTime(testNow.Truncate(time.Second))},
		Spec:   extv1beta1.SandboxClaimSpec{WarmPoolRef: extv1beta1.SandboxWarmPoolRef{Name: "pool"}},
		Status: st,
	}
}

func sandboxObj(ns, name, fqdn string, ips []string, conds ...metav1.Condition) *sandboxv1beta1.Sandbox {
	return &sandboxv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status:     sandboxv1beta1.SandboxStatus{ServiceFQDN: fqdn, PodIPs: ips, Conditions: conds},
	}
}

// controller plays the claim controller: once the client created a claim and watches it, it
// applies each step in turn. The returned channel yields nil or what went wrong.
func (f *fakes) controller(names <-chan string, steps ...func(ns, name string) error) <-chan error {
	done := make(chan error, 1)
	go func() {
		select {
		case <-f.watches:
		case <-time.After(10 * time.Second):
			done <- errors.New("no claim was watched")
			return
		}
		// Every create attempt (even a rejected one) happens before the watch; the last is ours.
		var name string
		for len(names) > 0 {
			name = <-names
		}
		if name == "" {
			done <- errors.New("no claim was created")
			return
		}
		for _, step := range steps {
			if err := step(testNS, name); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
}

func (f *fakes) status(st extv1beta1.SandboxClaimStatus) func(ns, name string) error {
	return func(ns, name string) error { return f.setClaimStatus(ns, name, st) }
}

func checkController(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("controller: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("controller did not finish")
	}
}

// jsonDiff renders both values for a failure message.
func jsonDiff(got, want any) string {
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	return "got:\n" + string(g) + "\nwant:\n" + string(w)
}
