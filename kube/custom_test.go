package kube

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// customFixtures adds a base pool "base" on template "tmpl": a runtime and a sidecar.
func customFixtures(t *testing.T, f *fakes) {
	t.Helper()
	tmpl := &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tmpl", Namespace: testNS}}
	tmpl.Spec.EnvVarsInjectionPolicy = extv1beta1.EnvVarsInjectionPolicyAllowed
	tmpl.Spec.PodTemplate.Spec.Containers = []corev1.Container{
		{Name: "runtime", Image: "rt:1", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("25m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")}}},
		{Name: "sidecar", Image: "side:1"},
	}
	pool := &extv1beta1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Name: "base", Namespace: testNS},
		Spec: extv1beta1.SandboxWarmPoolSpec{TemplateRef: extv1beta1.SandboxTemplateRef{Name: "tmpl"}}}
	for gvr, o := range map[string]any{"sandboxtemplates": tmpl, "sandboxwarmpools": pool} {
		var err error
		switch obj := o.(type) {
		case *extv1beta1.SandboxTemplate:
			err = f.ext.Tracker().Create(extv1beta1.SchemeGroupVersion.WithResource(gvr), obj, testNS)
		case *extv1beta1.SandboxWarmPool:
			err = f.ext.Tracker().Create(extv1beta1.SchemeGroupVersion.WithResource(gvr), obj, testNS)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestEnsureCustomPool(t *testing.T) {
	f := newFakes(t)
	customFixtures(t, f)
	ctx := t.Context()
	spec := CustomSpec{BasePool: "base", Image: "rt:2", CPUMillis: 500, MemoryMiB: 128}
	name, err := f.c.EnsureCustomPool(ctx, testNS, spec)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.c.EnsureCustomPool(ctx, testNS, spec)
	if err != nil || again != name {
		t.Fatalf("the same request gave %q (%v), first %q", again, err, name)
	}
	other, _ := f.c.EnsureCustomPool(ctx, testNS, CustomSpec{BasePool: "base", Image: "rt:2", CPUMillis: 600, MemoryMiB: 128})
	if other == name {
		t.Error("different limits share a pool")
	}
	tmpl, err := f.ext.ExtensionsV1beta1().SandboxTemplates(testNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt, side := tmpl.Spec.PodTemplate.Spec.Containers[0], tmpl.Spec.PodTemplate.Spec.Containers[1]
	if rt.Image != "rt:2" || side.Image != "side:1" || tmpl.Spec.EnvVarsInjectionPolicy != extv1beta1.EnvVarsInjectionPolicyAllowed {
		t.Errorf("derived template %+v", tmpl.Spec)
	}
	if l := rt.Resources.Limits; l.Cpu().MilliValue() != 500 || l.Memory().Value() != 128<<20 {
		t.Errorf("limits %v", l)
	}
	// The request above the new memory limit comes down to it; the CPU request stays.
	if r := rt.Resources.Requests; r.Cpu().MilliValue() != 25 || r.Memory().Value() != 128<<20 {
		t.Errorf("requests %v", r)
	}
	pool, err := f.ext.ExtensionsV1beta1().SandboxWarmPools(testNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *pool.Spec.Replicas != 0 || pool.Spec.TemplateRef.Name != name || pool.Labels[ManagedByLabel] != managedByValue ||
		pool.Annotations[lastUsedAnnotation] != testNow.UTC().Format(time.RFC3339) {
		t.Errorf("derived pool %+v", pool)
	}
	if _, err := f.c.EnsureCustomPool(ctx, testNS, CustomSpec{BasePool: "nope", CPUMillis: 1}); !errors.Is(err, ErrBaseMissing) {
		t.Errorf("missing base: %v", err)
	}
}

func TestCollectCustomPools(t *testing.T) {
	f := newFakes(t)
	customFixtures(t, f)
	ctx := t.Context()
	used, _ := f.c.EnsureCustomPool(ctx, testNS, CustomSpec{BasePool: "base", CPUMillis: 100})
	idle, _ := f.c.EnsureCustomPool(ctx, testNS, CustomSpec{BasePool: "base", CPUMillis: 200})
	claim := claimObj(testNS, "c", ownedBy(testOwner), readyStatus("sb"))
	claim.Spec.WarmPoolRef.Name = used
	if err := f.ext.Tracker().Create(claimsGVR, claim, testNS); err != nil {
		t.Fatal(err)
	}
	if got, err := f.c.CollectCustomPools(ctx, testNS, time.Hour); err != nil || len(got) != 0 {
		t.Fatalf("fresh pools collected: %v %v", got, err)
	}
	f.c.now = func() time.Time { return testNow.Add(2 * time.Hour) }
	got, err := f.c.CollectCustomPools(ctx, testNS, time.Hour)
	if err != nil || !slices.Equal(got, []string{idle}) {
		t.Fatalf("collected %v (%v), want [%s]", got, err, idle)
	}
	pools, _ := f.ext.ExtensionsV1beta1().SandboxWarmPools(testNS).List(ctx, metav1.ListOptions{})
	templates, _ := f.ext.ExtensionsV1beta1().SandboxTemplates(testNS).List(ctx, metav1.ListOptions{})
	var names []string
	for _, p := range pools.Items {
		names = append(names, "pool/"+p.Name)
	}
	for _, t := range templates.Items {
		names = append(names, "template/"+t.Name)
	}
	slices.Sort(names)
	want := []string{"pool/base", "pool/" + used, "template/" + used, "template/tmpl"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("left %v, want %v", names, want)
	}
}

func TestCustomPolicyAllowsImage(t *testing.T) {
	p := CustomPolicy{AllowedImages: []string{"a/b:1", "reg/team/*"}}
	for img, want := range map[string]bool{"a/b:1": true, "a/b:2": false, "reg/team/x:1": true, "reg/teamx:1": false, "": false} {
		if got := p.AllowsImage(img); got != want {
			t.Errorf("AllowsImage(%q) = %v, want %v", img, got, want)
		}
	}
}

func TestCheckImagePattern(t *testing.T) {
	for p, ok := range map[string]bool{"reg/a:1": true, "reg/team/*": true, "python:*": true, "img@*": true,
		"reg/org*": false, "*": false, "reg/*/x": false, "reg/**": false} {
		if err := CheckImagePattern(p); (err == nil) != ok {
			t.Errorf("CheckImagePattern(%q) = %v, want ok %v", p, err, ok)
		}
	}
}
