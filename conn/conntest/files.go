package conntest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

func binaryData(n int) []byte {
	b := make([]byte, 0, n+256)
	for i := range 256 {
		b = append(b, byte(i))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		b = append(b, byte(r.UintN(256)))
	}
	return b
}

func (e env) upload(path string, data []byte) {
	e.t.Helper()
	n, err := e.c.Upload(e.ctx(), e.tg, path, bytes.NewReader(data))
	if err != nil || n != int64(len(data)) {
		e.t.Fatalf("Upload(%q): %d of %d bytes, %v", path, n, len(data), err)
	}
}

func (e env) download(path string) []byte {
	e.t.Helper()
	data, err := e.downloadMax(path, 1<<20)
	if err != nil {
		e.t.Fatalf("Download(%q): %v", path, err)
	}
	return data
}

// downloadMax downloads into a buffer, checking the count Download returns against it.
func (e env) downloadMax(path string, maxBytes int64) ([]byte, error) {
	e.t.Helper()
	var buf bytes.Buffer
	n, err := e.c.Download(e.ctx(), e.tg, path, &buf, maxBytes)
	if n != int64(buf.Len()) || n > maxBytes {
		e.t.Errorf("Download(%q): returned %d bytes, wrote %d, the limit is %d", path, n, buf.Len(), maxBytes)
	}
	return buf.Bytes(), err
}

func (e env) exists(path string) bool {
	e.t.Helper()
	ok, err := e.c.Exists(e.ctx(), e.tg, path)
	if err != nil {
		e.t.Fatalf("Exists(%q): %v", path, err)
	}
	return ok
}

func testRoundTrip(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	data := binaryData(100_000)
	for _, p := range []string{"top.bin", "new/parent/dirs/data.bin", "/abs-looking.bin"} {
		e.upload(p, data)
		if got := e.download(p); !bytes.Equal(got, data) {
			t.Fatalf("%q: downloaded %d bytes differ from the %d uploaded", p, len(got), len(data))
		}
	}
	// The command side sees the same files: shared working directory.
	if out := e.mustSh("wc -c < new/parent/dirs/data.bin"); out != fmt.Sprintf("%d\n", len(data)) && out != fmt.Sprintf("%7d\n", len(data)) {
		t.Fatalf("wc -c: %q, want %d", out, len(data))
	}
}

func testEmptyAndOverwrite(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	e.upload("empty.txt", []byte{})
	// Of unknown length (sent chunked), and nil: an empty file all the same.
	for _, r := range []io.Reader{io.MultiReader(), nil} {
		if n, err := e.c.Upload(e.ctx(), e.tg, "empty2.txt", r); err != nil || n != 0 {
			t.Fatalf("Upload(%T): %d, %v", r, n, err)
		}
		if got := e.download("empty2.txt"); len(got) != 0 {
			t.Fatalf("empty file from %T downloaded as %q", r, got)
		}
	}
	if got := e.download("empty.txt"); len(got) != 0 {
		t.Fatalf("empty file downloaded as %q", got)
	}
	e.upload("f.txt", []byte("a long first version"))
	e.upload("f.txt", []byte("short"))
	if got := e.download("f.txt"); string(got) != "short" {
		t.Fatalf("after overwrite got %q, want %q", got, "short")
	}
}

func testTrickyNames(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	const dir, name = "sp ace+dir", "we ird %41 #?&=,;@ 名前 'q'.txt"
	p := dir + "/" + name
	e.upload(p, []byte("tricky"))
	if got := e.download(p); string(got) != "tricky" {
		t.Fatalf("got %q", got)
	}
	if !e.exists(p) || e.exists(dir+"/we ird A #?&=,;@ 名前 'q'.txt") {
		t.Fatalf("Exists must match the exact name (no double decoding of %%41)")
	}
	l, err := e.c.List(e.ctx(), e.tg, dir, 10)
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Name != name {
		t.Fatalf("List: %+v, %v; want one entry %q", l, err, name)
	}
	if out := e.mustSh("cat 'sp ace+dir/we ird %41 #?&=,;@ 名前 '\\''q'\\''.txt'"); out != "tricky" {
		t.Fatalf("cat: %q", out)
	}
}

func testBadUploadPaths(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	for _, p := range []string{"", "../escape.txt", "a/../../escape.txt", "bad\x00name", "ctl\nname", "dir/"} {
		if _, err := e.c.Upload(e.ctx(), e.tg, p, strings.NewReader("x")); err == nil {
			t.Errorf("Upload(%q) succeeded, want an error", p)
		}
	}
}

func testDownloadErrors(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	if _, err := e.downloadMax("missing.txt", 1<<20); !errors.Is(err, conn.ErrNotFound) {
		t.Errorf("missing file: got %v, want ErrNotFound", err)
	}
	e.mustSh("mkdir -p adir")
	if _, err := e.downloadMax("adir", 1<<20); !errors.Is(err, conn.ErrIsDir) {
		t.Errorf("directory: got %v, want ErrIsDir", err)
	}
	e.upload("big.bin", binaryData(1000))
	if _, err := e.downloadMax("big.bin", 100); !errors.Is(err, conn.ErrTooLarge) {
		t.Errorf("1256 bytes with a 100-byte limit: got %v, want ErrTooLarge", err)
	}
	if got, err := e.downloadMax("big.bin", 1256); err != nil || len(got) != 1256 {
		t.Errorf("exactly at the limit: %d bytes, %v", len(got), err)
	}
}

func testList(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	const files = 25
	e.mustSh(fmt.Sprintf("mkdir -p many/sub && for i in $(seq 1 %d); do head -c $i /dev/zero > many/f$i; done", files))
	before := time.Now()

	capped, err := e.c.List(e.ctx(), e.tg, "many", 10)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(capped.Entries) != 10 || capped.Total != files+1 {
		t.Fatalf("capped: %d entries, total %d; want 10 of %d", len(capped.Entries), capped.Total, files+1)
	}
	full, err := e.c.List(e.ctx(), e.tg, "many/", 1000)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var names []string
	for _, en := range full.Entries {
		names = append(names, en.Name)
		wantType, wantSize := "file", int64(0)
		if en.Name == "sub" {
			wantType = "directory"
		} else if _, err := fmt.Sscanf(en.Name, "f%d", &wantSize); err != nil {
			t.Errorf("unexpected entry %+v", en)
		}
		if en.Type != wantType || (wantType == "file" && en.Size != wantSize) {
			t.Errorf("entry %+v: want type %s size %d", en, wantType, wantSize)
		}
		if age := float64(before.Unix()) - en.ModTime; math.Abs(age) > 3600 {
			t.Errorf("entry %s: mod_time %f is %f s away from now", en.Name, en.ModTime, age)
		}
	}
	want := []string{"sub"}
	for i := 1; i <= files; i++ {
		want = append(want, fmt.Sprintf("f%d", i))
	}
	sort.Strings(names)
	sort.Strings(want)
	if !slices.Equal(names, want) || full.Total != files+1 {
		t.Fatalf("names %v (total %d), want %v", names, full.Total, want)
	}

	e.upload("rootfile.txt", []byte("r"))
	root, err := e.c.List(e.ctx(), e.tg, "", 1000)
	if err != nil || !slices.ContainsFunc(root.Entries, func(en conn.Entry) bool { return en.Name == "rootfile.txt" }) {
		t.Fatalf("List(\"\") = %+v, %v; want the working directory including rootfile.txt", root, err)
	}
	empty, err := e.c.List(e.ctx(), e.tg, "many/sub", 10)
	if err != nil || len(empty.Entries) != 0 || empty.Total != 0 || empty.Entries == nil {
		t.Fatalf("empty dir: %+v, %v; want a non-nil empty listing", empty, err)
	}
}

func testListErrors(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	if _, err := e.c.List(e.ctx(), e.tg, "nope", 10); !errors.Is(err, conn.ErrNotFound) {
		t.Errorf("missing dir: got %v, want ErrNotFound", err)
	}
	e.upload("plain.txt", []byte("x"))
	if _, err := e.c.List(e.ctx(), e.tg, "plain.txt", 10); !errors.Is(err, conn.ErrNotDir) {
		t.Errorf("file: got %v, want ErrNotDir", err)
	}
}

func testExists(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	e.upload("d/file.txt", []byte("x"))
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"d/file.txt", true},
		{"d", true},
		{"d/", true},
		{"missing", false},
		{"d/missing/deeper.txt", false},
	} {
		if got := e.exists(tc.path); got != tc.want {
			t.Errorf("Exists(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

// testPathsAbove: a path climbing out of the working directory gets the confinement error
// from Download, List and Exists alike (not a 403 here and a redirect there), and "." or a
// path that climbs back to it is the working directory.
func testPathsAbove(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	e.upload("sub/f.txt", []byte("x"))
	for _, p := range []string{"..", "../", "/..", "../x", "/../x", "a/../../b", "sub/../.."} {
		_, errD := e.downloadMax(p, 1<<20)
		_, errL := e.c.List(e.ctx(), e.tg, p, 10)
		_, errE := e.c.Exists(e.ctx(), e.tg, p)
		for op, err := range map[string]error{"Download": errD, "List": errL, "Exists": errE} {
			if !errors.Is(err, conn.ErrDenied) || !strings.Contains(err.Error(), "leaves the sandbox's working directory") {
				t.Errorf("%s(%q): %v, want ErrDenied: it leaves the sandbox's working directory", op, p, err)
			}
		}
	}
	for _, p := range []string{".", "./", "/.", "sub/..", "/"} {
		l, err := e.c.List(e.ctx(), e.tg, p, 10)
		if err != nil || !slices.ContainsFunc(l.Entries, func(en conn.Entry) bool { return en.Name == "sub" }) {
			t.Errorf("List(%q) = %+v, %v; want the working directory", p, l, err)
		}
		if ok, err := e.c.Exists(e.ctx(), e.tg, p); err != nil || !ok {
			t.Errorf("Exists(%q) = %v, %v; want true", p, ok, err)
		}
	}
}

// testListDanglingLink: a link that leads nowhere does not fail its directory's listing
// (the python runtime's /list answers 500 for it); where it is listed, it is a "symlink".
func testListDanglingLink(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	e.mustSh("mkdir d && echo x > d/f && ln -s missing d/dangling")
	l, err := e.c.List(e.ctx(), e.tg, "d", 100)
	if err != nil {
		t.Fatalf("List of a directory holding a dangling link: %v", err)
	}
	found := false
	for _, en := range l.Entries {
		switch en.Name {
		case "f":
			found = en.Type == "file" && en.Size == 2
		case "dangling":
			if en.Type != "symlink" {
				t.Errorf("the dangling link listed as %+v, want type symlink", en)
			}
		default:
			t.Errorf("unexpected entry %+v", en)
		}
	}
	if !found {
		t.Errorf("f missing from %+v", l)
	}
}
