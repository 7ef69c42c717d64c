package tools

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/proc"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/hostfs"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/transfer"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// Claims is what the tools need of the claim lifecycle (kube.Client implements it).
type Claims interface {
	Create(ctx context.Context, req kube.CreateRequest) (kube.Claim, error)
	Get(ctx context.Context, namespace, name, owner string) (kube.Claim, error)
	List(ctx context.Context, namespace, owner string) ([]kube.Claim, error)
	Delete(ctx context.Context, namespace, name, owner string) error
	Extend(ctx context.Context, namespace, name, owner string, after time.Duration) (kube.Claim, error)
	Status(ctx context.Context, namespace, name, owner string) (kube.Status, error)
	// PodState is the kubelet's view of the sandbox's pod (an API read: for get_sandbox_status only).
	PodState(ctx context.Context, namespace, name, owner string) kube.PodState
	Suspend(ctx context.Context, namespace, name, owner string) (kube.Status, error)
	Resume(ctx context.Context, namespace, name, owner string, readyTimeout time.Duration, progress func(string)) (kube.Claim, error)
	CountPrincipal(ctx context.Context, namespace, principal string) (int, error)
	Catalog(ctx context.Context, namespace string) ([]kube.Pool, []kube.Template, error)
	Usage(ctx context.Context, namespace, name, owner string) (kube.Usage, error)
	EnsureCustomPool(ctx context.Context, namespace string, spec kube.CustomSpec) (string, error)
	CollectCustomPools(ctx context.Context, namespace string, unused time.Duration) ([]string, error)
	// Audit records a create, delete or command on the claim (a Kubernetes Event).
	Audit(namespace, name, owner, principal, tool, outcome string, took time.Duration)
}

// OwnerFunc names the caller that owns sandboxes: a valid Kubernetes label value.
type OwnerFunc func(ctx context.Context) (string, error)

// Deps are the tools' collaborators and settings.
type Deps struct {
	Claims Claims
	Conn   conn.Conn
	Owner  OwnerFunc
	// DefaultNamespace is used when a call omits namespace (the kubeconfig context's).
	DefaultNamespace string
	Log              zerolog.Logger
	// HeartbeatEvery paces execute_command progress notifications; 0 means 2 s.
	HeartbeatEvery time.Duration
	// StoppedWithin bounds how long a command killed by a signal waits for the sandbox's
	// status to show that the sandbox itself stopped; 0 means 3 s (the kubelet marks a
	// terminating pod not ready within a second or two).
	StoppedWithin time.Duration
	// MaxShutdownAfter caps shutdown_after_seconds; 0 means no cap. AllowNoShutdown accepts
	// null (a sandbox without a TTL, which the spec allows) only when an operator said so.
	MaxShutdownAfter time.Duration
	AllowNoShutdown  bool
	// DefaultShutdownAfter is shutdown_after_seconds when a create names none (config's, within
	// the operator's caps); 0 means kube.DefaultShutdownAfter.
	DefaultShutdownAfter time.Duration
	// MaxLifetime is the hard cap the kube client enforces from creation (kube.Lifetime), for
	// the descriptions and notes only: the kube client alone refuses or clamps. 0: none.
	MaxLifetime time.Duration
	// ProcessOutputBytes is kept per stream of a start_process process; 0 means
	// proc.DefaultMaxOutputBytes.
	ProcessOutputBytes int64
	// MaxVolumeSize caps create_sandbox's volume_size; zero means kube.DefaultMaxVolumeSize.
	MaxVolumeSize resource.Quantity
	// Custom allows create_sandbox's image, cpus and memory; the zero value allows none.
	Custom kube.CustomPolicy
	// MaxDownloadBytes bounds download_file; 0 means conn.DefaultMaxDownloadBytes.
	MaxDownloadBytes int64
	// MaxArchiveExpandedBytes bounds what an upload_archive archive expands to; 0 means
	// workspace.DefaultMaxExpandedBytes.
	MaxArchiveExpandedBytes int64
	// MaxTransferBytes bounds each file a copy tool or transfer URL moves (its default is the
	// config's, K8S_SANDBOX_MAX_TRANSFER_BYTES); 0 means no bound beyond the timeout.
	MaxTransferBytes int64
	// Transfers serves create_transfer_url (HTTP only); nil: the tool is not listed.
	Transfers Transfers
	// HostFS are the host directories the copy tools may use (K8S_SANDBOX_HOST_PATHS); the
	// tools are listed only when it has some.
	HostFS *hostfs.Roots
	// AllowedNamespaces, when not empty, is the only namespaces tools may use.
	AllowedNamespaces []string
	// MaxSandboxesPerOwner caps live sandboxes per owner; 0 means no cap.
	MaxSandboxesPerOwner int
	// Principal names the caller behind the owner (a label value), whom the sandbox cap
	// counts; nil means the owner itself.
	Principal OwnerFunc
	quota     *quota
	// collecting runs one collection of unused custom pools per namespace at a time.
	collecting *singleflight.Group
	// Tracker learns where owners create sandboxes (for cleanup when their session ends).
	Tracker Tracker
	// Ports serves expose_port; nil: the port tools say they are not available.
	Ports Ports
	// Who names the authenticated caller on audit Events ("static:alice"); nil or "": the
	// Principal label, else the owner.
	Who func(ctx context.Context) string
	// AutoResume: a call that needs a suspended sandbox resumes it first instead of failing.
	AutoResume bool
	// Pinned are the arguments the operator fixed: withheld from the schemas, applied to
	// every call. A pinned namespace is also DefaultNamespace and the whole allowlist.
	Pinned Pins
	// FixedLifetime says (for the instructions) that renewal on use is off
	// (K8S_SANDBOX_RENEW_ON_USE=false): a sandbox ends at its creation's deadline.
	FixedLifetime bool
	// SuspendPausesLifetime says (for suspend_sandbox's note) that the kube client stops a
	// suspended claim's lifetime clock (kube.WithSuspendPausesLifetime).
	SuspendPausesLifetime bool
	// Observer counts calls, sandboxes and output (internal/telemetry); nil: none.
	Observer Observer
	// Selection is the operator's filter over the tool table (toolsets, read-only); the zero
	// value lists every tool.
	Selection Selection
	// OutputSchemas declares each tool's output schema in tools/list
	// (K8S_SANDBOX_OUTPUT_SCHEMAS). Off, results carry the same structuredContent undeclared.
	OutputSchemas bool
}

// Pins are operator-fixed arguments; empty fields are the model's to choose.
type Pins struct {
	Namespace string            // K8S_SANDBOX_PIN__NAMESPACE
	Warmpool  string            // K8S_SANDBOX_PIN__WARMPOOL
	Labels    map[string]string // K8S_SANDBOX_PIN__LABELS
}

// Observer is told what the tools do, for the operators' metrics.
type Observer interface {
	CallStarted(tool string)
	CallEnded(tool, outcome string, took time.Duration)
	SandboxCreated(wait time.Duration)
	SandboxDeleted()
	Output(seen, returned int)
}

// observe is d.Observer, or one that ignores everything.
func (d Deps) observe() Observer {
	if d.Observer == nil {
		return noObserver{}
	}
	return d.Observer
}

type noObserver struct{}

func (noObserver) CallStarted(string)                      {}
func (noObserver) CallEnded(string, string, time.Duration) {}
func (noObserver) SandboxCreated(time.Duration)            {}
func (noObserver) SandboxDeleted()                         {}
func (noObserver) Output(int, int)                         {}

// Ports gives a sandbox's TCP port a URL through this server (internal/ports implements it).
type Ports interface {
	// Expose records a new URL for the port on the owner's claim and returns it.
	Expose(ctx context.Context, owner, namespace, claim string, port int) (string, error)
	// Unexpose ends one port's URLs (port 0: all of the claim's) and says whether there were any.
	Unexpose(ctx context.Context, owner, namespace, claim string, port int) (bool, error)
	// Forget ends every exposure of a deleted claim.
	Forget(namespace, claim string)
}

// Tracker remembers the namespaces each owner used and keeps creates exact against the end of
// the owner's session (cleanup.Janitor implements it).
type Tracker interface {
	// Begin records, before the claim exists, that owner creates in namespace; it fails once
	// owner's session has ended. done must be called with the created claim's name ("" if
	// none); it returns an error, having deleted the claim, if the session ended meanwhile.
	Begin(owner, namespace string) (done func(claim string) error, err error)
}

// procs reaches start_process processes through the same Conn as every other tool.
func (d Deps) procs() proc.Runner {
	return proc.Runner{Exec: d.Conn, MaxOutputBytes: d.ProcessOutputBytes}
}

// maxTransfer is MaxTransferBytes, or the setting's default.
func (d Deps) maxTransfer() int64 {
	if d.MaxTransferBytes > 0 {
		return d.MaxTransferBytes
	}
	return transfer.DefaultMaxBytes
}

func (d Deps) maxDownload() int64 {
	if d.MaxDownloadBytes > 0 {
		return d.MaxDownloadBytes
	}
	return conn.DefaultMaxDownloadBytes
}

func (d Deps) stoppedWithin() time.Duration {
	if d.StoppedWithin > 0 {
		return d.StoppedWithin
	}
	return 3 * time.Second
}

func (d Deps) heartbeat() time.Duration {
	if d.HeartbeatEvery > 0 {
		return d.HeartbeatEvery
	}
	return 2 * time.Second
}

func target(c kube.Claim) conn.Target {
	return conn.Target{Namespace: c.Namespace, SandboxName: c.SandboxName, PodIPs: c.PodIPs, ServiceFQDN: c.ServiceFQDN}
}
