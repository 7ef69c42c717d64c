package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/transfer"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// Transfers hands out one-time URLs that stream a file into or out of a sandbox through this
// server's HTTP front (internal/transfer implements it).
type Transfers interface {
	Create(ctx context.Context, owner, namespace, claim, path, direction string, expires time.Duration) (string, time.Time, error)
}

type transferArgs struct {
	claimArgs
	Path      string `json:"path"`
	Direction string `json:"direction"`
	Expires   *int   `json:"expires_seconds"`
}

// TransferResult is create_transfer_url's answer.
type TransferResult struct {
	URL       string `json:"url" jsonschema:"one-time URL; send the same credentials as to this server"`
	Method    string `json:"method" jsonschema:"PUT (upload) or GET (download)"`
	ExpiresAt string `json:"expires_at" jsonschema:"RFC 3339; unused by then, it answers 404"`
	Curl      string `json:"curl" jsonschema:"the command that uses it"`
}

// uploadsAllowed: an upload URL replaces the file at its path, so where the operator's filter
// leaves out the tools that can replace a file, create_transfer_url hands out download URLs
// only (withhold.go takes upload out of its schema) and the HTTP front refuses an upload
// granted by a process without the filter (main's fileRoutes, transfer.WithoutUploads).
func (d Deps) uploadsAllowed() bool { return d.Selection.AllowsOverwrite() }

func transferTool(d Deps) server.ServerTool {
	desc := "Returns a one-time URL on this server that streams a file of any size into (upload: PUT) or out of (download: GET) " +
		"the sandbox at path, with the same credentials as this server, e.g. with curl. The file does not pass through you."
	if !d.uploadsAllowed() {
		desc = "Returns a one-time URL on this server that streams a file of any size out of the sandbox at path (download: GET), " +
			"with the same credentials as this server, e.g. with curl. The file does not pass through you. No uploads on this server."
	}
	tool := mcp.NewTool("create_transfer_url",
		mcp.WithToolTitle("Create a file transfer URL"),
		mcp.WithDescription(desc),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "path", "direction"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(), "path": pathProp(""),
			"direction":       {"type": "string", "enum": []string{transfer.Upload, transfer.Download}},
			"expires_seconds": intProp("", 1, int(transfer.MaxExpires/time.Second), int(transfer.DefaultExpires/time.Second)),
		})),
		outputSchema[TransferResult](),
		// An upload replaces the file at path: destructive while uploads are offered.
		hints(false, d.uploadsAllowed(), false),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "create the transfer URL"
		var a transferArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		ref, owner, err := d.caller(ctx, a.claimArgs)
		var url string
		var at time.Time
		if err == nil {
			url, at, err = d.Transfers.Create(ctx, owner, ref.Namespace, ref.Name, a.Path, a.Direction, seconds(a.Expires, int(transfer.DefaultExpires/time.Second)))
		}
		switch {
		case errors.Is(err, kube.ErrTooManyTransfers):
			err = badInput("%v: use or let expire one of this sandbox's URLs first (they last at most %d s).", err, int(transfer.MaxExpires/time.Second))
		case errors.Is(err, transfer.ErrNoHTTP):
			err = badInput("%v.", err)
		case errors.Is(err, transfer.ErrNoUploads):
			err = badInput("%v: use direction download.", err)
		}
		if err != nil {
			return failure(op, ref, err), nil
		}
		out := TransferResult{URL: url, ExpiresAt: at.Format(time.RFC3339), Method: "GET", Curl: "curl -fo LOCAL_FILE"}
		if a.Direction == transfer.Upload {
			out.Method, out.Curl = "PUT", "curl -fT LOCAL_FILE"
		}
		if d.Who != nil && d.Who(ctx) != "" { // this server authenticates: so does the URL
			out.Curl += ` -H "Authorization: Bearer $TOKEN"`
		}
		out.Curl += fmt.Sprintf(" '%s'", url)
		return structured(out), nil
	}}
}
