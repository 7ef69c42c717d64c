// Package kube owns the SandboxClaim lifecycle on the Kubernetes API: create a claim from a
// warm pool and wait (by watch) until it is Ready and bound to a Sandbox, look up, list and
// delete claims by owner, read Sandbox status, find a Gateway's address, and probe the API.
// It knows nothing of MCP or of how sandboxes are reached.
package kube

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// PrincipalLabel names the caller behind a claim's owner (CreateRequest.Principal).
const PrincipalLabel = "mcp.k8s-agent-sandbox/principal"

// Errors callers translate into advice for the model.
var (
	ErrNotFound    = errors.New("not found")            // claim missing or owned by someone else
	ErrClaimFailed = errors.New("sandbox claim failed") // terminal claim condition (InvalidMetadata, WarmPoolNotFound, ...)
	ErrTimeout     = errors.New("timed out waiting for sandbox")
	ErrNotReady    = errors.New("sandbox not ready")
	ErrInvalid     = errors.New("invalid request") // rejected before any API call
)

// ClaimFailure is the terminal condition that made a claim fail; it matches ErrClaimFailed.
type ClaimFailure struct {
	Claim   string
	Reason  string // controller reason, e.g. WarmPoolNotFound, or "Deleted"
	Message string // controller message, may be empty
}

func (f *ClaimFailure) Error() string {
	msg := ErrClaimFailed.Error() + ": " + f.Reason
	if f.Message != "" {
		msg += ": " + f.Message
	}
	return msg
}

// Unwrap lets errors.Is(err, ErrClaimFailed) hold.
func (f *ClaimFailure) Unwrap() error { return ErrClaimFailed }

// CreateRequest describes a claim to create.
type CreateRequest struct {
	Namespace string
	WarmPool  string
	// Labels go on the claim; the owner label is added by Create and cannot be overridden.
	Labels map[string]string
	Owner  string
	// Principal, when set, labels the claim (PrincipalLabel) with the caller behind the owner,
	// so that a per-caller cap can count across its sessions. A valid label value.
	Principal      string
	ShutdownAfter  *time.Duration // nil: no lifecycle; else shutdownTime = now+d, policy Delete
	PodLabels      map[string]string
	PodAnnotations map[string]string
	// Env goes on the claim (spec.env, for the template's first container). The controller
	// then starts a sandbox of its own instead of taking a warm one, and refuses it unless the
	// template's envVarsInjectionPolicy allows it (EnvVarsInjectionRejected).
	Env map[string]string
	// VolumeSize, when not zero, asks for a PersistentVolumeClaim of that size as the
	// template's WorkspaceVolume (the claim's volumeClaimTemplates, the cluster's default
	// StorageClass); like Env it means a cold start, gated by volumeClaimTemplatesPolicy.
	VolumeSize   resource.Quantity
	ReadyTimeout time.Duration // <= 0: DefaultReadyTimeout
	// Progress, when set, is called with short human messages while waiting.
	Progress func(message string)
	// Posted, when set, is called once the claim exists in the API (before the wait for
	// readiness), or not at all if the create failed before; callers counting claims use it.
	Posted func()
	// RequestID, when set, names the claim after (Owner, RequestID) (RequestClaimName), so that
	// creates of the same request, concurrent or on other replicas, make one claim: each gets
	// the live claim back (Claim.Reused) and waits for it like the one that posted it.
	RequestID string
	// Attach, with RequestID, never posts: Create only returns the live claim of the request
	// (ErrNotFound without one). For a caller at its sandbox cap, whose repeat adds none.
	Attach bool
}

// Claim is what callers need of a SandboxClaim and its Sandbox.
type Claim struct {
	Namespace   string
	Name        string
	WarmPool    string
	SandboxName string   // status.sandbox.name
	PodIPs      []string // from the Sandbox status (claim status as fallback)
	ServiceFQDN string   // Sandbox status.serviceFQDN
	Ready       bool     // Create/Get: Sandbox Ready condition; List: claim Ready condition
	Created     time.Time
	ShutdownAt  time.Time // the claim's lifecycle.shutdownTime; zero: none
	// ShutdownAfter is the lifetime window renewal on use restores (create_sandbox's or
	// extend_sandbox's shutdown_after_seconds); zero: none.
	ShutdownAfter time.Duration
	// VolumePath is where a persistent WorkspaceVolume is mounted in the first container
	// (from the Sandbox's spec: not List; "" without one).
	VolumePath string
	// Reused (Create only): an earlier create of the same RequestID posted the claim.
	Reused bool
	// RequestID is the create_sandbox request id the claim was made for, "" if none.
	RequestID string
	// Labels are the caller's labels (List only): the server's own are left out.
	Labels map[string]string
	// Suspended: the Sandbox's operatingMode is Suspended (Get, Create, Resume), or its Ready
	// reason, which the claim mirrors, is SandboxSuspended (List).
	Suspended bool
	// Deadline (Get only) is when the sandbox goes after this use: renewal on use and the hard
	// cap applied, which ShutdownAt (read before the renewal) is not.
	Deadline Deadline
}

// DefaultMaxVolumeSize caps CreateRequest.VolumeSize unless the operator sets another cap.
const DefaultMaxVolumeSize = "10Gi"

// DefaultMaxLifetime is the hard cap on a sandbox's life from its creation: no create,
// extend, renewal on use, suspension or resume puts its shutdown time past it.
const DefaultMaxLifetime = 24 * time.Hour

// DefaultShutdownAfter is the spec's default shutdown_after_seconds (the lifetime window of a
// create that names none), before the operator's caps bound it (internal/config).
const DefaultShutdownAfter = 300 * time.Second

// MinVolumeSize is the smallest CreateRequest.VolumeSize: below it no filesystem holds a
// workspace, and a quantity such as "1e-3" (a thousandth of a byte) is a mistake.
const MinVolumeSize = "1Mi"

// WorkspaceVolume is the pod volume a template declares for the workspace: the one
// CreateRequest.VolumeSize replaces with a persistent volume.
const WorkspaceVolume = "workspace"

// Status is the readiness of a claim's Sandbox, as get_sandbox_status reports it.
type Status struct {
	Status     string // SandboxReady | SandboxNotReady | SandboxSuspended | SandboxNotFound
	Ready      bool
	Message    string
	ShutdownAt time.Time // the claim's shutdown time; zero: none
	Pod        PodState  // the kubelet's view of its pod (PodState; Status leaves it zero)
}
