package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	metricsclientset "k8s.io/metrics/pkg/client/clientset/versioned"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	sandboxclientset "sigs.k8s.io/agent-sandbox/clients/k8s/clientset/versioned"
	extclientset "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/clientset/versioned"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

const (
	// DefaultReadyTimeout applies when CreateRequest.ReadyTimeout is not positive (Python SDK default).
	DefaultReadyTimeout = 180 * time.Second
	// cleanupTimeout bounds the delete of a failed claim, which runs even after ctx is cancelled.
	cleanupTimeout = 30 * time.Second

	createdByLabel       = "agents.x-k8s.io/created-by"
	createdByValue       = "k8s-sandbox-mcp"
	firstRequestedAtAnno = "agents.x-k8s.io/client-first-requested-at"
	claimNamePrefix      = "sandbox-claim-"
)

// Client talks to the agent-sandbox CRDs and Gateways. It is safe for concurrent use.
type Client struct {
	ext      extclientset.Interface
	core     sandboxclientset.Interface
	dyn      dynamic.Interface
	metrics  metricsclientset.Interface // nil: Usage reports ErrNoMetrics
	recorder record.EventRecorder       // nil: Audit records nothing
	stopRec  func()
	ownerKey string
	cache    *watchCache // nil: every read goes to the API
	metadata MetadataPolicy
	lifetime Lifetime
	renewed  renewals
	events   typedcorev1.EventsGetter        // nil: expiries are reported as plain "not found"
	leases   coordinationclient.LeasesGetter // nil: Hold fails (holder.go)
	pods     typedcorev1.PodsGetter          // nil: statuses say nothing of the pod (podstate.go)
	// pauseLifetime: Suspend removes the claim's shutdownTime and Resume restores it.
	pauseLifetime bool
	notices       func(Notice) // nil: none are sent (notice.go)

	// Replaceable in tests for deterministic names and timestamps, and a short wait.
	now         func() time.Time
	newName     func() (string, error)
	suspendWait time.Duration // DefaultSuspendWait
}

// New builds the clientsets from cfg. opts bound the watch cache and set the API rate limit
// (default DefaultQPS, DefaultBurst, whatever cfg says).
func New(cfg *rest.Config, ownerLabelKey string, opts ...Option) (*Client, error) {
	if cfg == nil {
		return nil, fmt.Errorf("%w: nil rest config", ErrInvalid)
	}
	if !ValidLabelKey(ownerLabelKey) {
		return nil, fmt.Errorf("%w: owner label key %q is not a valid label key", ErrInvalid, ownerLabelKey)
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	o.applyRateLimit(cfg)
	// One HTTP client for the three clientsets: shared connections, and every failure to
	// reach the API server comes out as an APIError.
	hc, err := apiHTTPClient(cfg, o.apiUser)
	if err != nil {
		return nil, fmt.Errorf("building the Kubernetes API HTTP client: %w", err)
	}
	ext, err := extclientset.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("building sandbox claim client: %w", err)
	}
	core, err := sandboxclientset.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("building sandbox client: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("building dynamic client: %w", err)
	}
	c := NewFromClients(ext, core, dyn, ownerLabelKey)
	if o.metadata != nil {
		c.metadata = *o.metadata
	}
	if o.lifetime != nil {
		c.lifetime = *o.lifetime
	}
	c.pauseLifetime = o.pauseLifetime
	c.notices = o.notices
	if c.metrics, err = metricsclientset.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, fmt.Errorf("building metrics client: %w", err)
	}
	events, err := typedcorev1.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("building events client: %w", err)
	}
	c.recorder, c.stopRec = newAuditor(events)
	c.events = events
	c.pods = events
	if c.leases, err = coordinationclient.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, fmt.Errorf("building leases client: %w", err)
	}
	if o.maxWatched > 0 {
		c.cache = newWatchCache(ext, core, ownerLabelKey, o)
	}
	return c, nil
}

// Close stops the watches behind the cache.
func (c *Client) Close() {
	if c.cache != nil {
		c.cache.close()
	}
	if c.stopRec != nil {
		c.stopRec()
	}
}

// WatchedNamespaces is how many namespaces the watch cache follows now (two watches each).
func (c *Client) WatchedNamespaces() int {
	if c.cache == nil {
		return 0
	}
	return len(c.cache.watched())
}

// Cached counts the claims and Sandboxes the watch cache holds (its memory grows with them).
func (c *Client) Cached() (claims, sandboxes int) {
	if c.cache == nil {
		return 0, 0
	}
	return c.cache.size()
}

// NewFromClients wires prebuilt (e.g. fake) clients. ownerLabelKey is not validated here.
func NewFromClients(ext extclientset.Interface, core sandboxclientset.Interface, dyn dynamic.Interface, ownerLabelKey string) *Client {
	return &Client{
		ext:      ext,
		core:     core,
		dyn:      dyn,
		ownerKey: ownerLabelKey,
		metadata: DefaultMetadataPolicy(),
		lifetime: DefaultLifetime(),
		now:      time.Now,
		newName:  randomClaimName,

		suspendWait: DefaultSuspendWait,
	}
}

// Probe checks that the API server answers and that claims can be listed in namespace.
func (c *Client) Probe(ctx context.Context, namespace string) error {
	_, err := c.ext.ExtensionsV1beta1().SandboxClaims(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("listing sandbox claims in namespace %q: %w", namespace, err)
	}
	return nil
}

// ValidLabelValue reports whether s is a valid Kubernetes label value (empty is valid).
func ValidLabelValue(s string) bool { return len(validation.IsValidLabelValue(s)) == 0 }

// ValidLabelKey reports whether s is a valid Kubernetes label key (optional DNS prefix + name).
func ValidLabelKey(s string) bool { return len(validation.IsQualifiedName(s)) == 0 }

// notFoundError has one message for "missing" and "owned by someone else" so that the
// existence of other sessions' claims never leaks.
type notFoundError struct{ namespace, name string }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("sandbox claim %q not found in namespace %q", e.name, e.namespace)
}

func (e *notFoundError) Unwrap() error { return ErrNotFound }

// ownedClaim GETs a claim and returns ErrNotFound unless it carries the owner's label.
func (c *Client) ownedClaim(ctx context.Context, namespace, name, owner string) (*extv1beta1.SandboxClaim, error) {
	if owner == "" || name == "" {
		return nil, &notFoundError{namespace: namespace, name: name}
	}
	claim, err := c.ext.ExtensionsV1beta1().SandboxClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, c.notFoundOrExpired(ctx, namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("getting sandbox claim %q in namespace %q: %w", name, namespace, err)
	}
	if v, ok := claim.Labels[c.ownerKey]; !ok || v != owner {
		return nil, &notFoundError{namespace: namespace, name: name}
	}
	return claim, nil
}

// getSandbox returns (nil, nil) when the Sandbox does not exist.
func (c *Client) getSandbox(ctx context.Context, namespace, name string) (*sandboxv1beta1.Sandbox, error) {
	sb, err := c.core.AgentsV1beta1().Sandboxes(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting sandbox %q in namespace %q: %w", name, namespace, err)
	}
	return sb, nil
}

func randomClaimName() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generating claim name: %w", err)
	}
	return claimNamePrefix + hex.EncodeToString(b[:]), nil
}
