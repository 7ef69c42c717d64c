package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// Pool is a warm pool as a model choosing where to run needs it.
type Pool struct {
	Name     string
	Template string
	// Images of the template's containers; empty when the template is missing.
	Images          []string
	Replicas, Ready int32
	// EnvPolicy is the template's envVarsInjectionPolicy (Disallowed, Allowed, Overrides), or
	// "" when the template is missing; VolumePolicy its volumeClaimTemplatesPolicy, the same way.
	EnvPolicy, VolumePolicy string
}

// Template is a SandboxTemplate no warm pool uses (v1beta1 claims can only name pools).
type Template struct {
	Name                    string
	Images                  []string
	EnvPolicy, VolumePolicy string
}

// Catalog lists the warm pools of a namespace and the templates no pool uses: two LISTs.
func (c *Client) Catalog(ctx context.Context, namespace string) ([]Pool, []Template, error) {
	pools, err := c.ext.ExtensionsV1beta1().SandboxWarmPools(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing sandbox warm pools in namespace %q: %w", namespace, err)
	}
	templates, err := c.ext.ExtensionsV1beta1().SandboxTemplates(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing sandbox templates in namespace %q: %w", namespace, err)
	}
	byName := map[string]*extv1beta1.SandboxTemplate{}
	for i := range templates.Items {
		byName[templates.Items[i].Name] = &templates.Items[i]
	}
	used := map[string]bool{}
	out := make([]Pool, 0, len(pools.Items))
	for _, p := range pools.Items {
		pool := Pool{Name: p.Name, Template: p.Spec.TemplateRef.Name, Replicas: 1, Ready: p.Status.ReadyReplicas}
		if p.Spec.Replicas != nil {
			pool.Replicas = *p.Spec.Replicas
		}
		if t, ok := byName[pool.Template]; ok {
			used[t.Name] = true
			pool.Images, pool.EnvPolicy, pool.VolumePolicy = images(t.Spec.PodTemplate.Spec), envPolicy(t), volumePolicy(t)
		}
		out = append(out, pool)
	}
	var rest []Template
	for _, t := range templates.Items {
		if !used[t.Name] {
			rest = append(rest, Template{Name: t.Name, Images: images(t.Spec.PodTemplate.Spec), EnvPolicy: envPolicy(&t), VolumePolicy: volumePolicy(&t)})
		}
	}
	slices.SortFunc(out, func(a, b Pool) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(rest, func(a, b Template) int { return strings.Compare(a.Name, b.Name) })
	return out, rest, nil
}

func images(spec corev1.PodSpec) []string {
	var out []string
	for _, c := range spec.Containers {
		if c.Image != "" && !slices.Contains(out, c.Image) {
			out = append(out, c.Image)
		}
	}
	return out
}

// envPolicy is the template's policy with the API's default made explicit.
func envPolicy(t *extv1beta1.SandboxTemplate) string {
	if p := string(t.Spec.EnvVarsInjectionPolicy); p != "" {
		return p
	}
	return "Disallowed"
}

// volumePolicy is the template's volumeClaimTemplatesPolicy with the API's default made explicit.
func volumePolicy(t *extv1beta1.SandboxTemplate) string {
	if p := string(t.Spec.VolumeClaimTemplatesPolicy); p != "" {
		return p
	}
	return "Disallowed"
}
