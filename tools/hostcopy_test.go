package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/hostfs"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/transfer"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// TestCopyToolsListedOnlyWithHostPaths: without K8S_SANDBOX_HOST_PATHS the copy tools are not
// listed (nor named in the instructions); the transfer tool only where there is an HTTP front.
func TestCopyToolsListedOnlyWithHostPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Deps
		want map[string]bool
	}{
		{"default", Deps{}, map[string]bool{}},
		{"host paths", Deps{HostFS: hostfs.New([]string{t.TempDir()})},
			map[string]bool{"copy_to_sandbox": true, "copy_from_sandbox": true}},
		{"http", Deps{Transfers: noTransfers{}}, map[string]bool{"create_transfer_url": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listed := All(tc.d)
			instructions := tc.d.instructions(listed)
			for _, name := range []string{"copy_to_sandbox", "copy_from_sandbox", "create_transfer_url"} {
				if got := containsAll(names(tc.d), []string{name}); got != tc.want[name] {
					t.Errorf("%s listed: %v, want %v", name, got, tc.want[name])
				}
				if got := strings.Contains(instructions, name); got != tc.want[name] {
					t.Errorf("instructions name %s: %v, want %v", name, got, tc.want[name])
				}
			}
		})
	}
}

// TestCopyRefusesHostPathsOutside: a host path outside the allowed directories, relative, or
// leaving one through a link or "..", is refused before the sandbox is touched, saying why.
func TestCopyRefusesHostPathsOutside(t *testing.T) {
	allowed, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(allowed, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(allowed, "secret-link")); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.HostFS = hostfs.New([]string{allowed}) })
	h.claims.add("default", "c1", testOwner)
	for _, tool := range []string{"copy_to_sandbox", "copy_from_sandbox"} {
		for _, tc := range []struct{ name, hostPath, want string }{
			{"outside", filepath.Join(outside, "secret"), "K8S_SANDBOX_HOST_PATHS"},
			{"relative", "secret", "not absolute"},
			{"through a directory link", filepath.Join(allowed, "out", "secret"), "outside"},
			{"through a file link", filepath.Join(allowed, "secret-link"), "link"},
			{"dot-dot", allowed + "/../" + filepath.Base(outside) + "/secret", "K8S_SANDBOX_HOST_PATHS"},
		} {
			res := h.call(t, tool, map[string]any{"sandbox_claim_name": "c1", "host_path": tc.hostPath, "path": "f"})
			if !res.IsError || !strings.Contains(text(res), tc.want) {
				t.Errorf("%s %s: %v %q, want an error saying %q", tool, tc.name, res.IsError, text(res), tc.want)
			}
		}
	}
	if len(h.conn.files) != 0 {
		t.Errorf("the sandbox was written: %v", h.conn.files)
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "secret")); string(data) != "s" {
		t.Errorf("the file outside changed: %q", data)
	}
}

// TestTransferURLAnswer: the answer carries the URL, the method for the direction and a curl
// command that uses it; the registry's refusals become advice.
func TestTransferURLAnswer(t *testing.T) {
	rec := &recordTransfers{url: "http://mcp.example/transfer/default/c1/tok"}
	h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.Transfers = rec })
	h.claims.add("default", "c1", testOwner)
	res := h.call(t, "create_transfer_url", map[string]any{"sandbox_claim_name": "c1", "path": "data/in.bin", "direction": "upload"})
	var out TransferResult
	decode(t, res.StructuredContent, &out)
	if out.URL != rec.url || out.Method != "PUT" || !strings.Contains(out.Curl, "curl -fT LOCAL_FILE") || !strings.Contains(out.Curl, rec.url) {
		t.Errorf("answer %+v", out)
	}
	if rec.path != "data/in.bin" || rec.direction != transfer.Upload || rec.expires != transfer.DefaultExpires || rec.owner != testOwner {
		t.Errorf("registry asked %+v", rec)
	}
	rec.err = kube.ErrTooManyTransfers
	res = h.call(t, "create_transfer_url", map[string]any{"sandbox_claim_name": "c1", "path": "x", "direction": "download", "expires_seconds": 60})
	if !res.IsError || !strings.Contains(text(res), "let expire") {
		t.Errorf("too many: %q", text(res))
	}
	res = h.call(t, "create_transfer_url", map[string]any{"sandbox_claim_name": "c1", "path": "x", "direction": "sideways"})
	if !res.IsError || !strings.Contains(text(res), "direction must be one of") {
		t.Errorf("bad direction: %q", text(res))
	}
}

type recordTransfers struct {
	url, owner, path, direction string
	expires                     time.Duration
	err                         error
}

func (r *recordTransfers) Create(_ context.Context, owner, _, _, path, direction string, expires time.Duration) (string, time.Time, error) {
	r.owner, r.path, r.direction, r.expires = owner, path, direction, expires
	return r.url, time.Now().Add(expires), r.err
}

// TestPipeThrough: the source's failure is the one reported; a reader that stops early
// ends the writer instead of leaving it blocked; a whole copy passes every byte.
func TestPipeThrough(t *testing.T) {
	errSource, errSink := errors.New("source failed"), errors.New("sink failed")
	cases := []struct {
		name  string
		write func(io.Writer) error
		read  func(io.Reader) error
		want  error
	}{
		{"whole", func(w io.Writer) error { _, err := w.Write(make([]byte, 1<<20)); return err },
			func(r io.Reader) error {
				n, err := io.Copy(io.Discard, r)
				if err == nil && n != 1<<20 {
					err = fmt.Errorf("read %d bytes", n)
				}
				return err
			}, nil},
		{"source fails", func(w io.Writer) error { _, _ = w.Write([]byte("x")); return errSource },
			func(r io.Reader) error {
				if _, err := io.Copy(io.Discard, r); err != nil {
					return errSink // what the sink makes of it: not the cause
				}
				return nil
			}, errSource},
		{"sink stops early", func(w io.Writer) error {
			for {
				if _, err := w.Write(make([]byte, 4096)); err != nil {
					return err
				}
			}
		}, func(r io.Reader) error { _, _ = r.Read(make([]byte, 10)); return errSink }, errSink},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := pipeThrough(c.write, c.read); !errors.Is(err, c.want) {
				t.Errorf("pipeThrough: %v, want %v", err, c.want)
			}
		})
	}
}

// TestTransferURLsUnderTheFilter: under --disable-destructive create_transfer_url stays, for
// downloads only: upload is out of its schema and refused with the reason, and its hint says
// it destroys nothing; without the filter an upload URL, which replaces a file, is destructive.
func TestTransferURLsUnderTheFilter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sel     Selection
		listed  bool
		uploads bool
	}{
		{"no filter", Selection{}, true, true},
		{"disable-destructive", Selection{DisableDestructive: true}, true, false},
		{"read-only", Selection{ReadOnly: true}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordTransfers{url: "http://mcp.example/transfer/default/c1/tok"}
			h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.Transfers, d.Selection = rec, tc.sel })
			h.claims.add("default", "c1", testOwner)
			list, err := h.c.ListTools(context.Background(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(list.Tools, func(tl mcp.Tool) bool { return tl.Name == "create_transfer_url" })
			if i >= 0 != tc.listed {
				t.Fatalf("create_transfer_url listed %v, want %v", i >= 0, tc.listed)
			}
			if !tc.listed {
				return
			}
			tool := list.Tools[i]
			var schema struct {
				Properties struct {
					Direction struct {
						Enum []string `json:"enum"`
					} `json:"direction"`
				} `json:"properties"`
			}
			b, _ := json.Marshal(tool.InputSchema)
			if err := json.Unmarshal(b, &schema); err != nil {
				t.Fatal(err)
			}
			want := []string{"upload", "download"}
			if !tc.uploads {
				want = []string{"download"}
			}
			if got := schema.Properties.Direction.Enum; !slices.Equal(got, want) {
				t.Errorf("direction enum %v, want %v", got, want)
			}
			if d := effectiveHints(tool.Annotations).destructive; d != tc.uploads {
				t.Errorf("destructiveHint %v, want %v", d, tc.uploads)
			}
			if strings.Contains(tool.Description, "PUT") != tc.uploads {
				t.Errorf("description: %s", tool.Description)
			}
			res := h.call(t, "create_transfer_url", map[string]any{"sandbox_claim_name": "c1", "path": "kept.txt", "direction": "upload"})
			if res.IsError == tc.uploads {
				t.Fatalf("upload: %s", text(res))
			}
			if !tc.uploads && (text(res) != errNoUploads || rec.direction != "") {
				t.Errorf("upload refused with %q, the registry asked for %q", text(res), rec.direction)
			}
			if res := h.call(t, "create_transfer_url", map[string]any{"sandbox_claim_name": "c1", "path": "kept.txt", "direction": "download"}); res.IsError {
				t.Errorf("download: %s", text(res))
			}
		})
	}
	// The registry's own refusal (transfer.WithoutUploads) becomes advice too.
	rec := &recordTransfers{err: transfer.ErrNoUploads}
	h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.Transfers = rec })
	h.claims.add("default", "c1", testOwner)
	res := h.call(t, "create_transfer_url", map[string]any{"sandbox_claim_name": "c1", "path": "x", "direction": "upload"})
	if !res.IsError || !strings.Contains(text(res), "use direction download") {
		t.Errorf("the registry's refusal: %q", text(res))
	}
}
