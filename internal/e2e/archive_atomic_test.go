//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestUploadArchiveAllOrNothing: on both runtimes, an archive that is truncated, empty, has
// an escaping last entry, or would put a file where a directory with files is, is an isError
// result that says so, and leaves the working directory as it was (list_files of it and of
// the destination unchanged, no archive or partial directory anywhere); a good archive then
// merges into the destination.
func TestUploadArchiveAllOrNothing(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	for _, c := range runtimes() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// A low expansion bound, so that a small bomb passes it (the default is 1 GiB).
			s := stdioSession(t, append(slices.Clone(c.env), fmt.Sprintf("K8S_SANDBOX_MAX_ARCHIVE_EXPANDED_BYTES=%d", bombBound)), "")
			created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			with := func(extra map[string]any) map[string]any {
				m := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name}
				for k, v := range extra {
					m[k] = v
				}
				return m
			}
			call[struct{}](t, s, "upload_file", with(map[string]any{"path": "proj/keep.txt", "content": "old"}))
			call[struct{}](t, s, "upload_file", with(map[string]any{"path": "proj/sub/inner.txt", "content": "inner"}))
			names := func(dir string) []string {
				var out []string
				for _, e := range call[listResult](t, s, "list_files", with(map[string]any{"path": dir})).Entries {
					out = append(out, e.Name)
				}
				slices.Sort(out)
				return out
			}
			top, inProj := names("."), names("proj")
			good := archiveOf(t, true, "new.txt", "n", "keep.txt", "new", "sub/", "", "sub/more.txt", "m")
			for _, tc := range []struct {
				name, dir string
				data      []byte
				want      string // in the message
			}{
				{"truncated gzip", "proj", good[:len(good)/2], "truncated"},
				{"truncated gzip, new directory", "fresh", good[:len(good)/2], "truncated"},
				{"empty tar", "fresh", archiveOf(t, false), "no entries"},
				{"empty tar.gz into the working directory", ".", archiveOf(t, true), "no entries"},
				{"escaping last entry", "proj", archiveOf(t, true, "new.txt", "n", "keep.txt", "new", "../evil", "e"), "leaves the destination directory"},
				{"file over a directory holding files", "proj", archiveOf(t, false, "new.txt", "n", "sub", "file"), "not empty"},
				// 2 MiB of zeros is about 2 KiB gzipped: refused before any of it reaches the sandbox.
				{"expansion bomb", "proj", archiveOf(t, true, "new.txt", "n", "zeros", strings.Repeat("\x00", 2*bombBound)),
					"K8S_SANDBOX_MAX_ARCHIVE_EXPANDED_BYTES"},
			} {
				msg := callError(t, s, "upload_archive", with(map[string]any{"path": tc.dir, "content": base64.StdEncoding.EncodeToString(tc.data)}))
				if !strings.Contains(msg, tc.want) {
					t.Errorf("%s: %s, want it to say %q", tc.name, msg, tc.want)
				}
				if got := names("."); !slices.Equal(got, top) {
					t.Errorf("%s: the working directory holds %v, held %v", tc.name, got, top)
				}
				if got := names("proj"); !slices.Equal(got, inProj) {
					t.Errorf("%s: proj holds %v, held %v", tc.name, got, inProj)
				}
			}
			probe := "cat proj/keep.txt; echo; find . -name '*k8s-sandbox-mcp*' -o -name evil -o -name new.txt | wc -l"
			if r := call[execResult](t, s, "execute_command", with(map[string]any{"command": probe})); r.Stdout != "old\n0\n" {
				t.Errorf("after the refused archives (keep.txt as it was; no archive, partial directory or entry anywhere): %q", r.Stdout)
			}
			up := call[struct {
				Entries int `json:"entries"`
			}](t, s, "upload_archive", with(map[string]any{"path": "proj", "content": base64.StdEncoding.EncodeToString(good)}))
			if up.Entries != 4 {
				t.Errorf("good archive: %d entries", up.Entries)
			}
			if got := names("proj"); !slices.Equal(got, []string{"keep.txt", "new.txt", "sub"}) {
				t.Errorf("proj after the good archive: %v", got)
			}
			if got := names("proj/sub"); !slices.Equal(got, []string{"inner.txt", "more.txt"}) {
				t.Errorf("proj/sub after the good archive (merged, not replaced): %v", got)
			}
			if got := names("."); !slices.Equal(got, top) {
				t.Errorf("the working directory after the good archive: %v, held %v", got, top)
			}
			call[struct{}](t, s, "delete_sandbox", with(nil))
		})
	}
}

// archiveOf is a tar of name/body pairs (a name ending in / is a directory), gzip-compressed
// with zip.
// bombBound is the expansion bound TestUploadArchiveAllOrNothing's server runs with.
const bombBound = 1 << 20

func archiveOf(t *testing.T, zip bool, pairs ...string) []byte {
	t.Helper()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for i := 0; i+1 < len(pairs); i += 2 {
		h := &tar.Header{Name: pairs[i], Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(pairs[i+1]))}
		if strings.HasSuffix(h.Name, "/") {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(pairs[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if !zip {
		return tb.Bytes()
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	if _, err := zw.Write(tb.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return zb.Bytes()
}
