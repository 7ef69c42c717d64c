package conntest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/workspace"
)

// The file tools' scripts must behave alike on every strategy: confinement to the working
// directory, exact edits, and searches, all in the sandbox.
var workspaceCases = []struct {
	name string
	fn   func(*testing.T, NewConn)
}{
	{"WorkspaceReadLines", testReadLines},
	{"WorkspaceEdit", testEdit},
	{"WorkspaceSearch", testSearch},
	{"WorkspaceMkdirMoveRemove", testMkdirMoveRemove},
	{"WorkspaceDirectorySwappedForLink", testSwappedForLink},
	{"WorkspaceConcurrentEdits", testConcurrentEdits},
	{"WorkspaceMoveNoOverwriteClaimed", testMoveNoOverwriteClaimed},
	{"WorkspaceConcurrentMovesNoOverwrite", testConcurrentMoves},
	{"WorkspaceArchives", testArchives},
	{"WorkspaceArchivesAtomic", testArchivesAtomic},
}

func testReadLines(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	fs := workspace.FS{Exec: e.c}
	e.mustSh(`seq 1 10 > ten.txt; printf 'short\n%s\nend' "$(head -c 300 /dev/zero | tr '\0' x)" > long.txt; printf 'a\0b' > bin.dat; mkdir d; printf 'a\r\nb\r\n' > crlf.txt`)
	if r, err := fs.ReadLines(e.ctx(), e.tg, "crlf.txt", 1, 10, 100, 1000); err != nil || len(r.Lines) != 2 || r.Lines[0].Text != "a\r" {
		t.Fatalf("CRLF lines keep their CR: %+v, %v", r, err)
	}
	r, err := fs.ReadLines(e.ctx(), e.tg, "ten.txt", 3, 4, 1000, 1<<20)
	if err != nil || r.Total != 10 || r.Next != 7 || len(r.Lines) != 4 || r.Lines[0] != (workspace.Line{N: 3, Text: "3"}) || r.Lines[3].Text != "6" {
		t.Fatalf("lines 3-6 of ten: %+v, %v", r, err)
	}
	if r, err = fs.ReadLines(e.ctx(), e.tg, "/ten.txt", 9, 100, 1000, 1<<20); err != nil || r.Next != 0 || len(r.Lines) != 2 {
		t.Fatalf("the end of ten (leading /): %+v, %v", r, err)
	}
	r, err = fs.ReadLines(e.ctx(), e.tg, "long.txt", 1, 10, 100, 1<<20)
	if err != nil || r.Total != 3 || r.Lines[1].Cut != 200 || len(r.Lines[1].Text) != 100 || r.Lines[2].Text != "end" {
		t.Fatalf("long line: %+v, %v", r, err)
	}
	if r, err = fs.ReadLines(e.ctx(), e.tg, "ten.txt", 1, 10, 1000, 6); err != nil || len(r.Lines) != 3 || r.Next != 4 {
		t.Fatalf("byte cap of 6: %+v, %v", r, err)
	}
	for path, want := range map[string]error{"bin.dat": workspace.ErrBinary, "d": conn.ErrIsDir, "none.txt": conn.ErrNotFound, "../../etc/passwd": conn.ErrDenied} {
		if _, err := fs.ReadLines(e.ctx(), e.tg, path, 1, 10, 100, 1000); !errors.Is(err, want) {
			t.Errorf("read %s: %v, want %v", path, err, want)
		}
	}
}

func testEdit(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	fs := workspace.FS{Exec: e.c}
	e.mustSh(`printf 'one\ntwo\nthree\ntwo\nfive\n' > f.txt; chmod 640 f.txt`)
	ed, err := fs.EditFile(e.ctx(), e.tg, "f.txt", "three\n", "THREE\nand a half\n", false, 1)
	if err != nil || ed.Replacements != 1 || !slices.Equal(ed.Lines, []int{3}) || ed.TotalLines != 6 ||
		len(ed.Snippets) != 1 || ed.Snippets[0].First != 2 || !slices.Equal(ed.Snippets[0].Lines, []string{"two", "THREE", "and a half", "two"}) {
		t.Fatalf("unique edit: %+v, %v", ed, err)
	}
	var me *workspace.MatchError
	if _, err = fs.EditFile(e.ctx(), e.tg, "f.txt", "two", "2", false, 1); !errors.As(err, &me) || me.Count != 2 || !slices.Equal(me.Lines, []int{2, 5}) {
		t.Fatalf("ambiguous edit: %v (%+v)", err, me)
	}
	if _, err = fs.EditFile(e.ctx(), e.tg, "f.txt", "five\nsix", "x", false, 1); !errors.As(err, &me) || !errors.Is(err, workspace.ErrNoMatch) || !slices.Equal(me.Lines, []int{6}) {
		t.Fatalf("no match: %v (%+v)", err, me)
	}
	if ed, err = fs.EditFile(e.ctx(), e.tg, "f.txt", "two", "2", true, 0); err != nil || ed.Replacements != 2 {
		t.Fatalf("replace all: %+v, %v", ed, err)
	}
	if got := e.mustSh("cat f.txt; stat -c %a f.txt; ls -a | grep -c edit- || true"); got != "one\n2\nTHREE\nand a half\n2\nfive\n640\n0\n" {
		t.Fatalf("after the edits (content, mode, no temporary file left): %q", got)
	}
	e.mustSh("ln -s / root")
	if _, err = fs.EditFile(e.ctx(), e.tg, "root/etc/hostname", "a", "b", false, 0); !errors.Is(err, conn.ErrDenied) {
		t.Fatalf("edit through a link out: %v", err)
	}
}

// pathExec adds PATH to every request, so a test can put its own programs before the
// sandbox's.
type pathExec struct {
	c    conn.Conn
	path string
}

func (x pathExec) Exec(ctx context.Context, t conn.Target, req conn.ExecRequest) (conn.ExecResult, error) {
	req.Env = map[string]string{"PATH": x.path}
	return x.c.Exec(ctx, t, req)
}

// outsideDir makes a directory outside the working directory (removed after the test),
// where nothing a file tool does may land.
func (e env) outsideDir() string {
	e.t.Helper()
	dir := strings.TrimSpace(e.mustSh("mktemp -d"))
	e.t.Cleanup(func() {
		// t.Context() is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		var sink bytes.Buffer
		_, _ = e.c.Exec(ctx, e.tg, conn.ExecRequest{Argv: []string{"rm", "-rf", "--", dir}, Stdout: &sink, Stderr: &sink})
	})
	return dir
}

func testSearch(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	fs := workspace.FS{Exec: e.c}
	e.mustSh(`mkdir -p src/a .git; printf 'func main() {}\nfunc helper() {}\n' > src/a/m.go; printf 'func x\n' > src/n.txt; printf 'func git\n' > .git/c.go`)
	f, err := fs.Search(e.ctx(), e.tg, "src", `^func [a-z]+\(`, "*.go", 10, 200, false)
	if err != nil || f.Total != 2 || !slices.Equal(f.Results, []string{"src/a/m.go:1:func main() {}", "src/a/m.go:2:func helper() {}"}) {
		t.Fatalf("regex with glob: %+v, %v", f, err)
	}
	if f, err = fs.Search(e.ctx(), e.tg, ".", "FUNC", "", 1, 200, true); err != nil || f.Total != 3 || len(f.Results) != 1 {
		t.Fatalf("capped, ignoring case, .git skipped: %+v, %v", f, err)
	}
	if f, err = fs.Search(e.ctx(), e.tg, ".", "helper", "a/*.go", 10, 200, false); err != nil || !slices.Equal(f.Results, []string{"src/a/m.go:2:func helper() {}"}) {
		t.Fatalf("regex with a glob holding a slash: %+v, %v", f, err)
	}
	if f, err = fs.Search(e.ctx(), e.tg, ".", "", "*.go", 10, 200, false); err != nil || !slices.Equal(f.Results, []string{"src/a/m.go"}) {
		t.Fatalf("files by glob: %+v, %v", f, err)
	}
	if _, err = fs.Search(e.ctx(), e.tg, ".", "a(b", "", 10, 200, false); !errors.Is(err, workspace.ErrBadRegex) || !strings.Contains(err.Error(), "(") {
		t.Fatalf("bad regex: %v", err)
	}
}

func testMkdirMoveRemove(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	fs := workspace.FS{Exec: e.c}
	ctx := e.ctx()
	if err := fs.MakeDir(ctx, e.tg, "a/b/c"); err != nil {
		t.Fatal(err)
	}
	e.mustSh("echo hi > a/f; echo other > g; ln -s / root")
	if err := fs.Move(ctx, e.tg, "a/f", "x/y/f2", false); err != nil {
		t.Fatal(err)
	}
	if err := fs.Move(ctx, e.tg, "g", "x/y/f2", false); !errors.Is(err, workspace.ErrExists) {
		t.Fatalf("move onto a file: %v", err)
	}
	if err := fs.Move(ctx, e.tg, "g", "x/y/f2", true); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(ctx, e.tg, "a", false); !errors.Is(err, workspace.ErrNotEmpty) {
		t.Fatalf("remove a full directory: %v", err)
	}
	if err := fs.Remove(ctx, e.tg, "a", true); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(ctx, e.tg, "root", false); err != nil { // the link, not /
		t.Fatal(err)
	}
	if got := e.mustSh("ls; cat x/y/f2"); got != "x\nother\n" {
		t.Fatalf("after mkdir, moves and removes: %q", got)
	}
	for name, err := range map[string]error{
		"remove the working directory": fs.Remove(ctx, e.tg, ".", true),
		"mkdir outside":                fs.MakeDir(ctx, e.tg, "../outside"),
		"move out":                     fs.Move(ctx, e.tg, "x", "../../x", false),
	} {
		if !errors.Is(err, conn.ErrDenied) {
			t.Errorf("%s: %v, want ErrDenied", name, err)
		}
	}
	if err := fs.Remove(ctx, e.tg, "nothing", false); !errors.Is(err, conn.ErrNotFound) {
		t.Errorf("remove a missing path: %v", err)
	}
}

func testArchives(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	fs := workspace.FS{Exec: e.c}
	ctx := e.ctx()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range map[string]string{"src/main.go": "package main\n", "README": "hi\n"} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))})
		_, _ = tw.Write([]byte(body))
	}
	_ = tw.Close()
	_ = zw.Close()
	tmp, err := workspace.TempName()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Upload(ctx, e.tg, tmp, &buf); err != nil {
		t.Fatal(err)
	}
	if n, err := fs.Unpack(ctx, e.tg, tmp, "proj"); err != nil || n != 2 {
		t.Fatalf("unpack: %d entries, %v", n, err)
	}
	if got := e.mustSh("cat proj/src/main.go proj/README; ls -A | grep -c k8s-sandbox-mcp-archive || true"); got != "package main\nhi\n0\n" {
		t.Fatalf("unpacked tree (and the archive gone): %q", got)
	}
	out, err := workspace.TempName()
	if err != nil {
		t.Fatal(err)
	}
	size, err := fs.Pack(ctx, e.tg, "proj", out)
	if err != nil || size == 0 {
		t.Fatalf("pack: %d, %v", size, err)
	}
	data, err := e.downloadMax(out, 1<<20)
	fs.RemoveTemp(ctx, e.tg, out)
	if err != nil || int64(len(data)) != size {
		t.Fatalf("download the archive: %d bytes, %v", len(data), err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
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
			files[h.Name] = string(b)
		}
	}
	if files["./src/main.go"] != "package main\n" || files["./README"] != "hi\n" || len(files) != 2 {
		t.Fatalf("packed files: %v", files)
	}
	if _, err := e.c.Upload(ctx, e.tg, tmp, strings.NewReader("not a tar")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Unpack(ctx, e.tg, tmp, "bad"); !errors.Is(err, workspace.ErrBadArchive) {
		t.Fatalf("unpack garbage: %v", err)
	}
	if _, err := fs.Pack(ctx, e.tg, "proj/README", out); !errors.Is(err, conn.ErrNotDir) {
		t.Fatalf("pack a file: %v", err)
	}
}

// archiveOf is a tar of the entries (a name ending in / is a directory, its body its octal
// mode if not 755), gzip-compressed with zip.
func archiveOf(t *testing.T, zip bool, entries ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.Writer = &buf
	zw := gzip.NewWriter(&buf)
	if zip {
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{Name: e[0], Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e[1]))}
		if strings.HasSuffix(e[0], "/") {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
			if e[1] != "" {
				mode, err := strconv.ParseInt(e[1], 8, 32)
				if err != nil {
					t.Fatal(err)
				}
				h.Mode = mode
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if _, err := tw.Write([]byte(e[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zip {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// testArchivesAtomic: Unpack on its own (without the tools' CheckArchive) either unpacks the
// whole archive or leaves the working directory as it was, archive and partial directory
// gone, whatever the sandbox's tar refuses and wherever it stops.
func testArchivesAtomic(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	fs := workspace.FS{Exec: e.c}
	e.mustSh("mkdir -p proj/keep && echo old > proj/keep/f && echo old > proj/README")
	const snapshot = "find . | LC_ALL=C sort; cat proj/README proj/keep/f"
	before := e.mustSh(snapshot)
	good := archiveOf(t, true, [2]string{"README", "new\n"}, [2]string{"new.txt", "n\n"}, [2]string{"sub/", ""}, [2]string{"sub/x", "x\n"})
	unpack := func(data []byte, dir string) error {
		t.Helper()
		tmp, err := workspace.TempName()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.Upload(e.ctx(), e.tg, tmp, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		_, err = fs.Unpack(e.ctx(), e.tg, tmp, dir)
		return err
	}
	for _, tc := range []struct {
		name string
		data []byte
		dir  string
		want error // nil: any error
	}{
		{"truncated gzip into an existing directory", good[:len(good)/2], "proj", workspace.ErrBadArchive},
		{"truncated gzip into a new directory", good[:len(good)/2], "fresh", workspace.ErrBadArchive},
		{"empty tar", archiveOf(t, false), "fresh", workspace.ErrEmptyArchive},
		{"empty tar.gz into the working directory", archiveOf(t, true), ".", workspace.ErrEmptyArchive},
		{"escaping last entry into an existing directory", archiveOf(t, true, [2]string{"README", "new\n"}, [2]string{"new.txt", "n\n"}, [2]string{"../evil", "e\n"}), "proj", nil},
		{"escaping last entry into a new directory", archiveOf(t, false, [2]string{"a", "a\n"}, [2]string{"../evil", "e\n"}), "fresh/deep", nil},
		{"escaping last entry into the working directory", archiveOf(t, false, [2]string{"a", "a\n"}, [2]string{"../evil", "e\n"}), ".", nil},
		{"read-only directory, then an escaping entry", archiveOf(t, false, [2]string{"ro/", "555"}, [2]string{"ro/f", "f\n"}, [2]string{"../evil", "e\n"}), "proj", nil},
		{"a file over a directory holding files", archiveOf(t, false, [2]string{"new.txt", "n\n"}, [2]string{"keep", "k\n"}), "proj", workspace.ErrDirInTheWay},
	} {
		err := unpack(tc.data, tc.dir)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if got := e.mustSh(snapshot); got != before {
			t.Fatalf("%s left something behind (or changed what was there):\n%s\nwas:\n%s", tc.name, got, before)
		}
	}
	if err := unpack(good, "proj"); err != nil {
		t.Fatal(err)
	}
	if got := e.mustSh("cd proj && find . | LC_ALL=C sort && cat README keep/f sub/x; ls -A .. | grep -c k8s-sandbox-mcp || true"); got !=
		".\n./README\n./keep\n./keep/f\n./new.txt\n./sub\n./sub/x\nnew\nold\nx\n0\n" {
		t.Fatalf("merged into an existing directory (its other files kept, no partial directory left): %q", got)
	}
	readOnly := archiveOf(t, false, [2]string{"ro/", "555"}, [2]string{"ro/f", "f\n"}, [2]string{"ro/g/", "500"}, [2]string{"ro/g/h", "h\n"})
	for _, dir := range []string{"proj", "fresh"} {
		if err := unpack(readOnly, dir); err != nil {
			t.Fatalf("read-only directories into %s: %v", dir, err)
		}
		if got := e.mustSh("stat -c %a " + dir + "/ro " + dir + "/ro/g; cat " + dir + "/ro/g/h"); got != "555\n500\nh\n" {
			t.Fatalf("read-only directories into %s keep their modes: %q", dir, got)
		}
		e.mustSh("chmod -R u+w " + dir + "/ro && rm -r " + dir + "/ro")
	}
	if err := unpack(archiveOf(t, false, [2]string{"top.txt", "t\n"}), "."); err != nil {
		t.Fatal(err)
	}
	if err := unpack(good, "a/b/c"); err != nil {
		t.Fatal(err)
	}
	if got := e.mustSh("cat top.txt a/b/c/sub/x; find . -name '*k8s-sandbox-mcp*' | wc -l"); got != "t\nx\n0\n" {
		t.Fatalf("unpacked into the working directory and a new nested one: %q", got)
	}
}
