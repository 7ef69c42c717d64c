package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	extfake "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/clientset/versioned/fake"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/config"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// cluster describes a fake cluster; the zero value is healthy but for what a case changes.
type cluster struct {
	noCRDs, noMetrics, apiDown   bool
	objects                      []runtime.Object // core: Deployments, Leases, DaemonSets
	pools                        []runtime.Object // extensions: pools and templates
	deny                         map[string]bool  // "resource/verb" the identity may not do
	daemonSetsForbidden, noPools bool
}

func int32p(v int32) *int32 { return &v }

func pool(name string, replicas, ready int32) *extv1beta1.SandboxWarmPool {
	return &extv1beta1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "sbx"},
		Spec:   extv1beta1.SandboxWarmPoolSpec{Replicas: int32p(replicas), TemplateRef: extv1beta1.SandboxTemplateRef{Name: name}},
		Status: extv1beta1.SandboxWarmPoolStatus{ReadyReplicas: ready}}
}

func template(name string) *extv1beta1.SandboxTemplate {
	return &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "sbx"}}
}

func controllerDeploy(available int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: controllerDeployment, Namespace: controllerNamespace},
		Spec: appsv1.DeploymentSpec{Replicas: int32p(1)}, Status: appsv1.DeploymentStatus{AvailableReplicas: available}}
}

func engine(name string, ready int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
		Status: appsv1.DaemonSetStatus{NumberReady: ready, DesiredNumberScheduled: 1}}
}

func unscheduled(d *appsv1.DaemonSet) *appsv1.DaemonSet {
	d.Status.DesiredNumberScheduled = 0
	return d
}

func (c cluster) env(t *testing.T) Env {
	t.Helper()
	objs := c.objects
	if objs == nil {
		objs = []runtime.Object{controllerDeploy(1), engine("calico-node", 1)}
	}
	kc := fake.NewClientset(objs...)
	disc := kc.Discovery().(*fakediscovery.FakeDiscovery)
	if !c.noCRDs {
		disc.Resources = append(disc.Resources,
			&metav1.APIResourceList{GroupVersion: "agents.x-k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "sandboxes"}}},
			&metav1.APIResourceList{GroupVersion: "extensions.agents.x-k8s.io/v1beta1", APIResources: []metav1.APIResource{
				{Name: "sandboxclaims"}, {Name: "sandboxtemplates"}, {Name: "sandboxwarmpools"}}})
	}
	if !c.noMetrics {
		disc.Resources = append(disc.Resources, &metav1.APIResourceList{GroupVersion: metricsGV, APIResources: []metav1.APIResource{{Name: "pods"}}})
	}
	if c.apiDown {
		kc.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("connection refused")
		})
	}
	if c.daemonSetsForbidden {
		kc.PrependReactor("list", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, "", errors.New("no"))
		})
	}
	kc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		attr := r.Spec.ResourceAttributes
		// "resource/verb" denies it in every group; "group:resource/verb" in that one.
		r.Status.Allowed = !c.deny[attr.Resource+"/"+attr.Verb] && !c.deny[attr.Group+":"+attr.Resource+"/"+attr.Verb]
		return true, r, nil
	})
	pools := c.pools
	if pools == nil && !c.noPools {
		pools = []runtime.Object{pool("sandboxd-pool", 2, 2), template("sandboxd-pool")}
	}
	return Env{Kube: kc, Extensions: extfake.NewSimpleClientset(pools...), Server: "https://api", User: "admin", Namespace: "sbx",
		Config: config.Config{Connection: conn.Config{Type: conn.TypeSandboxdInCluster}}}
}

func byCheck(rs []Result) map[string]Result {
	m := map[string]Result{}
	for _, r := range rs {
		m[r.Check] = r
	}
	return m
}

func TestRun(t *testing.T) {
	stale := metav1.NewMicroTime(time.Now().Add(-10 * time.Minute))
	fresh := metav1.NewMicroTime(time.Now())
	lease := func(at metav1.MicroTime) *coordinationv1.Lease {
		holder := "pod-1"
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: controllerLease, Namespace: controllerNamespace},
			Spec: coordinationv1.LeaseSpec{RenewTime: &at, HolderIdentity: &holder}}
	}
	cases := []struct {
		name  string
		c     cluster
		check string
		want  Status
		says  string
	}{
		{"crds absent", cluster{noCRDs: true}, CheckCRDs, Fail, "missing: sandboxes.agents.x-k8s.io"},
		{"pools not checked without crds", cluster{noCRDs: true}, CheckPools, Fail, "CRDs are missing"},
		{"metrics absent", cluster{noMetrics: true}, CheckMetrics, Fail, "metrics.k8s.io/v1beta1 is not served"},
		{"pool scaled to zero", cluster{pools: []runtime.Object{pool("p", 0, 0), template("p")}}, CheckPools, Fail, "pool sbx/p is scaled to zero"},
		{"pool not ready", cluster{pools: []runtime.Object{pool("p", 2, 0), template("p")}}, CheckPools, Fail, "none of 2 sandboxes ready"},
		{"template missing", cluster{pools: []runtime.Object{pool("p", 1, 1)}}, CheckPools, Fail, `names template "p", which does not exist`},
		{"no pools", cluster{noPools: true}, CheckPools, Fail, "namespace sbx has no warm pool"},
		{"needed verb denied", cluster{deny: map[string]bool{"sandboxclaims/delete": true}}, CheckRBAC, Fail, "delete sandboxclaims in sbx (breaks delete_sandbox"},
		{"optional verb denied", cluster{deny: map[string]bool{"events/create": true}}, CheckRBAC, Warn, "create events in sbx (breaks the audit trail"},
		{"controller unavailable", cluster{objects: []runtime.Object{controllerDeploy(0)}}, CheckController, Fail, "has no available replica"},
		{"controller available", cluster{}, CheckController, OK, "1 of 1 replicas available"},
		{"leader lease fresh", cluster{objects: []runtime.Object{lease(fresh)}}, CheckController, OK, "ago by pod-1"},
		{"leader lease stale", cluster{objects: []runtime.Object{lease(stale)}}, CheckController, Fail, "no controller is leading"},
		{"no trace but ready pools", cluster{objects: []runtime.Object{}}, CheckController, OK, "warm pools hold 2 sandboxes the controller readied (sbx/sandboxd-pool)"},
		{"no trace at all", cluster{objects: []runtime.Object{}, pools: []runtime.Object{pool("p", 1, 0), template("p")}}, CheckController, Warn, "cannot tell from the API"},
		{"engine running", cluster{}, CheckNetPol, OK, "enforced by calico-node"},
		{"engine down", cluster{objects: []runtime.Object{engine("cilium", 0)}}, CheckNetPol, Fail, "not running"},
		{"a Windows sister scheduled on no node", cluster{objects: []runtime.Object{engine("calico-node", 1), unscheduled(engine("calico-node-windows", 0))}},
			CheckNetPol, OK, "enforced by calico-node"},
		{"flannel alone", cluster{objects: []runtime.Object{engine("kube-flannel-ds", 1)}}, CheckNetPol, Warn, "does not enforce"},
		{"no engine visible", cluster{objects: []runtime.Object{}}, CheckNetPol, Warn, "cannot tell from the API"},
		{"daemonsets forbidden", cluster{daemonSetsForbidden: true}, CheckNetPol, Warn, "not readable with these credentials"},
		{"api down", cluster{apiDown: true}, CheckAPI, Fail, "does not answer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := Run(context.Background(), tc.c.env(t))
			r, ok := byCheck(rs)[tc.check]
			if !ok {
				t.Fatalf("no %s line in %+v", tc.check, rs)
			}
			if r.Status != tc.want || !strings.Contains(r.Message, tc.says) {
				t.Errorf("%s: got %s %q, want %s containing %q", tc.check, r.Status, r.Message, tc.want, tc.says)
			}
			if r.Status != OK && r.Fix == "" {
				t.Errorf("%s %s without a fix", tc.check, r.Status)
			}
			if tc.want == Fail && !Failed(rs) {
				t.Error("Failed() is false with a FAIL line")
			}
		})
	}
}

// TestMetricsToolOff: without the metrics toolset neither the metrics API nor its verb is
// needed: no FAIL for a cluster without metrics-server.
func TestMetricsToolOff(t *testing.T) {
	env := cluster{noMetrics: true, deny: map[string]bool{"metrics.k8s.io:pods/get": true}}.env(t)
	env.NoMetricsTool = true
	rs := byCheck(Run(context.Background(), env))
	if r := rs[CheckMetrics]; r.Status != OK || !strings.Contains(r.Message, "not needed") {
		t.Errorf("metrics: %+v", r)
	}
	if r := rs[CheckRBAC]; r.Status != OK {
		t.Errorf("rbac asked for the metrics verb: %+v", r)
	}
}

func TestHealthyAllOKInOrder(t *testing.T) {
	rs := Run(context.Background(), cluster{}.env(t))
	var order []string
	for _, r := range rs {
		order = append(order, r.Check)
		if r.Status != OK {
			t.Errorf("%s: %s %s", r.Check, r.Status, r.Message)
		}
	}
	want := []string{CheckAPI, CheckCRDs, CheckController, CheckPools, CheckRBAC, CheckMetrics, CheckNetPol}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Errorf("order %v, want %v", order, want)
	}
	if Failed(rs) {
		t.Error("Failed() on a healthy cluster")
	}
}

// TestAPIDownStops: nothing else can be read, so the run is one FAIL line.
func TestAPIDownStops(t *testing.T) {
	if rs := Run(context.Background(), cluster{apiDown: true}.env(t)); len(rs) != 1 {
		t.Errorf("got %d lines, want the api line alone: %+v", len(rs), rs)
	}
}

func TestRBACScopes(t *testing.T) {
	env := cluster{}.env(t)
	env.Config.AllowedNamespaces = []string{"a", "b"}
	env.Config.Connection = conn.Config{Type: conn.TypeGateway, GatewayNamespace: "gw"}
	env.Config.Custom.AllowedImages = []string{"x/*"}
	env.Namespace = "a"
	var asked []string
	env.Kube.(*fake.Clientset).PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		asked = append(asked, r.Spec.ResourceAttributes.Namespace+":"+r.Spec.ResourceAttributes.Resource+"/"+r.Spec.ResourceAttributes.Verb)
		return false, nil, nil
	})
	checkRBAC(context.Background(), env)
	for _, want := range []string{"a:sandboxclaims/create", "b:sandboxclaims/create", "gw:gateways/get", "a:leases/create", "b:sandboxtemplates/create"} {
		if !strings.Contains(strings.Join(asked, " "), want) {
			t.Errorf("not asked %s: %v", want, asked)
		}
	}
	for _, not := range []string{"gw:sandboxclaims/create", "b:leases/create"} {
		if strings.Contains(strings.Join(asked, " "), not) {
			t.Errorf("asked %s, outside its scope", not)
		}
	}
}

// fakeClaims records what the probe did with claims.
type fakeClaims struct {
	createErr error
	created   kube.CreateRequest
	deleted   []string
}

func (f *fakeClaims) Create(_ context.Context, req kube.CreateRequest) (kube.Claim, error) {
	f.created = req
	if f.createErr != nil {
		return kube.Claim{}, f.createErr
	}
	return kube.Claim{Namespace: req.Namespace, Name: "claim-1", SandboxName: "sb-1", PodIPs: []string{"10.0.0.1"}}, nil
}

func (f *fakeClaims) Delete(_ context.Context, ns, name, owner string) error {
	f.deleted = append(f.deleted, ns+"/"+name+"/"+owner)
	return nil
}

// fakeExec answers `true` with code/err, and the egress test with egressCode after printing
// the API server's address.
type fakeExec struct {
	err        error
	code       int
	egressCode int
	argvs      [][]string
}

func (f *fakeExec) Exec(_ context.Context, _ conn.Target, req conn.ExecRequest) (conn.ExecResult, error) {
	f.argvs = append(f.argvs, req.Argv)
	if req.Argv[0] == "bash" {
		_, _ = req.Stdout.Write([]byte("10.96.0.1:443\n"))
		return conn.ExecResult{ExitCode: f.egressCode}, nil
	}
	return conn.ExecResult{ExitCode: f.code}, f.err
}

// TestNetworkPolicyFromProbe: with --probe, what the probe's sandbox could reach decides.
func TestNetworkPolicyFromProbe(t *testing.T) {
	cases := []struct {
		name       string
		egressCode int
		objects    []runtime.Object
		want       Status
		says       string
	}{
		{"blocked by timeout", 124, []runtime.Object{}, OK, "enforced: the probe's sandbox (pool sbx/sandboxd-pool) could not connect to the API server's Service at 10.96.0.1:443"},
		{"refused", 1, []runtime.Object{}, OK, "enforced"},
		{"reached", 0, []runtime.Object{engine("calico-node", 1)}, Warn, "reached the API server's Service at 10.96.0.1:443"},
		{"no bash: the DaemonSets decide", 127, []runtime.Object{}, Warn, "cannot tell from the API"},
		{"engine down wins", 124, []runtime.Object{engine("cilium", 0)}, Fail, "not running"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := cluster{objects: append(tc.objects, controllerDeploy(1))}.env(t)
			exec := &fakeExec{egressCode: tc.egressCode}
			env.Probe = &Prober{Claims: &fakeClaims{}, Conn: exec, Gap: time.Millisecond}
			r := byCheck(Run(context.Background(), env))[CheckNetPol]
			if r.Status != tc.want || !strings.Contains(r.Message, tc.says) {
				t.Errorf("got %s %q, want %s containing %q", r.Status, r.Message, tc.want, tc.says)
			}
			// A connection that got through is tried again (a new pod's policy may lag); a
			// blocked one is final.
			if tries := len(exec.argvs) - 1; (tc.egressCode == 0 && tries != egressTries) || (tc.egressCode != 0 && tries != 1) {
				t.Errorf("egress test ran %d times", tries)
			}
		})
	}
}

func TestProbe(t *testing.T) {
	cases := []struct {
		name      string
		claims    *fakeClaims
		exec      *fakeExec
		want      Status
		says      string
		deletions int
	}{
		{"reaches the sandbox", &fakeClaims{}, &fakeExec{}, OK, "`true` ran through the sandboxd-in-cluster connection; claim deleted", 1},
		{"exec fails, claim still deleted", &fakeClaims{}, &fakeExec{err: conn.ErrUnreachable}, Fail, "sandbox unreachable; claim deleted", 1},
		{"nonzero exit", &fakeClaims{}, &fakeExec{code: 127}, Fail, "exited 127", 1},
		{"claim never ready", &fakeClaims{createErr: errors.New("timed out")}, &fakeExec{}, Fail, "claiming a sandbox from pool sbx/sandboxd-pool: timed out", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := cluster{}.env(t)
			env.Probe = &Prober{Claims: tc.claims, Conn: tc.exec, Wait: time.Second, Gap: time.Millisecond}
			r := byCheck(Run(context.Background(), env))[CheckProbe]
			if r.Status != tc.want || !strings.Contains(r.Message, tc.says) {
				t.Errorf("got %s %q, want %s containing %q", r.Status, r.Message, tc.want, tc.says)
			}
			if len(tc.claims.deleted) != tc.deletions {
				t.Errorf("deleted %v, want %d deletions", tc.claims.deleted, tc.deletions)
			}
			if c := tc.claims.created; c.WarmPool != "sandboxd-pool" || c.ShutdownAfter == nil || !strings.HasPrefix(c.Owner, "doctor-") {
				t.Errorf("claim request %+v: want the ready pool, a shutdown time and a doctor owner", c)
			}
			if tc.deletions > 0 && (len(tc.exec.argvs) == 0 || strings.Join(tc.exec.argvs[0], " ") != "true") {
				t.Errorf("ran %v, want true first", tc.exec.argvs)
			}
		})
	}
}

func TestPrint(t *testing.T) {
	rs := []Result{{Check: CheckAPI, Status: OK, Message: "fine"}, {Check: CheckPools, Status: Fail, Message: "bad", Fix: "do x"}}
	var text, js bytes.Buffer
	if err := Print(&text, rs, false); err != nil {
		t.Fatal(err)
	}
	if got := text.String(); got != "OK   api           fine\nFAIL pools         bad -- fix: do x\n" {
		t.Errorf("text:\n%s", got)
	}
	if err := Print(&js, rs, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("json: %d lines, want one per check:\n%s", len(lines), js.String())
	}
	var back Result
	if err := json.Unmarshal([]byte(lines[1]), &back); err != nil || back != rs[1] {
		t.Errorf("json line %s: %+v %v", lines[1], back, err)
	}
}
