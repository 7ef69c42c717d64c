package kube

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

func TestCatalog(t *testing.T) {
	f := newFakes(t)
	tmpl := func(name, policy string, images ...string) *extv1beta1.SandboxTemplate {
		t := &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS}}
		t.Spec.EnvVarsInjectionPolicy = extv1beta1.EnvVarsInjectionPolicy(policy)
		t.Spec.VolumeClaimTemplatesPolicy = extv1beta1.VolumeClaimTemplatesPolicy(policy)
		for _, img := range images {
			t.Spec.PodTemplate.Spec.Containers = append(t.Spec.PodTemplate.Spec.Containers, corev1.Container{Name: img, Image: img})
		}
		return t
	}
	three := int32(3)
	for _, tp := range []*extv1beta1.SandboxTemplate{tmpl("python", "Allowed", "py:1", "forward:1"), tmpl("cold", "", "big:2")} {
		if err := f.ext.Tracker().Create(extv1beta1.SchemeGroupVersion.WithResource("sandboxtemplates"), tp, testNS); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*extv1beta1.SandboxWarmPool{
		{ObjectMeta: metav1.ObjectMeta{Name: "python-pool", Namespace: testNS},
			Spec:   extv1beta1.SandboxWarmPoolSpec{Replicas: &three, TemplateRef: extv1beta1.SandboxTemplateRef{Name: "python"}},
			Status: extv1beta1.SandboxWarmPoolStatus{ReadyReplicas: 2}},
		{ObjectMeta: metav1.ObjectMeta{Name: "orphan-pool", Namespace: testNS},
			Spec: extv1beta1.SandboxWarmPoolSpec{TemplateRef: extv1beta1.SandboxTemplateRef{Name: "gone"}}},
	} {
		if err := f.ext.Tracker().Create(extv1beta1.SchemeGroupVersion.WithResource("sandboxwarmpools"), p, testNS); err != nil {
			t.Fatal(err)
		}
	}
	pools, templates, err := f.c.Catalog(t.Context(), testNS)
	if err != nil {
		t.Fatal(err)
	}
	want := []Pool{
		{Name: "orphan-pool", Template: "gone", Replicas: 1},
		{Name: "python-pool", Template: "python", Images: []string{"py:1", "forward:1"}, Replicas: 3, Ready: 2, EnvPolicy: "Allowed", VolumePolicy: "Allowed"},
	}
	if !slices.EqualFunc(pools, want, func(a, b Pool) bool {
		return a.Name == b.Name && a.Template == b.Template && slices.Equal(a.Images, b.Images) && a.Replicas == b.Replicas &&
			a.Ready == b.Ready && a.EnvPolicy == b.EnvPolicy && a.VolumePolicy == b.VolumePolicy
	}) {
		t.Errorf("pools %+v\nwant %+v", pools, want)
	}
	if len(templates) != 1 || templates[0].Name != "cold" || templates[0].EnvPolicy != "Disallowed" || templates[0].VolumePolicy != "Disallowed" || !slices.Equal(templates[0].Images, []string{"big:2"}) {
		t.Errorf("templates without a pool: %+v", templates)
	}
}
