package tools

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/workspace"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/hostfs"
)

// The copy tools move files and directories between the host directories the operator allowed
// (K8S_SANDBOX_HOST_PATHS) and a sandbox without their bytes passing through the model: a file
// streams through Conn's Upload and Download; a directory as a tar, unpacked where it lands
// (the sandbox's Unpack, hostfs.ExtractTar) all or nothing. Memory stays at a few buffers
// whatever the size.

type hostCopyArgs struct {
	claimArgs
	HostPath string `json:"host_path"`
	Path     string `json:"path"`
	Timeout  *int   `json:"timeout"`
}

// CopyResult is what a copy tool moved.
type CopyResult struct {
	Path     string   `json:"path" jsonschema:"the path in the sandbox"`
	HostPath string   `json:"host_path"`
	Files    int      `json:"files" jsonschema:"files copied (1 for a file; a directory's files, links and directories)"`
	Bytes    int64    `json:"bytes" jsonschema:"bytes moved (a directory's: its tar stream)"`
	Skipped  []string `json:"skipped,omitempty" jsonschema:"entries left out, each with why (links leading out of the tree, devices, sockets)"`
}

func hostPathProp() prop {
	return prop{"type": "string", "minLength": 1, "maxLength": maxPathChars, "pattern": noControl,
		"description": "Absolute path on the server's host, inside an allowed directory."}
}

// hostArgs binds a copy tool's arguments and opens the allowed host directory its host_path
// is in (the caller closes it), or returns the result that refuses them.
func (d Deps) hostArgs(req mcp.CallToolRequest, op string) (hostCopyArgs, *os.Root, string, *mcp.CallToolResult) {
	var a hostCopyArgs
	if err := bind(req, &a); err != nil {
		return a, nil, "", failure(op, claimRef{}, err)
	}
	root, rel, err := d.HostFS.Resolve(a.HostPath)
	if err != nil {
		return a, nil, "", failure(op, claimRef{}, hostError(err))
	}
	return a, root, rel, nil
}

// copyTimeout is a copy's timeout argument, or its default: the longest.
func copyTimeout(v *int) *int {
	if v != nil {
		return v
	}
	longest := maxTimeout
	return &longest
}

// copyTimeoutProp is timeout for a copy, which may be long: bounds as the other tools', a
// larger default.
func copyTimeoutProp() prop {
	return prop{"type": "integer", "minimum": minTimeout, "maximum": maxTimeout, "default": maxTimeout}
}

func copyToSandboxTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("copy_to_sandbox",
		mcp.WithToolTitle("Copy from the host into a sandbox"),
		mcp.WithDescription("Copies a host file or directory into the sandbox at path, streamed (any size), replacing same-named files."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "host_path", "path"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
			"host_path": hostPathProp(), "path": pathProp(""), "timeout": copyTimeoutProp(),
		})),
		outputSchema[CopyResult](),
		hints(false, true, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "copy to the sandbox"
		a, root, rel, res := d.hostArgs(req, op)
		if res != nil {
			return res, nil
		}
		defer root.Close()
		rc, size, isDir, err := hostfs.OpenFile(root, rel)
		if err != nil {
			return failure(op, claimRef{}, hostError(err)), nil
		}
		if rc != nil {
			defer rc.Close()
		}
		if size > d.maxTransfer() {
			return failure(op, claimRef{}, badInput("%s is %d bytes, more than the %d this server copies (K8S_SANDBOX_MAX_TRANSFER_BYTES).",
				a.HostPath, size, d.maxTransfer())), nil
		}
		out := CopyResult{Path: a.Path, HostPath: a.HostPath}
		if res := d.onClaim(ctx, op, a.claimArgs, copyTimeout(a.Timeout), func(ctx context.Context, t conn.Target) error {
			if !isDir {
				n, err := d.files().PlaceUpload(ctx, t, d.Conn, a.Path, capped(rc, d.maxTransfer()))
				out.Files, out.Bytes = 1, n
				return err
			}
			st, n, err := d.uploadTree(ctx, t, root, rel, a.Path)
			out.Files, out.Bytes, out.Skipped = st.Files, n, skipped(st)
			return err
		}); res != nil {
			return res, nil
		}
		return structured(out), nil
	}}
}

// uploadTree streams the host directory root/rel as a tar into a temporary file of the
// sandbox and unpacks it at dir (all or nothing: the sandbox's Unpack).
func (d Deps) uploadTree(ctx context.Context, t conn.Target, root *os.Root, rel, dir string) (hostfs.Stats, int64, error) {
	tmp, err := workspace.TempName()
	if err != nil {
		return hostfs.Stats{}, 0, err
	}
	defer d.files().RemoveTemp(context.WithoutCancel(ctx), t, tmp)
	var st hostfs.Stats
	var n int64
	if err := pipeThrough(func(w io.Writer) (err error) {
		st, err = hostfs.WriteTar(ctx, w, root, rel)
		return err
	}, func(r io.Reader) (err error) {
		n, err = d.Conn.Upload(ctx, t, tmp, capped(r, d.maxTransfer()))
		return err
	}); err != nil {
		return st, n, err
	}
	if _, err := d.files().Unpack(ctx, t, tmp, dir); err != nil {
		return st, n, err
	}
	return st, n, nil
}

func copyFromSandboxTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("copy_from_sandbox",
		mcp.WithToolTitle("Copy from a sandbox to the host"),
		mcp.WithDescription("Copies a sandbox file or directory to host_path, streamed (any size), replacing same-named files."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "path", "host_path"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
			"path": pathProp(""), "host_path": hostPathProp(), "timeout": copyTimeoutProp(),
		})),
		outputSchema[CopyResult](),
		hints(false, true, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "copy from the sandbox"
		a, root, rel, res := d.hostArgs(req, op)
		if res != nil {
			return res, nil
		}
		defer root.Close()
		out := CopyResult{Path: a.Path, HostPath: a.HostPath}
		if res := d.onClaim(ctx, op, a.claimArgs, copyTimeout(a.Timeout), func(ctx context.Context, t conn.Target) error {
			n, err := d.downloadFile(ctx, t, a.Path, root, rel)
			if err == nil {
				out.Files, out.Bytes = 1, n
				return nil
			}
			if !errors.Is(err, conn.ErrIsDir) {
				return err
			}
			st, n, err := d.downloadTree(ctx, t, a.Path, root, rel)
			out.Files, out.Bytes, out.Skipped = st.Files, n, skipped(st)
			return err
		}); res != nil {
			return res, nil
		}
		return structured(out), nil
	}}
}

// downloadFile streams a sandbox file into root/rel, written under a temporary name and
// renamed into place only once whole.
func (d Deps) downloadFile(ctx context.Context, t conn.Target, path string, root *os.Root, rel string) (int64, error) {
	f, err := hostfs.CreateFile(root, rel, 0o644)
	if err != nil {
		return 0, hostError(err)
	}
	defer f.Abort() // nothing once committed
	n, err := d.Conn.Download(ctx, t, path, f, d.maxTransfer())
	if err != nil {
		return n, err
	}
	return n, hostError(f.Commit())
}

// downloadTree packs a sandbox directory (a tar.gz in a temporary file there) and streams it
// into hostfs.ExtractTar at root/rel, which places it only once whole.
func (d Deps) downloadTree(ctx context.Context, t conn.Target, dir string, root *os.Root, rel string) (hostfs.Stats, int64, error) {
	tmp, err := workspace.TempName()
	if err != nil {
		return hostfs.Stats{}, 0, err
	}
	defer d.files().RemoveTemp(context.WithoutCancel(ctx), t, tmp)
	if _, err := d.files().Pack(ctx, t, dir, tmp); err != nil {
		return hostfs.Stats{}, 0, err
	}
	var st hostfs.Stats
	var n int64
	err = pipeThrough(func(w io.Writer) (err error) {
		n, err = d.Conn.Download(ctx, t, tmp, w, d.maxTransfer())
		return err
	}, func(r io.Reader) (err error) {
		st, err = extractGzip(ctx, r, root, rel, d.maxTransfer())
		return hostError(err)
	})
	return st, n, err
}

// pipeThrough runs write in a goroutine, into a pipe that read consumes, and returns once both
// have: write's error first (the source failed), else read's. Whichever side ends first ends
// the other, so that neither blocks on a pipe nobody serves.
func pipeThrough(write func(io.Writer) error, read func(io.Reader) error) error {
	pr, pw := io.Pipe()
	var werr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		werr = write(pw)
		pw.CloseWithError(werr) // nil: EOF
	}()
	rerr := read(pr)
	pr.CloseWithError(errCopyEnded) // the writer, if still writing, ends
	<-done
	if werr != nil && !errors.Is(werr, errCopyEnded) {
		return werr
	}
	return rerr
}

func extractGzip(ctx context.Context, r io.Reader, root *os.Root, rel string, maxBytes int64) (hostfs.Stats, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return hostfs.Stats{}, fmt.Errorf("reading the sandbox's archive: %w", err)
	}
	defer zr.Close()
	return hostfs.ExtractTar(ctx, zr, root, rel, maxBytes)
}

// errCopyEnded closes a copy's pipe once one side is done, so that the other returns.
var errCopyEnded = errors.New("the copy ended")

func skipped(st hostfs.Stats) []string {
	if st.SkippedCount > len(st.Skipped) {
		return append(st.Skipped, fmt.Sprintf("... and %d more", st.SkippedCount-len(st.Skipped)))
	}
	return st.Skipped
}

// hostError makes a host-side refusal an input error (its text says which directories are
// allowed, or what is wrong with the path): the model's to fix, not a failure to retry.
func hostError(err error) error {
	for _, e := range []error{hostfs.ErrNotAllowed, hostfs.ErrOutside, hostfs.ErrNotDir, hostfs.ErrIsDir, hostfs.ErrNotRegular,
		hostfs.ErrSymlink, hostfs.ErrUnsafeEntry, hostfs.ErrTooLarge, hostfs.ErrDirInTheWay, os.ErrNotExist} {
		if errors.Is(err, e) {
			return badInput("%v.", err)
		}
	}
	return err
}

// capped refuses a stream past max with conn.ErrTooLarge instead of copying it whole.
func capped(r io.Reader, max int64) io.Reader { return &capReader{r: r, left: max} }

type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, fmt.Errorf("%w: more than K8S_SANDBOX_MAX_TRANSFER_BYTES", conn.ErrTooLarge)
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, fmt.Errorf("%w: more than K8S_SANDBOX_MAX_TRANSFER_BYTES", conn.ErrTooLarge)
	}
	return n, err
}
