package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func sandboxesTemplate(d Deps) server.ServerResourceTemplate {
	tmpl := mcp.NewResourceTemplate("sandboxes://{namespace}", "get_sandboxes",
		mcp.WithTemplateTitle("Your sandboxes in a namespace"),
		mcp.WithTemplateDescription("Lists the claim names of the sandboxes you created in the namespace, one content item each."),
		mcp.WithTemplateMIMEType("text/plain"),
	)
	return server.ServerResourceTemplate{Template: tmpl, Handler: func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		ns := namespaceArg(req.Params.Arguments["namespace"])
		if _, err := d.namespace(ns); err != nil || ns == "" {
			return nil, fmt.Errorf("invalid namespace in %q: use sandboxes://<namespace>", req.Params.URI)
		}
		owner, err := d.Owner(ctx)
		if err != nil {
			return nil, err
		}
		claims, err := d.Claims.List(ctx, ns, owner)
		if err != nil {
			return nil, fmt.Errorf("%s", advice("list sandboxes", claimRef{Namespace: ns}, err))
		}
		out := make([]mcp.ResourceContents, 0, len(claims))
		for _, c := range claims {
			out = append(out, mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: c.Name})
		}
		return out, nil
	}}
}

// namespaceArg reads a template variable; mcp-go hands them over as []string.
func namespaceArg(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []string:
		if len(x) > 0 {
			return x[0]
		}
	}
	return ""
}
