package conn

import (
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestEscapePath(t *testing.T) {
	for in, want := range map[string]string{
		"":                "",
		"a/b c.txt":       "a%2Fb%20c.txt",
		"/abs//x/./y":     "%2Fabs%2F%2Fx%2F.%2Fy",
		"Az09-_.~":        "Az09-_.~",
		"%41#?&+":         "%2541%23%3F%26%2B",
		"名":               "%E5%90%8D",
		"..":              "..",
		"a\x00\n\x7f\xff": "a%00%0A%7F%FF",
	} {
		if got := escapePath(in); got != want {
			t.Errorf("escapePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUploadPath(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"f.txt", "f.txt", ""},
		{"/tmp/x", "tmp/x", ""},
		{"a//b/./c", "a/b/c", ""},
		{"./x", "x", ""},
		{"", "", "empty"},
		{"/", "", "ends with '/'"},
		{".", "", "root directory"},
		{"dir/", "", "ends with '/'"},
		{"../x", "", "'..'"},
		{"a/../../x", "", "'..'"},
		{"a/../b", "", "'..'"},
		{"x\x00y", "", "control character"},
		{"x\ty", "", "control character"},
		{"x\x7f", "", "control character"},
	} {
		got, err := uploadPath(tc.in)
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("uploadPath(%q) = %q, %v; want %q, error containing %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestSelectPodIP(t *testing.T) {
	for _, tc := range []struct {
		ips  []string
		want string
	}{
		{nil, ""},
		{[]string{"", "junk"}, ""},
		{[]string{"fd00::1", "10.0.0.2"}, "10.0.0.2"},
		{[]string{"::ffff:10.1.2.3", "10.0.0.2"}, "10.1.2.3"},
		{[]string{"fd00::1", "fd00::2"}, "fd00::1"},
		{[]string{" 10.0.0.5 "}, "10.0.0.5"},
	} {
		if got := selectPodIP(tc.ips); got != tc.want {
			t.Errorf("selectPodIP(%q) = %q, want %q", tc.ips, got, tc.want)
		}
	}
	if got := hostPort("fd00::1", 8888); got != "[fd00::1]:8888" {
		t.Errorf("hostPort IPv6 = %q", got)
	}
}

func TestGatewayBase(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1":        "http://10.0.0.1",
		"fd00::1":         "http://[fd00::1]",
		"gw.example.com":  "http://gw.example.com",
		"10.0.0.1:8080":   "http://10.0.0.1:8080",
		"[fd00::1]:8080":  "http://[fd00::1]:8080",
		"::ffff:10.0.0.1": "http://[::ffff:10.0.0.1]",
	} {
		if got := gatewayBase(in); got != want {
			t.Errorf("gatewayBase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJoinURL(t *testing.T) {
	for _, tc := range []struct{ base, path, want string }{
		{"http://r:8080", "/execute", "http://r:8080/execute"},
		{"http://r:8080/", "/execute", "http://r:8080/execute"},
		{"http://r/prefix/", "/list/a%2Fb", "http://r/prefix/list/a%2Fb"},
		{"http://r/prefix", "execute", "http://r/prefix/execute"},
	} {
		if got := joinURL(tc.base, tc.path); got != tc.want {
			t.Errorf("joinURL(%q, %q) = %q, want %q", tc.base, tc.path, got, tc.want)
		}
	}
}

func TestDownloadLimit(t *testing.T) {
	for _, tc := range []struct{ call, configured, want int64 }{
		{0, 0, DefaultMaxDownloadBytes},
		{100, 0, 100},
		{0, 50, 50},
		{100, 50, 100}, // a download streams: the caller's bound is the one, larger or not
		{10, 50, 10},
	} {
		if got := downloadLimit(tc.call, tc.configured); got != tc.want {
			t.Errorf("downloadLimit(%d, %d) = %d, want %d", tc.call, tc.configured, got, tc.want)
		}
	}
}

// streamBody writes a listing of n entries into a pipe as it is read, so the test itself
// never holds the whole body either.
func streamBody(n int, sandboxd bool) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		if sandboxd {
			fmt.Fprint(pw, `{"path":"/big","entries":[`)
		} else {
			fmt.Fprint(pw, `[`)
		}
		for i := range n {
			if i > 0 {
				fmt.Fprint(pw, ",")
			}
			if sandboxd {
				fmt.Fprintf(pw, `{"name":"f%d","size":%d,"type":"file","modified_at":"2026-01-02T03:04:05Z","mode":"0644"}`, i, i)
			} else {
				fmt.Fprintf(pw, `{"name":"f%d","size":%d,"type":"file","mod_time":1767323045.25}`, i, i)
			}
		}
		if sandboxd {
			fmt.Fprint(pw, `],"extra":{"ignored":[1,2]}}`)
		} else {
			fmt.Fprint(pw, `]`)
		}
		pw.Close()
	}()
	return pr
}

func TestListingDecodersStream(t *testing.T) {
	const n = 100_000
	for name, decode := range map[string]func() (Listing, error){
		"runtime":  func() (Listing, error) { return decodeRuntimeListing("list", streamBody(n, false), 10) },
		"sandboxd": func() (Listing, error) { return decodeSandboxdListing("list", streamBody(n, true), 10) },
	} {
		l, err := decode()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if l.Total != n || len(l.Entries) != 10 || cap(l.Entries) > 16 {
			t.Fatalf("%s: total %d, %d entries (cap %d); want %d counted, 10 kept", name, l.Total, len(l.Entries), cap(l.Entries), n)
		}
		want := Entry{Name: "f3", Size: 3, Type: "file", ModTime: 1767323045.25}
		if name == "sandboxd" {
			want.ModTime = 1767323045 // 2026-01-02T03:04:05Z
		}
		if l.Entries[3] != want {
			t.Fatalf("%s: entry 3 = %+v, want %+v", name, l.Entries[3], want)
		}
	}
}

func TestListingDecodersEdgeCases(t *testing.T) {
	l, err := decodeSandboxdListing("list", strings.NewReader(`{"entries":[`+
		`{"name":"l","type":"symlink"},{"name":"d","type":"directory","modified_at":"bad"},{"name":"f","type":"file","size":2}]}`), 5)
	if err != nil || l.Total != 2 || l.Entries[0].Name != "d" || l.Entries[0].ModTime != 0 || l.Entries[1].Size != 2 {
		t.Errorf("sandboxd: %+v, %v; want the symlink skipped and a bad time read as 0", l, err)
	}
	l, err = decodeRuntimeListing("list", strings.NewReader("null"), 5)
	if err != nil || l.Total != 0 || l.Entries == nil {
		t.Errorf("null body: %+v, %v; want an empty listing", l, err)
	}
	for _, body := range []string{`{"entries":`, `{"message":"x"}`, `[{"name":1}]`} {
		if _, err := decodeRuntimeListing("list", strings.NewReader(body), 5); err == nil {
			t.Errorf("runtime listing %q decoded without error", body)
		}
	}
	if _, err := decodeSandboxdListing("list", strings.NewReader(`[]`), 5); err == nil {
		t.Error("sandboxd listing as an array decoded without error")
	}
	var v any
	if err := decodeJSON("x", strings.NewReader(`"`+strings.Repeat("a", 100)+`"`), 50, &v); err == nil || !strings.Contains(err.Error(), ErrTooLarge.Error()) {
		t.Errorf("oversized JSON: got %v, want ErrTooLarge", err)
	}
}

// conn stays free of the MCP library and of the project's kube and output packages.
func TestNoForbiddenImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := filepath.Glob("conntest/*.go")
	for _, f := range append(files, sub...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.Contains(p, "mcp-go") || strings.Contains(p, "modelcontextprotocol") ||
				strings.HasSuffix(p, "k8s-sandbox-mcp/kube") || strings.HasSuffix(p, "k8s-sandbox-mcp/output") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}
