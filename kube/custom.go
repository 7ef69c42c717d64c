package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// Sandboxes built to order: v1beta1 claims can only name a warm pool, so an image or limits of
// the caller's choosing become a SandboxTemplate derived from a base pool's template and a
// warm pool of zero replicas on it (every claim cold-starts). Both are named by a hash of the
// derived template, so equal requests share them, on any replica, without coordination.
const (
	// ManagedByLabel marks what the server created and may delete again.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "k8s-sandbox-mcp"
	// customBaseAnnotation names the pool a custom template was derived from (an annotation:
	// pool names may be longer than a label value).
	customBaseAnnotation = "mcp.k8s-agent-sandbox/custom-base"
	// lastUsedAnnotation on a custom pool is when a claim was last made on it (RFC 3339).
	lastUsedAnnotation = "mcp.k8s-agent-sandbox/last-used"
	customPrefix       = "mcp-custom-"
)

// ErrBaseMissing is a base pool or template that does not exist.
var ErrBaseMissing = errors.New("base warm pool or template not found")

// ErrUnmarked comes with a usable pool that could not be marked used (no patch permission):
// the claim can go ahead; only the collection of unused pools is less sure to spare it.
var ErrUnmarked = errors.New("warm pool not marked used")

// CustomSpec is what a caller changes in a base pool's template: the first container's image
// and its CPU and memory limits (zero: as the template has them).
type CustomSpec struct {
	BasePool  string
	Image     string
	CPUMillis int64
	MemoryMiB int64
}

// EnsureCustomPool returns the warm pool for spec in namespace, creating its template and pool
// when they do not exist yet, and marks it used now. With ErrUnmarked the pool is usable.
func (c *Client) EnsureCustomPool(ctx context.Context, namespace string, spec CustomSpec) (string, error) {
	pools := c.ext.ExtensionsV1beta1().SandboxWarmPools(namespace)
	templates := c.ext.ExtensionsV1beta1().SandboxTemplates(namespace)
	base, err := pools.Get(ctx, spec.BasePool, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("%w: SandboxWarmPool %q in namespace %q", ErrBaseMissing, spec.BasePool, namespace)
	}
	if err != nil {
		return "", fmt.Errorf("reading warm pool %q: %w", spec.BasePool, err)
	}
	tmpl, err := templates.Get(ctx, base.Spec.TemplateRef.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("%w: SandboxTemplate %q of warm pool %q", ErrBaseMissing, base.Spec.TemplateRef.Name, spec.BasePool)
	}
	if err != nil {
		return "", fmt.Errorf("reading template %q: %w", base.Spec.TemplateRef.Name, err)
	}
	derived, err := deriveSpec(tmpl.Spec, spec)
	if err != nil {
		return "", err
	}
	name, err := customName(derived)
	if err != nil {
		return "", err
	}
	labels := map[string]string{ManagedByLabel: managedByValue}
	baseNote := map[string]string{customBaseAnnotation: spec.BasePool}
	zero := int32(0)
	p := &extv1beta1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels,
			Annotations: map[string]string{lastUsedAnnotation: c.now().UTC().Format(time.RFC3339), customBaseAnnotation: spec.BasePool}},
		Spec: extv1beta1.SandboxWarmPoolSpec{Replicas: &zero, TemplateRef: extv1beta1.SandboxTemplateRef{Name: name}},
	}
	// The pool first, then its template: CollectCustomPools deletes in that order too and
	// deletes a template only while its pool is absent, so a pool that exists here keeps one.
	_, err = pools.Create(ctx, p, metav1.CreateOptions{})
	var unmarked error
	switch {
	case apierrors.IsAlreadyExists(err):
		if err := c.touch(ctx, namespace, name); err != nil {
			unmarked = fmt.Errorf("%w: %w", ErrUnmarked, err)
		}
	case err != nil:
		return "", fmt.Errorf("creating warm pool %q: %w", name, err)
	}
	t := &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, Annotations: baseNote}, Spec: derived}
	if _, err := templates.Create(ctx, t, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating template %q: %w", name, err)
	}
	return name, unmarked
}

// touch marks a custom pool used now, which keeps CollectCustomPools away from it.
func (c *Client) touch(ctx context.Context, namespace, name string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		lastUsedAnnotation: c.now().UTC().Format(time.RFC3339)}}})
	if _, err := c.ext.ExtensionsV1beta1().SandboxWarmPools(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("marking warm pool %q used: %w", name, err)
	}
	return nil
}

// deriveSpec sets the first container's image and limits; a request above its new limit is
// lowered to it (the API server refuses requests above limits).
func deriveSpec(base extv1beta1.SandboxTemplateSpec, s CustomSpec) (extv1beta1.SandboxTemplateSpec, error) {
	out := *base.DeepCopy()
	cs := out.PodTemplate.Spec.Containers
	if len(cs) == 0 {
		return out, fmt.Errorf("%w: the base template has no container", ErrInvalid)
	}
	ct := &cs[0]
	if s.Image != "" {
		ct.Image = s.Image
	}
	set := func(name corev1.ResourceName, q resource.Quantity) {
		if ct.Resources.Limits == nil {
			ct.Resources.Limits = corev1.ResourceList{}
		}
		ct.Resources.Limits[name] = q
		if r, ok := ct.Resources.Requests[name]; ok && r.Cmp(q) > 0 {
			ct.Resources.Requests[name] = q
		}
	}
	if s.CPUMillis > 0 {
		set(corev1.ResourceCPU, *resource.NewMilliQuantity(s.CPUMillis, resource.DecimalSI))
	}
	if s.MemoryMiB > 0 {
		set(corev1.ResourceMemory, *resource.NewQuantity(s.MemoryMiB<<20, resource.BinarySI))
	}
	return out, nil
}

// customName is a hash of the derived template: the same request yields the same pool.
func customName(spec extv1beta1.SandboxTemplateSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("hashing the template: %w", err)
	}
	sum := sha256.Sum256(b)
	return customPrefix + hex.EncodeToString(sum[:])[:16], nil
}

// CollectCustomPools deletes the custom pools of namespace (and their templates) that no claim
// uses and that were last used longer than unused ago. It returns the pools it deleted.
func (c *Client) CollectCustomPools(ctx context.Context, namespace string, unused time.Duration) ([]string, error) {
	pools := c.ext.ExtensionsV1beta1().SandboxWarmPools(namespace)
	list, err := pools.List(ctx, metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + managedByValue})
	if err != nil {
		return nil, fmt.Errorf("listing custom warm pools: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	claims, err := c.ext.ExtensionsV1beta1().SandboxClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing claims: %w", err)
	}
	inUse := map[string]bool{}
	for _, cl := range claims.Items {
		inUse[cl.Spec.WarmPoolRef.Name] = true
	}
	var deleted []string
	var errs []error
	for _, p := range list.Items {
		last, perr := time.Parse(time.RFC3339, p.Annotations[lastUsedAnnotation])
		if inUse[p.Name] || (perr == nil && c.now().Sub(last) < unused) {
			continue
		}
		pre := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &p.ResourceVersion}}
		if err := pools.Delete(ctx, p.Name, pre); err != nil && !apierrors.IsNotFound(err) {
			if !apierrors.IsConflict(err) { // touched meanwhile: in use again
				errs = append(errs, fmt.Errorf("deleting warm pool %q: %w", p.Name, err))
			}
			continue
		}
		deleted = append(deleted, p.Name)
		// Another replica may have made the pool again meanwhile (EnsureCustomPool makes the
		// pool before the template): then the template stays.
		if _, err := pools.Get(ctx, p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			continue
		}
		err := c.ext.ExtensionsV1beta1().SandboxTemplates(namespace).Delete(ctx, p.Spec.TemplateRef.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting template %q: %w", p.Spec.TemplateRef.Name, err))
		}
	}
	return deleted, errors.Join(errs...)
}

// CustomPolicy is the operator's rule for sandboxes built to order; the zero value allows none.
type CustomPolicy struct {
	// AllowedImages are exact image names, or prefixes when they end in "/*", ":*" or "@*"
	// (CheckImagePattern): a prefix ends at a path, tag or digest boundary.
	AllowedImages []string
	MaxCPUMillis  int64
	MaxMemoryMiB  int64
	// UnusedTTL is how long a custom pool no claim uses is kept.
	UnusedTTL time.Duration
}

// Defaults of CustomPolicy's caps when the operator enables it without setting them.
const (
	DefaultCustomMaxCPUMillis = 2000
	DefaultCustomMaxMemoryMiB = 4096
	DefaultCustomUnusedTTL    = time.Hour
	// MinCustomMemoryMiB keeps a limit from being so small the runtime cannot start.
	MinCustomMemoryMiB = 64
)

// CheckImagePattern refuses an allowed-image entry whose "*" does not follow "/", ":" or "@":
// "registry/org*" would also allow "registry/org-evil/...".
func CheckImagePattern(p string) error {
	i := strings.Index(p, "*")
	if i < 0 {
		return nil
	}
	if i != len(p)-1 || i == 0 || !strings.ContainsRune("/:@", rune(p[i-1])) {
		return fmt.Errorf("%q: a \"*\" may only end an entry, right after \"/\", \":\" or \"@\" (e.g. registry.example.com/sandboxes/*)", p)
	}
	return nil
}

// Enabled says whether any image may be asked for.
func (p CustomPolicy) Enabled() bool { return len(p.AllowedImages) > 0 }

// AllowsImage says whether img matches an allowed name or prefix.
func (p CustomPolicy) AllowsImage(img string) bool {
	for _, a := range p.AllowedImages {
		if prefix, ok := strings.CutSuffix(a, "*"); ok && strings.HasPrefix(img, prefix) || a == img {
			return true
		}
	}
	return false
}
