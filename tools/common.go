package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// claimArgs are the arguments every claim-targeted tool takes.
type claimArgs struct {
	SandboxClaimName string `json:"sandbox_claim_name"`
	Namespace        string `json:"namespace"`
}

// bind decodes the arguments validated (whose types the schema has checked) into v.
func bind(req mcp.CallToolRequest, v any) error {
	raw, ok := req.Params.Arguments.(json.RawMessage)
	if !ok {
		return fmt.Errorf("tools: %s was called without its schema check", req.Params.Name) // a wiring bug
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return badInput("invalid arguments: %v", err)
	}
	return nil
}

// namespace defaults an omitted namespace and applies the allowlist. Its rule is
// apimachinery's, as in the schemas' format: a namespace from the kubeconfig or a resource
// URI is held to the same one.
func (d Deps) namespace(ns string) (string, error) {
	if ns == "" {
		ns = d.DefaultNamespace
	}
	if ns == "" {
		ns = "default"
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return "", badInput("namespace %q is not valid: %s", ns, strings.Join(errs, "; "))
	}
	if len(d.AllowedNamespaces) > 0 && !slices.Contains(d.AllowedNamespaces, ns) {
		return "", badInput("namespace %q is not allowed on this server; use one of: %s", ns, strings.Join(d.AllowedNamespaces, ", "))
	}
	return ns, nil
}

// seconds reads an optional duration argument the schema has already bounded.
func seconds(v *int, def int) time.Duration { return time.Duration(intArg(v, def)) * time.Second }

// caller validates the claim arguments and names the owner.
func (d Deps) caller(ctx context.Context, a claimArgs) (claimRef, string, error) {
	ref := claimRef{Namespace: a.Namespace, Name: a.SandboxClaimName}
	ns, err := d.namespace(a.Namespace)
	if err != nil {
		return ref, "", err
	}
	ref.Namespace = ns
	owner, err := d.Owner(ctx)
	return ref, owner, err
}

// resolve checks ownership and returns the caller's claim. Every claim-targeted tool starts here,
// so it is also where a suspended sandbox is refused, or resumed first with AutoResume.
func (d Deps) resolve(ctx context.Context, a claimArgs) (kube.Claim, claimRef, error) {
	ref, owner, err := d.caller(ctx, a)
	if err != nil {
		return kube.Claim{}, ref, err
	}
	c, err := d.Claims.Get(ctx, ref.Namespace, ref.Name, owner)
	if err == nil {
		noteDeadline(ctx, c)
	}
	if err != nil || !c.Suspended {
		return c, ref, err
	}
	if !d.AutoResume {
		return c, ref, errSuspended
	}
	p := callProgress(ctx)
	p.send("the sandbox is suspended: resuming it")
	c, err = d.Claims.Resume(ctx, ref.Namespace, ref.Name, owner, kube.DefaultReadyTimeout, p.send)
	if err != nil {
		return c, ref, fmt.Errorf("%w: %w", errResume, err)
	}
	return c, ref, nil
}

func structured(v any) *mcp.CallToolResult { return mcp.NewToolResultStructuredOnly(v) }
