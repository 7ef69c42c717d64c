package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

type createArgs struct {
	Warmpool             string            `json:"warmpool"`
	Namespace            string            `json:"namespace"`
	SandboxReadyTimeout  *int              `json:"sandbox_ready_timeout"`
	Labels               map[string]string `json:"labels"`
	ShutdownAfterSeconds json.RawMessage   `json:"shutdown_after_seconds"`
	PodLabels            map[string]string `json:"pod_labels"`
	PodAnnotations       map[string]string `json:"pod_annotations"`
	Env                  map[string]string `json:"env"`
	Image                string            `json:"image"`
	Cpus                 *float64          `json:"cpus"`
	Memory               *int64            `json:"memory"`
	VolumeSize           string            `json:"volume_size"`
	RequestID            string            `json:"request_id"`
}

// CreateResult is create_sandbox's answer.
type CreateResult struct {
	SandboxClaimName string `json:"sandbox_claim_name" jsonschema:"name to pass as sandbox_claim_name to the other tools"`
	Namespace        string `json:"namespace"`
	SandboxName      string `json:"sandbox_name" jsonschema:"the Sandbox bound to the claim (differs from the claim name with warm pools)"`
	ShutdownTime     string `json:"shutdown_time,omitempty" jsonschema:"RFC 3339 time at which the sandbox is deleted automatically"`
	CustomPool       string `json:"custom_pool,omitempty" jsonschema:"with image, cpus or memory: the warm pool the server derived from warmpool for them"`
	VolumePath       string `json:"volume_path,omitempty" jsonschema:"with volume_size: where the persistent volume is mounted in the sandbox"`
}

func createTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("create_sandbox",
		mcp.WithToolTitle("Create a sandbox"),
		mcp.WithDescription("Creates a sandbox from a warm pool and waits until it is ready. Call delete_sandbox when done."),
		inputSchema(objectSchema([]string{"warmpool"}, map[string]prop{
			"warmpool":               warmpoolProp(),
			"namespace":              namespaceProp(),
			"sandbox_ready_timeout":  intProp("", minTimeout, maxTimeout, defaultReadyTimeout),
			"labels":                 stringMapProp("Claim labels."),
			"shutdown_after_seconds": d.shutdownProp(),
			"pod_labels":             stringMapProp("Keys need an allowed prefix (default sandbox.users.io/)."),
			"pod_annotations":        stringMapProp(""),
			"env":                    withDescription(envProp(), "Needs the template's env_overrides; the sandbox then starts fresh (slower)."),
			"image":                  d.imageProp(),
			"cpus":                   d.cpusProp(),
			"memory":                 d.memoryProp(),
			"volume_size": prop{"type": "string", "minLength": 1, "maxLength": 32,
				"description": fmt.Sprintf("Persistent volume at volume_path, e.g. \"2Gi\" (%s to %s); survives suspension. Needs the template's volumes; "+
					"starts fresh.", kube.MinVolumeSize, d.maxVolumeSizeText())},
			"request_id": requestIDProp(),
		})),
		outputSchema[CreateResult](),
		hints(false, false, false),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a createArgs
		ref := claimRef{Namespace: a.Namespace}
		if err := bind(req, &a); err != nil {
			return failure("create the sandbox", ref, err), nil
		}
		res, err := d.create(ctx, req, a)
		if err != nil {
			ref.Namespace, _ = d.namespace(a.Namespace)
			r := failure("create the sandbox", ref, err)
			if hint := d.poolHint(ctx, ref.Namespace, err) + envHint(err); hint != "" {
				r = mcp.NewToolResultError(advice("create the sandbox", ref, err) + hint)
			}
			return r, nil
		}
		return structured(res), nil
	}}
}

func (d Deps) create(ctx context.Context, req mcp.CallToolRequest, a createArgs) (_ CreateResult, err error) {
	d.Pinned.pin(&a)
	ns, err := d.namespace(a.Namespace)
	if err != nil {
		return CreateResult{}, err
	}
	if err := checkEnv(a.Env); err != nil {
		return CreateResult{}, err
	}
	volume, err := d.volumeSize(a.VolumeSize)
	if err != nil {
		return CreateResult{}, err
	}
	ready := seconds(a.SandboxReadyTimeout, defaultReadyTimeout)
	shutdown, err := d.shutdownAfter(a.ShutdownAfterSeconds)
	if err != nil {
		return CreateResult{}, err
	}
	owner, err := d.Owner(ctx)
	if err != nil {
		return CreateResult{}, err
	}
	principal, release, err := d.admit(ctx, owner, ns)
	attach := false
	if errors.Is(err, errAtCap) && a.RequestID != "" {
		// At the cap a repeat of a live request still gets its sandbox: it adds none. Attach
		// never posts, so a request whose sandbox is gone stays refused.
		capErr := err
		attach, release = true, func() {}
		defer func() {
			if errors.Is(err, kube.ErrNotFound) {
				err = capErr
			}
		}()
	} else if err != nil {
		return CreateResult{}, err
	}
	defer release()
	tracked := func(string) error { return nil }
	if d.Tracker != nil {
		// Before the claim exists: a session that ends mid-create waits for it, and one that
		// ended meanwhile gets its claim deleted.
		if tracked, err = d.Tracker.Begin(owner, ns); err != nil {
			return CreateResult{}, err
		}
	}
	p := newProgress(ctx, req)
	defer p.finish()
	start := time.Now()
	pool, custom, err := d.customPool(ctx, ns, a)
	if err != nil {
		return CreateResult{}, err
	}
	c, err := d.Claims.Create(ctx, kube.CreateRequest{
		Namespace: ns, WarmPool: pool, Labels: a.Labels, Owner: owner, Principal: principal, ShutdownAfter: shutdown,
		PodLabels: a.PodLabels, PodAnnotations: a.PodAnnotations, Env: a.Env, VolumeSize: volume, ReadyTimeout: ready, Progress: p.send, Posted: release,
		RequestID: a.RequestID, Attach: attach,
	})
	if terr := tracked(c.Name); terr != nil {
		return CreateResult{}, terr
	}
	if err != nil {
		return CreateResult{}, err
	}
	res := CreateResult{SandboxClaimName: c.Name, Namespace: c.Namespace, SandboxName: c.SandboxName, VolumePath: c.VolumePath}
	if custom {
		res.CustomPool = pool
	}
	// The claim's own shutdown time, so a repeat of the request answers exactly the same.
	switch {
	case !c.ShutdownAt.IsZero():
		res.ShutdownTime = c.ShutdownAt.UTC().Format(time.RFC3339)
	case shutdown != nil:
		res.ShutdownTime = start.Add(*shutdown).UTC().Format(time.RFC3339)
	}
	if c.Reused {
		return res, nil // an earlier create's sandbox: not one more
	}
	d.observe().SandboxCreated(time.Since(start))
	return res, nil
}

// requestIDProp is create_sandbox's request_id: any value of these characters is safe, since
// the claim's name is a hash of it.
func requestIDProp() prop {
	return prop{"type": "string", "minLength": 1, "maxLength": maxRequestID, "pattern": requestIDPattern,
		"description": "Repeating it returns the same sandbox while it lives (to retry a lost create)."}
}

// maxShutdownAfter is the largest shutdown_after_seconds: the operator's cap, else a ceiling
// that keeps every accepted value far from overflowing a time.Duration.
func (d Deps) maxShutdownAfter() int {
	if d.MaxShutdownAfter > 0 {
		return min(int(d.MaxShutdownAfter/time.Second), shutdownCeiling)
	}
	return shutdownCeiling
}

// defaultShutdownAfter is shutdown_after_seconds when a create names none.
func (d Deps) defaultShutdownAfter() int {
	if d.DefaultShutdownAfter > 0 {
		return int(d.DefaultShutdownAfter / time.Second)
	}
	return int(kube.DefaultShutdownAfter / time.Second)
}

// shutdownProp states the bounds and whether null (no timeout) is allowed here, so the model
// reads this server's rule and the schema check enforces it. The hard cap from creation is
// the kube client's to enforce (its refusal is extend_sandbox's too); the description says it.
func (d Deps) shutdownProp() prop {
	p := prop{"type": "integer", "minimum": 1, "maximum": d.maxShutdownAfter(), "default": d.defaultShutdownAfter()}
	var text []string
	if capText := d.lifetimeCapText(); capText != "" {
		text = append(text, capText)
	}
	if d.AllowNoShutdown {
		p["type"] = []string{"integer", "null"}
		if d.MaxLifetime > 0 {
			text = append(text, "null: no timeout of its own, deleted at that maximum.")
		} else {
			text = append(text, "null disables the timeout.")
		}
	}
	if len(text) > 0 {
		p["description"] = strings.Join(text, " ")
	}
	return p
}

// lifetimeCapText is what shutdown_after_seconds' descriptions say of the hard cap; "" without one.
func (d Deps) lifetimeCapText() string {
	if d.MaxLifetime <= 0 {
		return ""
	}
	return fmt.Sprintf("No sandbox lives more than %d s from its creation; more is refused.", int(d.MaxLifetime/time.Second))
}

// shutdownAfter reads shutdown_after_seconds, which the schema has bounded: absent means the
// default, null (where the schema allows it) means none.
func (d Deps) shutdownAfter(raw json.RawMessage) (*time.Duration, error) {
	secs := d.defaultShutdownAfter()
	if len(raw) > 0 {
		if string(raw) == "null" {
			return nil, nil
		}
		if err := json.Unmarshal(raw, &secs); err != nil {
			return nil, badInput("shutdown_after_seconds must be an integer number of seconds, got %s", raw)
		}
	}
	dur := time.Duration(secs) * time.Second
	return &dur, nil
}

// envHint tells the model what to do when the template refused the claim's env or volume.
func envHint(err error) string {
	var f *kube.ClaimFailure
	if !errors.As(err, &f) {
		return ""
	}
	switch {
	case f.Reason == "EnvVarsInjectionRejected" || strings.Contains(f.Message, "not allowed by the template policy"):
		return " This warm pool's template does not let a claim set those variables (list_sandbox_templates shows each pool's " +
			"env_overrides: Allowed adds new names, Overrides may also replace the template's). Leave env out and pass env to " +
			"execute_command or start_process instead, or use a pool that allows it."
	case f.Reason == "VolumeClaimTemplatesError":
		return " This warm pool's template does not allow a persistent volume. Leave volume_size out (the working directory " +
			"lives as long as the sandbox; download_archive saves it), or use a pool whose template allows it (list_sandbox_templates: volumes)."
	}
	return ""
}

func (d Deps) maxVolumeSize() resource.Quantity {
	if d.MaxVolumeSize.Sign() > 0 {
		return d.MaxVolumeSize
	}
	return resource.MustParse(kube.DefaultMaxVolumeSize)
}

func (d Deps) maxVolumeSizeText() string {
	q := d.maxVolumeSize()
	return q.String()
}

// volumeSize reads volume_size (zero when absent) against the operator's cap.
func (d Deps) volumeSize(s string) (resource.Quantity, error) {
	if s == "" {
		return resource.Quantity{}, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return resource.Quantity{}, badInput("volume_size %q is not a positive Kubernetes quantity; write e.g. \"2Gi\" or \"500Mi\"", s)
	}
	if q.Cmp(d.maxVolumeSize()) > 0 {
		return resource.Quantity{}, badInput("volume_size %s is more than this server allows (%s); ask for less", s, d.maxVolumeSizeText())
	}
	if q.Cmp(resource.MustParse(kube.MinVolumeSize)) < 0 {
		return resource.Quantity{}, badInput("volume_size %s is less than the smallest volume this server creates (%s); ask for e.g. \"1Gi\"", s, kube.MinVolumeSize)
	}
	return q, nil
}
