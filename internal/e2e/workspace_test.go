//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type (
	readFileResult struct {
		Content    string `json:"content"`
		FirstLine  int    `json:"first_line"`
		LastLine   int    `json:"last_line"`
		TotalLines int    `json:"total_lines"`
		NextOffset int    `json:"next_offset"`
	}
	editFileResult struct {
		Replacements int    `json:"replacements"`
		Lines        []int  `json:"lines"`
		Changed      string `json:"changed"`
		TotalLines   int    `json:"total_lines"`
	}
	searchResult struct {
		Matches   []string `json:"matches"`
		Total     int      `json:"total"`
		Truncated bool     `json:"truncated"`
	}
)

// TestWorkspaceToolsOnAMillionLines: on both runtimes, a 1,000,000-line file of about 90 MB
// is read by range, edited and searched in the sandbox, then moved and removed; the server's
// peak memory stays below the file's size, so it never held the file.
func TestWorkspaceToolsOnAMillionLines(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	for _, c := range []connection{connections()[2], connections()[5]} { // python runtime by pod IP; sandboxd by service
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, cmd := stdioServer(t, c.env, "")
			created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			with := sandboxArgs(created.SandboxClaimName, ns.Name)
			pad := strings.Repeat("x", 75)
			mk := call[execResult](t, s, "execute_command", with(map[string]any{"timeout": 300,
				"command": "seq -f 'line %.0f " + pad + "' 1 1000000 > big.txt && wc -l < big.txt && wc -c < big.txt"}))
			if f := strings.Fields(mk.Stdout); mk.ExitCode != 0 || len(f) != 2 || f[0] != "1000000" {
				t.Fatalf("making the file: %+v", mk)
			}
			size := mk.Stdout

			r := call[readFileResult](t, s, "read_file", with(map[string]any{"path": "big.txt", "offset": 500000, "limit": 3}))
			want := fmt.Sprintf("500000\tline 500000 %s\n500001\tline 500001 %s\n500002\tline 500002 %s\n", pad, pad, pad)
			if r.Content != want || r.TotalLines != 1000000 || r.NextOffset != 500003 || r.FirstLine != 500000 || r.LastLine != 500002 {
				t.Fatalf("read_file 500000-500002: %+v", r)
			}

			ed := call[editFileResult](t, s, "edit_file", with(map[string]any{"path": "big.txt",
				"old_text": "line 765432 " + pad + "\n", "new_text": "LINE 765432 edited\nand one more\n"}))
			if ed.Replacements != 1 || !slices.Equal(ed.Lines, []int{765432}) || ed.TotalLines != 1000001 ||
				!strings.Contains(ed.Changed, "765432\tLINE 765432 edited\n765433\tand one more\n765434\tline 765433 ") {
				t.Fatalf("edit_file: %+v", ed)
			}
			if msg := callError(t, s, "edit_file", with(map[string]any{"path": "big.txt", "old_text": pad, "new_text": "y"})); !strings.Contains(msg, "matches 999999 times") ||
				!strings.Contains(msg, "replace_all") {
				t.Errorf("ambiguous edit: %s", msg)
			}
			if msg := callError(t, s, "edit_file", with(map[string]any{"path": "big.txt", "old_text": "LINE 765432 edited\nand two", "new_text": "y"})); !strings.Contains(msg, "not found") ||
				!strings.Contains(msg, "765432") {
				t.Errorf("edit without a match: %s", msg)
			}

			found := call[searchResult](t, s, "search_files", with(map[string]any{"pattern": "^LINE [0-9]+ edited$", "glob": "*.txt"}))
			if !slices.Equal(found.Matches, []string{"big.txt:765432:LINE 765432 edited"}) || found.Total != 1 {
				t.Errorf("search_files: %+v", found)
			}
			if many := call[searchResult](t, s, "search_files", with(map[string]any{"pattern": "^line 1[0-9]* ", "max_results": 3})); len(many.Matches) != 3 || many.Total != 111112 || !many.Truncated {
				t.Errorf("capped search: %+v", many)
			}
			if msg := callError(t, s, "search_files", with(map[string]any{"pattern": "a("})); !strings.Contains(msg, "POSIX extended") {
				t.Errorf("bad pattern: %s", msg)
			}

			call[struct{}](t, s, "make_directory", with(map[string]any{"path": "a/b"}))
			call[struct{}](t, s, "move_path", with(map[string]any{"path": "big.txt", "destination": "a/b/big.txt"}))
			if tail := call[readFileResult](t, s, "read_file", with(map[string]any{"path": "a/b/big.txt", "offset": 1000001})); tail.Content != "1000001\tline 1000000 "+pad+"\n" || tail.NextOffset != 0 {
				t.Errorf("last line after the move: %+v", tail)
			}
			if msg := callError(t, s, "remove_path", with(map[string]any{"path": "a"})); !strings.Contains(msg, "recursive: true") {
				t.Errorf("remove a full directory: %s", msg)
			}
			call[struct{}](t, s, "remove_path", with(map[string]any{"path": "a", "recursive": true}))
			if msg := callError(t, s, "read_file", with(map[string]any{"path": "a/b/big.txt"})); !strings.Contains(strings.ToLower(msg), "not found") {
				t.Errorf("read after remove: %s", msg)
			}
			archiveRoundTrip(t, s, with)
			peak := peakRSSKB(t, cmd.Process.Pid)
			t.Logf("server peak RSS %d KiB for a file of %s bytes", peak, strings.TrimSpace(strings.Fields(size)[1]))
			if peak > 64<<10 {
				t.Errorf("server peak RSS %d KiB: the file went through the server", peak)
			}
			call[struct{}](t, s, "delete_sandbox", with(nil))
		})
	}
}

// archiveRoundTrip uploads a tree as tar.gz, reads a file of it, and downloads it again.
func archiveRoundTrip(t *testing.T, s *mcp.ClientSession, with func(map[string]any) map[string]any) {
	t.Helper()
	tree := map[string]string{"src/main.go": "package main\n", "docs/README.md": "# hi\n"}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range slices.Sorted(maps.Keys(tree)) {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(tree[name]))})
		_, _ = tw.Write([]byte(tree[name]))
	}
	_ = tw.Close()
	_ = zw.Close()
	up := call[struct {
		Entries int `json:"entries"`
	}](t, s, "upload_archive", with(map[string]any{"path": "proj", "content": base64.StdEncoding.EncodeToString(buf.Bytes())}))
	if up.Entries != 2 {
		t.Errorf("upload_archive entries %d", up.Entries)
	}
	if r := call[readFileResult](t, s, "read_file", with(map[string]any{"path": "proj/src/main.go"})); r.Content != "1\tpackage main\n" {
		t.Errorf("a file of the uploaded tree: %+v", r)
	}
	down := call[struct {
		Content string `json:"content"`
	}](t, s, "download_archive", with(map[string]any{"path": "proj"}))
	raw, err := base64.StdEncoding.DecodeString(down.Content)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			got[strings.TrimPrefix(h.Name, "./")] = string(b)
		}
	}
	if !maps.Equal(got, tree) {
		t.Errorf("download_archive: %v, want %v", got, tree)
	}
	if msg := callError(t, s, "upload_archive", with(map[string]any{"path": "bad", "content": base64.StdEncoding.EncodeToString([]byte("no tar"))})); !strings.Contains(msg, "tar") {
		t.Errorf("garbage archive: %s", msg)
	}
}
