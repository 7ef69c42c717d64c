package tools

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"
)

// tarGz is a tar of name/body pairs (a name ending in / is a directory), gzip-compressed with zip.
func tarGz(t *testing.T, zip bool, pairs ...string) []byte {
	t.Helper()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for i := 0; i+1 < len(pairs); i += 2 {
		h := &tar.Header{Name: pairs[i], Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(pairs[i+1]))}
		if strings.HasSuffix(h.Name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
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
	_, _ = zw.Write(tb.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return zb.Bytes()
}

// TestUploadArchiveRefusesWholeArchives: an archive the sandbox's tar would unpack in part,
// or as nothing, is an isError result saying what is wrong, and none of it reaches the
// sandbox (no upload, no command).
func TestUploadArchiveRefusesWholeArchives(t *testing.T) {
	good := tarGz(t, true, "src/", "", "src/main.go", "package main\n", "README", "hi\n")
	corrupt := tarGz(t, false, "a", "1", "b", "2")
	corrupt[1024+148] ^= 0xff // the second header's checksum
	tests := []struct {
		name  string
		data  []byte
		bound int64 // MaxArchiveExpandedBytes
		want  []string
	}{
		{name: "truncated gzip", data: good[:len(good)-20], want: []string{"the archive cannot be read: it is truncated after", "re-create it", "Nothing of it was unpacked"}},
		{name: "empty tar", data: tarGz(t, false), want: []string{"the archive holds no entries (an empty tar)"}},
		{name: "empty tar.gz", data: tarGz(t, true), want: []string{"the archive holds no entries"}},
		{name: "corrupt tar header", data: corrupt, want: []string{"entry 2 has a corrupt header"}},
		{name: "escaping entry after good ones", data: tarGz(t, true, "a", "1", "b", "2", "../evil", "3"),
			want: []string{`entry 3 "../evil": an archive entry leaves the destination directory`, "nothing of it was unpacked"}},
		{name: "bomb over the bound", data: tarGz(t, true, "zeros", strings.Repeat("\x00", 1<<16)), bound: 1 << 15,
			want: []string{"expands to more than 32768 bytes", "K8S_SANDBOX_MAX_ARCHIVE_EXPANDED_BYTES"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.MaxArchiveExpandedBytes = tc.bound })
			h.claims.add("default", "mine", testOwner)
			res := h.call(t, "upload_archive", map[string]any{"sandbox_claim_name": "mine", "path": "proj",
				"content": base64.StdEncoding.EncodeToString(tc.data)})
			if !res.IsError || res.StructuredContent != nil {
				t.Fatalf("accepted: %s", text(res))
			}
			for _, w := range tc.want {
				if !strings.Contains(text(res), w) {
					t.Errorf("message %q lacks %q", text(res), w)
				}
			}
			if h.conn.calls != 0 || len(h.conn.files) != 0 {
				t.Errorf("the sandbox was reached (%d calls, files %v)", h.conn.calls, h.conn.files)
			}
		})
	}
	t.Run("a whole archive reaches the sandbox", func(t *testing.T) {
		h := newHarness(t)
		h.claims.add("default", "mine", testOwner)
		h.conn.stdout = base64.StdEncoding.EncodeToString([]byte("OK 3\n\nEXIT 0\n"))
		res := h.call(t, "upload_archive", map[string]any{"sandbox_claim_name": "mine", "path": "proj",
			"content": base64.StdEncoding.EncodeToString(good)})
		var up UploadArchiveResult
		decode(t, res.StructuredContent, &up)
		if res.IsError || up.Entries != 3 || up.Bytes != len(good) || len(h.conn.files) != 1 {
			t.Fatalf("%+v (%s), files %d", up, text(res), len(h.conn.files))
		}
	})
}
