package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

type fileArgs struct {
	claimArgs
	Path    string `json:"path"`
	Content string `json:"content"`
	Binary  bool   `json:"binary"`
	Timeout *int   `json:"timeout"`
}

// UploadResult is upload_file's answer.
type UploadResult struct {
	BytesWritten int `json:"bytes_written"`
}

// DownloadResult is download_file's answer.
type DownloadResult struct {
	Content   string `json:"content" jsonschema:"file content: text, or base64 when binary is true"`
	BytesRead int    `json:"bytes_read"`
}

func fileSchema(extra map[string]prop, required ...string) map[string]prop {
	props := map[string]prop{
		"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
		"path":    pathProp(""),
		"timeout": timeoutProp(),
	}
	for k, v := range extra {
		props[k] = v
	}
	return props
}

// onSandbox runs the steps every file tool shares: resolve the caller's claim, then run do
// against its sandbox within the timeout. It returns the failure result, or nil when do succeeded.
func (d Deps) onSandbox(ctx context.Context, op string, a fileArgs, do func(context.Context, conn.Target) error) *mcp.CallToolResult {
	return d.onClaim(ctx, op, a.claimArgs, a.Timeout, do)
}

// onClaim is onSandbox for any tool's claim arguments and timeout.
func (d Deps) onClaim(ctx context.Context, op string, ca claimArgs, timeout *int, do func(context.Context, conn.Target) error) *mcp.CallToolResult {
	c, ref, err := d.resolve(ctx, ca)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, seconds(timeout, defaultTimeout))
		err = do(cctx, target(c))
		cancel()
	}
	if err != nil {
		return failure(op, ref, err)
	}
	return nil
}

func uploadTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("upload_file",
		mcp.WithToolTitle("Write a file into a sandbox"),
		mcp.WithDescription("Writes a file (creating parents, replacing one that exists): text as is, or base64 with binary=true."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "path", "content"}, fileSchema(map[string]prop{
			"content": {"type": "string"},
			"binary":  boolProp("content is base64."),
		}))),
		outputSchema[UploadResult](),
		hints(false, true, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "upload the file"
		var a fileArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		data := []byte(a.Content)
		if a.Binary {
			var err error
			if data, err = base64.StdEncoding.Strict().DecodeString(a.Content); err != nil {
				return failure(op, claimRef{}, badInput("content is not valid base64 (standard alphabet with padding): %v. "+
					"Encode the bytes with base64, or pass text with binary=false.", err)), nil
			}
		}
		if fail := d.onSandbox(ctx, op, a, func(ctx context.Context, t conn.Target) error {
			_, err := d.Conn.Upload(ctx, t, a.Path, bytes.NewReader(data))
			return err
		}); fail != nil {
			return fail, nil
		}
		return structured(UploadResult{BytesWritten: len(data)}), nil
	}}
}

func downloadTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("download_file",
		mcp.WithToolTitle("Read a file from a sandbox"),
		mcp.WithDescription("Reads a file: text as is, or base64 with binary=true (for non-UTF-8 files)."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "path"}, fileSchema(map[string]prop{
			"binary": boolProp(""),
		}))),
		outputSchema[DownloadResult](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "download the file"
		var a fileArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		// The bytes go straight into the result's one string (base64-encoded on the way), whose
		// room is taken from the call's budget before they are read.
		p := newPayload(ctx, d, a.Binary, d.maxDownload())
		if fail := d.onSandbox(ctx, op, a, func(ctx context.Context, t conn.Target) error {
			_, err := d.Conn.Download(ctx, t, a.Path, p, d.maxDownload())
			return err
		}); fail != nil {
			return fail, nil
		}
		if !a.Binary && !utf8.ValidString(p.b.String()) {
			return failure(op, claimRef{}, badInput("file %q (%d bytes) is not UTF-8 text. Call download_file again with binary=true to get it as base64.", a.Path, p.read)), nil
		}
		content, err := p.text()
		if err != nil {
			return failure(op, claimRef{}, err), nil
		}
		summary := fmt.Sprintf("Read %d bytes of %q.", p.read, a.Path)
		if a.Binary {
			summary = fmt.Sprintf("Read %d bytes of %q, base64-encoded.", p.read, a.Path)
		}
		return payloadResult(DownloadResult{Content: content, BytesRead: int(p.read)}, len(content), summary), nil
	}}
}
