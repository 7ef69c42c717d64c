package workspace_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/workspace"
)

// entry is one member of a test archive; an empty typ is a regular file holding body.
type entry struct {
	name, body, link string
	typ              byte
	size             int64 // declared size when not len(body)
}

func tarOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.typ, Linkname: e.link, Size: int64(len(e.body))}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipOf(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// bigHeader is a tar whose one file declares size bytes, without them: CheckArchive must
// refuse it on the header alone.
func bigHeader(t *testing.T, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "big", Mode: 0o644, Typeflag: tar.TypeReg, Size: size}); err != nil {
		t.Fatal(err)
	}
	_ = tw.Flush() // fails: the body is missing, which is the point
	return buf.Bytes()
}

func TestCheckArchive(t *testing.T) {
	good := tarOf(t, entry{name: "src/", typ: tar.TypeDir}, entry{name: "src/main.go", body: "package main\n"}, entry{name: "README", body: "hi\n"})
	corrupt := bytes.Clone(good)
	corrupt[512+148] ^= 0xff // the checksum of the second header (the directory's is the first block)
	zeros := tarOf(t, entry{name: "zeros", body: strings.Repeat("\x00", 4096)})
	tests := []struct {
		name    string
		data    []byte
		limit   int64
		entries int
		want    error
		msg     string // in the error
	}{
		{name: "tar", data: good, entries: 3},
		{name: "tar.gz", data: gzipOf(t, good), entries: 3},
		{name: "tar.gz of a file ending in zeros", data: gzipOf(t, zeros), entries: 1},
		{name: "symbolic link, then a file beside it", data: tarOf(t, entry{name: "l", typ: tar.TypeSymlink, link: "/etc"}, entry{name: "f", body: "x"}), entries: 2},
		{name: "symbolic link replaced by a directory", data: tarOf(t, entry{name: "l", typ: tar.TypeSymlink, link: "/etc"}, entry{name: "l", typ: tar.TypeDir}, entry{name: "l/f", body: "x"}), entries: 3},
		{name: "truncated gzip", data: gzipOf(t, good)[:len(gzipOf(t, good))/2], want: workspace.ErrBadArchive, msg: "truncated"},
		{name: "gzip without its trailer", data: gzipOf(t, good)[:len(gzipOf(t, good))-8], want: workspace.ErrBadArchive, msg: "after 3 entries"},
		{name: "gzip with a wrong checksum", data: func() []byte { b := gzipOf(t, good); b[len(b)-8] ^= 1; return b }(), want: workspace.ErrBadArchive, msg: "corrupt after 3 entries"},
		{name: "tar cut inside an entry", data: good[:1024+5], want: workspace.ErrBadArchive, msg: "truncated after 1 entries"},
		{name: "tar cut at an entry's end", data: good[:1536], want: workspace.ErrBadArchive, msg: "truncated after 2 entries"},
		{name: "empty tar", data: tarOf(t), want: workspace.ErrEmptyArchive},
		{name: "empty tar.gz", data: gzipOf(t, tarOf(t)), want: workspace.ErrEmptyArchive},
		{name: "not an archive", data: []byte("not a tar"), want: workspace.ErrBadArchive, msg: "not a tar archive"},
		{name: "not an archive, long", data: bytes.Repeat([]byte("x"), 2048), want: workspace.ErrBadArchive, msg: "not a tar archive"},
		{name: "broken gzip header", data: []byte{0x1f, 0x8b, 0}, want: workspace.ErrBadArchive, msg: "gzip header"},
		{name: "corrupt second header", data: corrupt, want: workspace.ErrBadArchive, msg: "entry 2 has a corrupt header"},
		{name: "escaping last entry", data: tarOf(t, entry{name: "a", body: "1"}, entry{name: "../evil", body: "2"}), want: workspace.ErrUnsafeEntry, msg: `entry 2 "../evil"`},
		{name: "escaping inner entry", data: tarOf(t, entry{name: "a/../../evil", body: "2"}), want: workspace.ErrUnsafeEntry},
		{name: "hard link out", data: tarOf(t, entry{name: "h", typ: tar.TypeLink, link: "../../etc/passwd"}), want: workspace.ErrUnsafeEntry, msg: "hard link"},
		{name: "through an archived symbolic link", data: tarOf(t, entry{name: "l", typ: tar.TypeSymlink, link: "/etc"}, entry{name: "./l/passwd", body: "x"}), want: workspace.ErrUnsafeEntry, msg: `symbolic link "l"`},
		{name: "hard link through an archived symbolic link", data: tarOf(t, entry{name: "l", typ: tar.TypeSymlink, link: "/etc"}, entry{name: "h", typ: tar.TypeLink, link: "l/passwd"}), want: workspace.ErrUnsafeEntry},
		{name: "bomb by declared size", data: gzipOf(t, bigHeader(t, 1<<40)), limit: 1 << 20, want: workspace.ErrArchiveExpand, msg: "1048576 bytes"},
		{name: "bomb over the default bound", data: gzipOf(t, bigHeader(t, workspace.DefaultMaxExpandedBytes+1)), want: workspace.ErrArchiveExpand, msg: "1073741824 bytes"},
		{name: "bomb by stream", data: gzipOf(t, tarOf(t, entry{name: "a/", typ: tar.TypeDir}, entry{name: "b/", typ: tar.TypeDir}, entry{name: "c/", typ: tar.TypeDir})), limit: 1024, want: workspace.ErrArchiveExpand},
		{name: "bomb of trailing zeros", data: gzipOf(t, append(bytes.Clone(good), make([]byte, 1<<16)...)), limit: 1 << 15, want: workspace.ErrArchiveExpand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := workspace.CheckArchive(tc.data, tc.limit)
			if tc.want == nil {
				if err != nil || n != tc.entries {
					t.Fatalf("got %d entries, %v; want %d", n, err, tc.entries)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v; want %v containing %q", err, tc.want, tc.msg)
			}
		})
	}
}
