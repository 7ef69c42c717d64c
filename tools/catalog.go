package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

type catalogArgs struct {
	Namespace string `json:"namespace"`
}

// PoolInfo is one warm pool create_sandbox can use.
type PoolInfo struct {
	Name         string   `json:"name" jsonschema:"pass as create_sandbox's warmpool"`
	Template     string   `json:"template"`
	Images       []string `json:"images,omitempty" jsonschema:"container images of its template"`
	Ready        int32    `json:"ready" jsonschema:"sandboxes waiting to be claimed"`
	Replicas     int32    `json:"replicas" jsonschema:"sandboxes the pool keeps"`
	EnvOverrides string   `json:"env_overrides,omitempty" jsonschema:"the template's envVarsInjectionPolicy: Disallowed, Allowed or Overrides"`
	Volumes      string   `json:"volumes,omitempty" jsonschema:"the template's volumeClaimTemplatesPolicy: create_sandbox's volume_size needs Allowed or Overrides"`
}

// TemplateInfo is a template no warm pool uses.
type TemplateInfo struct {
	Name         string   `json:"name"`
	Images       []string `json:"images,omitempty"`
	EnvOverrides string   `json:"env_overrides"`
	Volumes      string   `json:"volumes,omitempty"`
}

// NamespaceCatalog is what one namespace offers.
type NamespaceCatalog struct {
	Namespace string         `json:"namespace"`
	Pools     []PoolInfo     `json:"pools"`
	Templates []TemplateInfo `json:"templates_without_pool,omitempty" jsonschema:"templates create_sandbox cannot use until a warm pool refers to them"`
}

// CatalogResult is list_sandbox_templates' answer.
type CatalogResult struct {
	Namespaces []NamespaceCatalog `json:"namespaces"`
}

func catalogTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("list_sandbox_templates",
		mcp.WithToolTitle("List warm pools and templates"),
		mcp.WithDescription("Lists the warm pools for create_sandbox (images, ready count, whether env and volume_size are allowed) and pool-less templates."),
		inputSchema(objectSchema(nil, map[string]prop{
			"namespace": namespaceOrAllProp(),
		})),
		outputSchema[CatalogResult](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "list the warm pools"
		var a catalogArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		namespaces, err := d.catalogNamespaces(a.Namespace)
		if err != nil {
			return failure(op, claimRef{}, err), nil
		}
		out := CatalogResult{Namespaces: []NamespaceCatalog{}}
		for _, ns := range namespaces {
			c, err := d.catalog(ctx, ns)
			if err != nil {
				return failure(op, claimRef{Namespace: ns}, err), nil
			}
			out.Namespaces = append(out.Namespaces, c)
		}
		return structured(out), nil
	}}
}

// catalogNamespaces resolves a namespaceOrAllProp argument: allNamespaces is the allowlist.
func (d Deps) catalogNamespaces(ns string) ([]string, error) {
	if ns != allNamespaces {
		one, err := d.namespace(ns)
		return []string{one}, err
	}
	if len(d.AllowedNamespaces) == 0 {
		return nil, badInput("namespace %q needs the operator's list of namespaces (K8S_SANDBOX_ALLOWED_NAMESPACES), and this server has none: pass a namespace", allNamespaces)
	}
	return d.AllowedNamespaces, nil
}

func (d Deps) catalog(ctx context.Context, ns string) (NamespaceCatalog, error) {
	pools, templates, err := d.Claims.Catalog(ctx, ns)
	if err != nil {
		return NamespaceCatalog{}, err
	}
	c := NamespaceCatalog{Namespace: ns, Pools: make([]PoolInfo, 0, len(pools))}
	for _, p := range pools {
		c.Pools = append(c.Pools, PoolInfo{Name: p.Name, Template: p.Template, Images: p.Images, Ready: p.Ready,
			Replicas: p.Replicas, EnvOverrides: p.EnvPolicy, Volumes: p.VolumePolicy})
	}
	for _, t := range templates {
		c.Templates = append(c.Templates, TemplateInfo{Name: t.Name, Images: t.Images, EnvOverrides: t.EnvPolicy, Volumes: t.VolumePolicy})
	}
	return c, nil
}

// poolHint names the warm pools of ns for a "warm pool not found" error, or says why it cannot.
func (d Deps) poolHint(ctx context.Context, ns string, err error) string {
	var f *kube.ClaimFailure
	if !errors.As(err, &f) || f.Reason != "WarmPoolNotFound" {
		return ""
	}
	c, cerr := d.catalog(ctx, ns)
	if cerr != nil {
		return " Call list_sandbox_templates to see the warm pools."
	}
	if len(c.Pools) == 0 {
		return fmt.Sprintf(" Namespace %q has no warm pools; ask the operator for one, or try another namespace.", ns)
	}
	names := make([]string, len(c.Pools))
	for i, p := range c.Pools {
		names[i] = fmt.Sprintf("%s (%d ready)", p.Name, p.Ready)
	}
	return fmt.Sprintf(" Warm pools in namespace %q: %s.", ns, strings.Join(names, ", "))
}
