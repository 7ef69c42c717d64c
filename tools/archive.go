package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/workspace"
)

type archiveArgs struct {
	claimArgs
	Path    string `json:"path"`
	Content string `json:"content"`
	Timeout *int   `json:"timeout"`
}

// UploadArchiveResult is upload_archive's answer.
type UploadArchiveResult struct {
	Path    string `json:"path"`
	Entries int    `json:"entries" jsonschema:"files, directories and links the archive held"`
	Bytes   int    `json:"bytes" jsonschema:"size of the archive"`
}

// DownloadArchiveResult is download_archive's answer.
type DownloadArchiveResult struct {
	Content string `json:"content" jsonschema:"the directory as a gzip-compressed tar, base64-encoded"`
	Bytes   int64  `json:"bytes" jsonschema:"size of the archive before base64"`
}

func uploadArchiveTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("upload_archive",
		mcp.WithToolTitle("Upload a directory tree"),
		mcp.WithDescription("Unpacks a base64 tar (gzip or not) into a directory, replacing same-named files; a bad archive changes nothing."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "path", "content"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
			"path":    pathProp(""),
			"content": {"type": "string", "minLength": 1, "description": "tar czf - dir | base64"},
			"timeout": timeoutProp(),
		})),
		outputSchema[UploadArchiveResult](),
		hints(false, true, false),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "upload the archive"
		var a archiveArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		data, err := base64.StdEncoding.DecodeString(a.Content)
		if err != nil {
			return failure(op, claimRef{}, badInput("content is not valid base64 (standard alphabet with padding): %v. Encode the archive with base64.", err)), nil
		}
		if int64(len(data)) > d.maxDownload() {
			return failure(op, claimRef{}, badInput("the archive is %d bytes; at most %d are accepted. Split the tree into several archives.", len(data), d.maxDownload())), nil
		}
		// The whole archive is read here first, so that one the sandbox's tar would unpack in
		// part (truncated, corrupt, an entry leaving the directory, a bomb) never reaches it.
		n, err := workspace.CheckArchive(data, d.MaxArchiveExpandedBytes)
		if err != nil {
			return failure(op, claimRef{}, err), nil
		}
		if res := d.onClaim(ctx, op, a.claimArgs, a.Timeout, func(ctx context.Context, t conn.Target) error {
			tmp, err := workspace.TempName()
			if err != nil {
				return err
			}
			// Unpack removes it too; this covers an upload or unpack cut short.
			defer d.files().RemoveTemp(context.WithoutCancel(ctx), t, tmp)
			if _, err := d.Conn.Upload(ctx, t, tmp, bytes.NewReader(data)); err != nil {
				return err
			}
			n, err = d.files().Unpack(ctx, t, tmp, a.Path)
			return err
		}); res != nil {
			return res, nil
		}
		return structured(UploadArchiveResult{Path: a.Path, Entries: n, Bytes: len(data)}), nil
	}}
}

func downloadArchiveTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("download_archive",
		mcp.WithToolTitle("Download a directory tree"),
		mcp.WithDescription("Packs a directory as a base64 tar.gz. Unpack with: base64 -d | tar xzf -."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "path"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
			"path":    pathProp(""),
			"timeout": timeoutProp(),
		})),
		outputSchema[DownloadArchiveResult](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "download the archive"
		var a archiveArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		p := newPayload(ctx, d, true, d.maxDownload())
		var size int64
		if res := d.onClaim(ctx, op, a.claimArgs, a.Timeout, func(ctx context.Context, t conn.Target) error {
			tmp, err := workspace.TempName()
			if err != nil {
				return err
			}
			defer d.files().RemoveTemp(context.WithoutCancel(ctx), t, tmp)
			if size, err = d.files().Pack(ctx, t, a.Path, tmp); err != nil {
				return err
			}
			if size > d.maxDownload() {
				return badInput("The archive of %q is %d bytes, more than the %d this server returns. Download subdirectories "+
					"separately, or leave out build outputs (execute_command: tar czf out.tgz --exclude=node_modules ... "+
					"then download_file with binary=true).", a.Path, size, d.maxDownload())
			}
			// The archive's room is taken before it is read, and it is base64-encoded on the way.
			if err := p.Expect(size); err != nil {
				return err
			}
			_, err = d.Conn.Download(ctx, t, tmp, p, d.maxDownload())
			return err
		}); res != nil {
			return res, nil
		}
		content, err := p.text()
		if err != nil {
			return failure(op, claimRef{}, err), nil
		}
		return payloadResult(DownloadArchiveResult{Content: content, Bytes: p.read}, len(content),
			fmt.Sprintf("Packed %q as a %d-byte tar.gz, base64-encoded.", a.Path, p.read)), nil
	}}
}
