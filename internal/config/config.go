// Package config reads the server's settings from K8S_SANDBOX_* variables (the spec's names,
// "__" for nesting), from a .env file and from an explicit --env-file. The real environment
// wins over files. Every problem names the variable so the operator can fix it in one go.
package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joho/godotenv"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/proc"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/workspace"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/transfer"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// Prefix starts every variable the server reads.
const Prefix = "K8S_SANDBOX_"

// maxProcessOutputBytes bounds what one process stream may keep on the sandbox's disk.
const maxProcessOutputBytes = 1 << 30

// maxRate is far above anything an API server serves one client; it only keeps numbers sane.
const maxRate = 1_000_000

// defaultAllowNoShutdown refuses shutdown_after_seconds: null unless the operator says otherwise.
const defaultAllowNoShutdown = false

// defaultAutoResume: a call on a suspended sandbox is refused with advice to resume it, so
// that the model decides when the sandbox's pod (and its cost) comes back.
const defaultAutoResume = false

// defaultSuspendPausesLifetime: a suspended sandbox still expires at its shutdown time, so a
// forgotten suspension cannot keep its volume forever.
const defaultSuspendPausesLifetime = false

// Config is everything the server is configured with from the environment.
type Config struct {
	Connection      conn.Config
	SessionLabelKey string // K8S_SANDBOX_SESSION_ID_LABEL_KEY
	ProbeNamespace  string // K8S_SANDBOX_PROBE_NAMESPACE
	LogLevel        string // K8S_SANDBOX_LOG_LEVEL
	// Tenancy limits.
	AllowedNamespaces    []string      // K8S_SANDBOX_ALLOWED_NAMESPACES (comma list; empty: any)
	MaxSandboxesPerOwner int           // K8S_SANDBOX_MAX_SANDBOXES_PER_OWNER (0: no cap)
	MaxShutdownAfter     time.Duration // K8S_SANDBOX_MAX_SHUTDOWN_AFTER_SECONDS (0: no cap)
	AllowNoShutdown      bool          // K8S_SANDBOX_ALLOW_NO_SHUTDOWN (default false: shutdown_after_seconds null is refused)
	// DefaultShutdownAfter is shutdown_after_seconds when a create names none:
	// kube.DefaultShutdownAfter, or the smaller of the two caps when one is smaller.
	DefaultShutdownAfter time.Duration
	Lifetime             kube.Lifetime // K8S_SANDBOX_RENEW_ON_USE, K8S_SANDBOX_MAX_LIFETIME_SECONDS
	KeepOnSessionEnd     bool          // K8S_SANDBOX_KEEP_SANDBOXES_ON_SESSION_END
	// Which tools are listed (tools.Selection checks the names): K8S_SANDBOX_TOOLSETS (comma
	// list; empty: all), K8S_SANDBOX_READ_ONLY, K8S_SANDBOX_DISABLE_DESTRUCTIVE.
	Toolsets           []string
	ReadOnly           bool
	DisableDestructive bool
	OutputSchemas      bool // K8S_SANDBOX_OUTPUT_SCHEMAS: declare the tools' output schemas
	// Arguments the operator fixes: they leave the tools' schemas and no call can change them.
	PinNamespace string            // K8S_SANDBOX_PIN__NAMESPACE: every tool's namespace
	PinWarmpool  string            // K8S_SANDBOX_PIN__WARMPOOL: create_sandbox's warmpool
	PinLabels    map[string]string // K8S_SANDBOX_PIN__LABELS (k=v,k2=v2): create_sandbox's labels
	// Suspension (suspend_sandbox, resume_sandbox).
	AutoResume            bool   // K8S_SANDBOX_AUTO_RESUME: a call on a suspended sandbox resumes it first
	SuspendPausesLifetime bool   // K8S_SANDBOX_SUSPEND_PAUSES_LIFETIME: shutdownTime waits while suspended
	StdioOwner            string // K8S_SANDBOX_STDIO_OWNER (default: random per process)
	// The Kubernetes client's one token bucket (kube.WithRateLimit).
	APIQPS   int // K8S_SANDBOX_API_QPS (kube.NoRateLimit: none)
	APIBurst int // K8S_SANDBOX_API_BURST
	// ProcessOutputBytes is how much of each stream of a start_process process the sandbox
	// keeps (K8S_SANDBOX_PROCESS_OUTPUT_MAX_BYTES); older output is dropped.
	ProcessOutputBytes int64
	// MaxArchiveExpandedBytes bounds what an upload_archive archive may expand to
	// (K8S_SANDBOX_MAX_ARCHIVE_EXPANDED_BYTES).
	MaxArchiveExpandedBytes int64
	// HostPaths are the host directories the copy tools may read and write, their symbolic
	// links resolved (K8S_SANDBOX_HOST_PATHS, an os.PathListSeparator list; empty: no copies).
	HostPaths []string
	// MaxTransferBytes bounds each file a create_transfer_url URL moves
	// (K8S_SANDBOX_MAX_TRANSFER_BYTES).
	MaxTransferBytes int64
	// MaxVolumeSize caps create_sandbox's volume_size (MAX_VOLUME_SIZE, a quantity).
	MaxVolumeSize resource.Quantity
	// Custom is the rule for create_sandbox's image, cpus and memory (CUSTOM_SANDBOXES__*).
	Custom kube.CustomPolicy
	// Metadata is the rule for create_sandbox's label and annotation keys (METADATA__*).
	Metadata kube.MetadataPolicy
	// Vars are every upper-cased variable seen, for packages that read their own settings.
	Vars map[string]string
	// Unknown lists K8S_SANDBOX_* variables nobody reads (likely typos), for a warning.
	Unknown []string
}

// Source gathers variables: the process environment over .env files.
type Source struct {
	Environ []string // os.Environ() form
	// EnvFile is an explicit --env-file; it must exist. DotEnv is ./.env, read if present.
	EnvFile string
	DotEnv  string
}

// Load merges the source and parses it.
func Load(src Source) (Config, error) {
	vars := map[string]string{}
	for _, f := range []struct {
		path     string
		required bool
	}{{src.DotEnv, false}, {src.EnvFile, true}} {
		if f.path == "" {
			continue
		}
		m, err := godotenv.Read(f.path)
		if err != nil {
			if !f.required && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return Config{}, fmt.Errorf("reading env file %s: %w", f.path, err)
		}
		for k, v := range m {
			vars[strings.ToUpper(k)] = v
		}
	}
	for _, kv := range src.Environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			vars[strings.ToUpper(k)] = v
		}
	}
	return Parse(vars)
}

// Parse reads the settings from upper-cased variable names.
func Parse(vars map[string]string) (Config, error) {
	p := parser{vars: vars, used: map[string]bool{}}
	c := Config{
		SessionLabelKey: p.str("SESSION_ID_LABEL_KEY", "mcp.k8s-agent-sandbox/session-id"),
		ProbeNamespace:  p.str("PROBE_NAMESPACE", "default"),
		LogLevel:        p.str("LOG_LEVEL", "info"),
		Vars:            vars,
	}
	for _, ns := range strings.Split(p.str("ALLOWED_NAMESPACES", ""), ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			c.AllowedNamespaces = append(c.AllowedNamespaces, ns)
		}
	}
	c.MaxSandboxesPerOwner = p.integer("MAX_SANDBOXES_PER_OWNER", 0, 0, 100000)
	c.MaxShutdownAfter = time.Duration(p.integer("MAX_SHUTDOWN_AFTER_SECONDS", 0, 0, 10*365*24*3600)) * time.Second
	// A sandbox without a TTL lives until someone deletes it, so only the operator's explicit
	// yes allows it; with a maximum set, that yes would be a contradiction.
	c.AllowNoShutdown = p.boolean("ALLOW_NO_SHUTDOWN", defaultAllowNoShutdown)
	c.Lifetime = kube.DefaultLifetime()
	c.Lifetime.RenewOnUse = p.boolean("RENEW_ON_USE", c.Lifetime.RenewOnUse)
	c.Lifetime.MaxLifetime = time.Duration(p.integer("MAX_LIFETIME_SECONDS", int(kube.DefaultMaxLifetime/time.Second), 0, 10*365*24*3600)) * time.Second
	if c.AllowNoShutdown && c.MaxShutdownAfter > 0 {
		p.fail("ALLOW_NO_SHUTDOWN", "cannot be true with %sMAX_SHUTDOWN_AFTER_SECONDS=%d: a sandbox without a timeout has no maximum; unset one of them",
			Prefix, int(c.MaxShutdownAfter/time.Second))
	}
	c.checkLifetime(&p)
	c.KeepOnSessionEnd = p.boolean("KEEP_SANDBOXES_ON_SESSION_END", false)
	for _, name := range strings.Split(p.str("TOOLSETS", ""), ",") {
		if name = strings.TrimSpace(name); name != "" {
			c.Toolsets = append(c.Toolsets, name)
		}
	}
	p.pins(&c)
	c.ReadOnly = p.boolean("READ_ONLY", false)
	c.DisableDestructive = p.boolean("DISABLE_DESTRUCTIVE", false)
	c.OutputSchemas = p.boolean("OUTPUT_SCHEMAS", false)
	c.AutoResume = p.boolean("AUTO_RESUME", defaultAutoResume)
	c.SuspendPausesLifetime = p.boolean("SUSPEND_PAUSES_LIFETIME", defaultSuspendPausesLifetime)
	c.StdioOwner = p.str("STDIO_OWNER", "")
	c.ProcessOutputBytes = int64(p.integer("PROCESS_OUTPUT_MAX_BYTES", proc.DefaultMaxOutputBytes, proc.MinMaxOutputBytes, maxProcessOutputBytes))
	if c.StdioOwner != "" && len(validation.IsValidLabelValue(c.StdioOwner)) > 0 {
		p.fail("STDIO_OWNER", "must be a valid Kubernetes label value (at most 63 letters, digits, '-', '_', '.'), got %q", c.StdioOwner)
	}
	c.APIQPS = p.integer("API_QPS", kube.DefaultQPS, kube.NoRateLimit, maxRate)
	c.APIBurst = p.integer("API_BURST", kube.DefaultBurst, 0, maxRate)
	if err := kube.CheckRateLimit(c.APIQPS, c.APIBurst); err != nil {
		p.fail("API_QPS", "with %sAPI_BURST: %v", Prefix, err)
	}
	c.MaxArchiveExpandedBytes = int64(p.integer("MAX_ARCHIVE_EXPANDED_BYTES", workspace.DefaultMaxExpandedBytes, 1, maxArchiveExpandedBytesLimit))
	c.HostPaths = p.hostPaths()
	c.MaxTransferBytes = int64(p.integer("MAX_TRANSFER_BYTES", transfer.DefaultMaxBytes, 1, maxTransferBytesLimit))
	c.Custom = p.custom()
	c.Metadata = p.metadata()
	c.MaxVolumeSize = p.quantity("MAX_VOLUME_SIZE", kube.DefaultMaxVolumeSize)
	c.Connection = p.connection()
	if p.err != nil {
		return Config{}, p.err
	}
	// Settings of other connection types are not typos; only wholly unknown names are.
	known := map[string]bool{}
	for _, k := range knownNames {
		known[Prefix+k] = true
	}
	for k := range vars {
		// AUTH__ and HTTP__ settings belong to the HTTP layer, which validates them itself.
		owned := strings.HasPrefix(k, Prefix+"AUTH__") || strings.HasPrefix(k, Prefix+"HTTP__")
		if strings.HasPrefix(k, Prefix) && !p.used[k] && !known[k] && !owned {
			c.Unknown = append(c.Unknown, k)
		}
	}
	sort.Strings(c.Unknown)
	return c, nil
}

var knownNames = []string{
	"CONNECTION__TYPE", "CONNECTION__GATEWAY_NAME", "CONNECTION__GATEWAY_NAMESPACE",
	"CONNECTION__GATEWAY_READY_TIMEOUT", "CONNECTION__SERVER_PORT", "CONNECTION__API_URL",
	"CONNECTION__USE_POD_IP", "CONNECTION__MODE", "CONNECTION__REST_PORT", "CONNECTION__GRPC_PORT",
}

// Error is a setting that cannot be used; Var is the full variable name.
type Error struct {
	Var string
	Msg string
}

func (e *Error) Error() string { return e.Var + " " + e.Msg }

type parser struct {
	vars map[string]string
	used map[string]bool
	err  error
}

func (p *parser) fail(name, format string, a ...any) {
	if p.err == nil {
		p.err = &Error{Var: Prefix + name, Msg: fmt.Sprintf(format, a...)}
	}
}

func (p *parser) lookup(name string) (string, bool) {
	p.used[Prefix+name] = true
	v, ok := p.vars[Prefix+name]
	return strings.TrimSpace(v), ok && strings.TrimSpace(v) != ""
}

func (p *parser) str(name, def string) string {
	if v, ok := p.lookup(name); ok {
		return v
	}
	return def
}

func (p *parser) required(name string) string {
	v, ok := p.lookup(name)
	if !ok {
		p.fail(name, "is required for %sCONNECTION__TYPE=%s", Prefix, p.vars[Prefix+"CONNECTION__TYPE"])
	}
	return v
}

func (p *parser) integer(name string, def, lo, hi int) int {
	v, ok := p.lookup(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		p.fail(name, "must be an integer from %d to %d, got %q", lo, hi, v)
		return def
	}
	return n
}

func (p *parser) port(name string, def int) int { return p.integer(name, def, 1, 65535) }

func (p *parser) boolean(name string, def bool) bool {
	v, ok := p.lookup(name)
	if !ok {
		return def
	}
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	case "0", "false", "no", "off":
		return false
	}
	p.fail(name, "must be true or false, got %q", v)
	return def
}

// pins reads the pinned arguments; a pinned namespace must be one the allowlist allows.
func (p *parser) pins(c *Config) {
	if c.PinNamespace = p.str("PIN__NAMESPACE", ""); c.PinNamespace != "" {
		if errs := validation.IsDNS1123Label(c.PinNamespace); len(errs) > 0 {
			p.fail("PIN__NAMESPACE", "%q is not a namespace name: %s", c.PinNamespace, strings.Join(errs, "; "))
		} else if len(c.AllowedNamespaces) > 0 && !slices.Contains(c.AllowedNamespaces, c.PinNamespace) {
			p.fail("PIN__NAMESPACE", "%q is not in %sALLOWED_NAMESPACES (%s)", c.PinNamespace, Prefix, strings.Join(c.AllowedNamespaces, ","))
		}
	}
	if c.PinWarmpool = p.str("PIN__WARMPOOL", ""); c.PinWarmpool != "" {
		if errs := validation.IsDNS1123Subdomain(c.PinWarmpool); len(errs) > 0 {
			p.fail("PIN__WARMPOOL", "%q is not a warm pool name: %s", c.PinWarmpool, strings.Join(errs, "; "))
		}
	}
	if v := p.str("PIN__LABELS", ""); v != "" {
		// apimachinery's own parser of "k=v,k2=v2", which checks keys and values as the API server does.
		m, err := labels.ConvertSelectorToLabelsMap(v)
		if err != nil {
			p.fail("PIN__LABELS", "%q is not a list of label=value pairs: %v", v, err)
		}
		c.PinLabels = m
	}
}

// custom reads the operator's rule for sandboxes built to order; no allowed image: off.
func (p *parser) custom() kube.CustomPolicy {
	var c kube.CustomPolicy
	for _, img := range strings.Split(p.str("CUSTOM_SANDBOXES__ALLOWED_IMAGES", ""), ",") {
		if img = strings.TrimSpace(img); img != "" {
			if err := kube.CheckImagePattern(img); err != nil {
				p.fail("CUSTOM_SANDBOXES__ALLOWED_IMAGES", "%v", err)
			}
			c.AllowedImages = append(c.AllowedImages, img)
		}
	}
	c.MaxCPUMillis = int64(p.integer("CUSTOM_SANDBOXES__MAX_CPU_MILLICORES", kube.DefaultCustomMaxCPUMillis, 100, 1_000_000))
	c.MaxMemoryMiB = int64(p.integer("CUSTOM_SANDBOXES__MAX_MEMORY_MIB", kube.DefaultCustomMaxMemoryMiB, kube.MinCustomMemoryMiB, 1<<24))
	c.UnusedTTL = time.Duration(p.integer("CUSTOM_SANDBOXES__UNUSED_TTL_SECONDS", int(kube.DefaultCustomUnusedTTL/time.Second), 60, 30*24*3600)) * time.Second
	return c
}

// metadataNone is METADATA__DENIED_KEYS's value that denies no key (an empty value is unset).
const metadataNone = "none"

// metadata reads the key rule: DENIED_KEYS replaces the built-in list when set.
func (p *parser) metadata() kube.MetadataPolicy {
	m := kube.DefaultMetadataPolicy()
	keys := func(name string) []string {
		var out []string
		for _, k := range strings.Split(p.str(name, ""), ",") {
			if k = strings.TrimSpace(k); k != "" && k != metadataNone {
				out = append(out, k)
			}
		}
		return out
	}
	m.Allowed = keys("METADATA__ALLOWED_KEYS")
	if _, set := p.lookup("METADATA__DENIED_KEYS"); set {
		m.Denied = keys("METADATA__DENIED_KEYS")
	}
	return m
}

// quantity reads a positive Kubernetes quantity such as 10Gi.
func (p *parser) quantity(name, def string) resource.Quantity {
	v := p.str(name, def)
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 {
		p.fail(name, "must be a positive quantity such as %s, got %q", def, v)
		return resource.MustParse(def)
	}
	return q
}
