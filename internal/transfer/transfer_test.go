package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/token"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

const (
	big = 50 << 20 // the round trips' size
	// unbuffered bounds what a big round trip may allocate in this process (client, server and
	// fakes together): holding the file would take big at least.
	unbuffered = big / 8
)

// step is one request through a URL.
type step struct {
	principal string
	method    string
	size      int64 // PUT: body bytes, generated
	chunked   bool  // PUT: no Content-Length
	want      int
	broken    bool // the response body ends in an error, not EOF
}

func TestTransferURL(t *testing.T) {
	const alice, bob = "static:alice", "static:bob"
	cases := []struct {
		name      string
		maxBytes  int64
		direction string
		clock     time.Duration // the registry's clock at create: -1h makes the URL expired already
		file      int64         // download: the sandbox file's size
		failAfter int64         // download: the sandbox stops answering after this many bytes
		steps     []step
		stored    int64 // upload: the size the sandbox holds afterwards; -1: nothing
	}{
		{name: "upload, then used", maxBytes: DefaultMaxBytes, direction: Upload,
			steps: []step{{alice, "PUT", big, false, 200, false}, {alice, "PUT", 1, false, 404, false}}, stored: big},
		{name: "upload without Content-Length", maxBytes: DefaultMaxBytes, direction: Upload,
			steps: []step{{alice, "PUT", big, true, 200, false}}, stored: big},
		{name: "download, then used", maxBytes: DefaultMaxBytes, direction: Download, file: big,
			steps: []step{{alice, "GET", 0, false, 200, false}, {alice, "GET", 0, false, 404, false}}},
		{name: "an empty file", maxBytes: DefaultMaxBytes, direction: Download, file: 0,
			steps: []step{{alice, "GET", 0, false, 200, false}}},
		{name: "expired", maxBytes: DefaultMaxBytes, direction: Upload, clock: -time.Hour,
			steps: []step{{alice, "PUT", 10, false, 404, false}}, stored: -1},
		{name: "another principal neither uses nor spends it", maxBytes: DefaultMaxBytes, direction: Upload,
			steps: []step{{bob, "PUT", 10, false, 404, false}, {"", "PUT", 10, false, 404, false}, {alice, "PUT", 10, false, 200, false}}, stored: 10},
		{name: "other methods do not spend an upload URL", maxBytes: DefaultMaxBytes, direction: Upload,
			steps: []step{{alice, "GET", 0, false, 405, false}, {alice, "HEAD", 0, false, 405, false}, {alice, "POST", 10, false, 405, false},
				{alice, "PUT", 10, false, 200, false}}, stored: 10},
		{name: "PUT does not spend a download URL", maxBytes: DefaultMaxBytes, direction: Download, file: 10,
			steps: []step{{alice, "PUT", 10, false, 405, false}, {alice, "GET", 0, false, 200, false}}},
		{name: "Content-Length over the cap: refused before anything is spent", maxBytes: 1 << 20, direction: Upload,
			steps: []step{{alice, "PUT", 1<<20 + 1, false, 413, false}, {alice, "PUT", 1 << 20, false, 200, false}}, stored: 1 << 20},
		{name: "a body running past the cap is cut", maxBytes: 1 << 20, direction: Upload,
			steps: []step{{alice, "PUT", 3 << 19, true, 413, false}, {alice, "PUT", 1, false, 404, false}}, stored: -1},
		{name: "a file over the cap", maxBytes: 1 << 20, direction: Download, file: 1<<20 + 1,
			steps: []step{{alice, "GET", 0, false, 413, false}}},
		{name: "a download failing midway is a broken response", maxBytes: DefaultMaxBytes, direction: Download, file: 1 << 20, failAfter: 256 << 10,
			steps: []step{{alice, "GET", 0, false, 200, true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.maxBytes)
			const path = "/work/data set.bin"
			if tc.direction == Download {
				_, sum, _ := digest(generated(path, tc.file))
				e.sb.files[path] = fakeFile{size: tc.file, sum: sum}
				e.sb.failAfter = tc.failAfter
			}
			u := e.create(t, alice, path, tc.direction, tc.clock)
			for i, s := range tc.steps {
				s.check(t, fmt.Sprintf("step %d (%s by %q)", i, s.method, s.principal), u, path, e.sb)
			}
			if tc.direction != Upload {
				return
			}
			f, ok := e.sb.file(path)
			if _, sum, _ := digest(generated(path, tc.stored)); tc.stored >= 0 && (!ok || f.size != tc.stored || f.sum != sum) {
				t.Errorf("the sandbox holds %+v (%t), want the %d bytes sent", f, ok, tc.stored)
			} else if tc.stored < 0 && ok {
				t.Errorf("the sandbox holds %+v, want nothing", f)
			}
		})
	}
}

// check sends the step's request and checks the answer; a big transfer must not be held in memory.
func (s step) check(t *testing.T, name, u, path string, sb *fakeSandbox) {
	t.Helper()
	var body io.Reader
	if s.method == "PUT" || s.method == "POST" {
		body = generated(path, s.size)
		if s.chunked {
			body = io.MultiReader(body) // hides the size from net/http
		}
	}
	req, err := http.NewRequest(s.method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil && !s.chunked {
		req.ContentLength = s.size
	}
	req.Header.Set("X-Test-Principal", s.principal)
	var res *http.Response
	var n int64
	var sum string
	var readErr error
	alloc := allocated(func() {
		if res, err = http.DefaultClient.Do(req); err == nil {
			n, sum, readErr = digest(res.Body)
			res.Body.Close()
		}
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.StatusCode != s.want {
		t.Fatalf("%s: status %d, want %d", name, res.StatusCode, s.want)
	}
	if s.size >= big || n >= big {
		t.Logf("%s: allocated %d KiB moving %d MiB", name, alloc>>10, max(s.size, n)>>20)
		if alloc > unbuffered {
			t.Errorf("%s: allocated %d MiB moving %d MiB: the transfer was buffered", name, alloc>>20, max(s.size, n)>>20)
		}
	}
	switch {
	case s.broken:
		if readErr == nil {
			t.Errorf("%s: the body ended cleanly after %d bytes, want a broken transfer", name, n)
		}
	case readErr != nil:
		t.Errorf("%s: reading the answer: %v", name, readErr)
	case s.want == http.StatusOK && s.method == "GET":
		if f, _ := sb.file(path); n != f.size || sum != f.sum {
			t.Errorf("%s: downloaded %d bytes (sha256 %s), want %d (%s)", name, n, sum, f.size, f.sum)
		}
		_, params, _ := mime.ParseMediaType(res.Header.Get("Content-Disposition"))
		if ct := res.Header.Get("Content-Type"); ct != "application/octet-stream" || params["filename"] != "data set.bin" {
			t.Errorf("%s: Content-Type %q, Content-Disposition %q", name, ct, res.Header.Get("Content-Disposition"))
		}
	case s.want == http.StatusNotFound:
		if res.Header.Get("Content-Type") == "application/octet-stream" {
			t.Errorf("%s: a 404 dressed as a file", name)
		}
	}
}

func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A URL that names no live grant gets the same answer, whatever is wrong with it.
func TestUnusableURLsLookAlike(t *testing.T) {
	e := newEnv(t, DefaultMaxBytes)
	u := e.create(t, "", "/f", Upload, 0)
	tok := u[strings.LastIndex(u, "/")+1:]
	var want string
	for _, path := range []string{
		"/transfer/" + testNS + "/" + testClaim + "/wrong-token",
		"/transfer/" + testNS + "/other-claim/" + tok,
		"/transfer/other-ns/" + testClaim + "/" + tok,
		"/transfer/" + testNS + "/" + testClaim,
		"/transfer/" + testNS + "/" + testClaim + "/" + tok + "/extra",
		"/transfer/" + testNS + "//" + tok,
	} {
		req, _ := http.NewRequest("PUT", e.url+path, strings.NewReader("x"))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if want == "" {
			want = string(b)
		}
		if res.StatusCode != http.StatusNotFound || string(b) != want || !strings.Contains(want, "create_transfer_url") {
			t.Errorf("%s: %d %q, want 404 %q", path, res.StatusCode, b, want)
		}
	}
	if _, ok := e.sb.file("/f"); ok {
		t.Error("a wrong URL wrote the file")
	}
}

func TestCreate(t *testing.T) {
	ctx := withPrincipal(context.Background(), "static:alice")
	cases := []struct {
		name               string
		stdio              bool
		owner, path, dir   string
		expires, wantAfter time.Duration
		err                error // nil: a URL
	}{
		{name: "default expiry", owner: testOwner, path: "/f", dir: Upload, wantAfter: DefaultExpires},
		{name: "the longest", owner: testOwner, path: "/f", dir: Download, expires: MaxExpires, wantAfter: MaxExpires},
		{name: "over the longest", owner: testOwner, path: "/f", dir: Upload, expires: MaxExpires + time.Second, err: errAny},
		{name: "negative", owner: testOwner, path: "/f", dir: Upload, expires: -time.Second, err: errAny},
		{name: "no such direction", owner: testOwner, path: "/f", dir: "sideways", err: errAny},
		{name: "no path", owner: testOwner, dir: Upload, err: errAny},
		{name: "another owner's sandbox", owner: "session-2", path: "/f", dir: Upload, err: kube.ErrNotFound},
		{name: "stdio", stdio: true, owner: testOwner, path: "/f", dir: Upload, err: ErrNoHTTP},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, DefaultMaxBytes)
			if tc.stdio {
				e.reg.SetBase("")
			}
			u, at, err := e.reg.Create(ctx, tc.owner, testNS, testClaim, tc.path, tc.dir, tc.expires)
			if tc.err != nil {
				if err == nil || tc.err != errAny && !errors.Is(err, tc.err) {
					t.Errorf("Create: %q %v, want %v", u, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			prefix := e.url + PathPrefix + testNS + "/" + testClaim + "/"
			tok, ok := strings.CutPrefix(u, prefix)
			if !ok || len(tok) != 43 { // 32 bytes, base64url
				t.Errorf("URL %q, want %s<43 characters>", u, prefix)
			}
			if d := time.Until(at); d > tc.wantAfter || d < tc.wantAfter-2*time.Second {
				t.Errorf("expires in %v, want %v", d, tc.wantAfter)
			}
			grants, _ := kube.NewFromClients(e.ext, nil, nil, ownerKey).TransferGrants(ctx, testNS, testClaim, testOwner)
			if len(grants) != 1 || grants[0].TokenHash != token.Hash(tok) || grants[0].Principal != "static:alice" ||
				grants[0].Path != tc.path || grants[0].Direction != tc.dir || !grants[0].ExpiresAt.Equal(at) {
				t.Errorf("recorded %+v, want the token's hash, the caller, the path, the direction and the expiry", grants)
			}
		})
	}
}

// errAny stands for any error in a table.
var errAny = errors.New("any error")

func TestTooManyURLs(t *testing.T) {
	e := newEnv(t, DefaultMaxBytes)
	var err error
	for range kube.MaxTransferGrants + 1 {
		_, _, err = e.reg.Create(context.Background(), testOwner, testNS, testClaim, "/f", Upload, 0)
	}
	if !errors.Is(err, kube.ErrTooManyTransfers) {
		t.Errorf("URL %d: %v, want ErrTooManyTransfers", kube.MaxTransferGrants+1, err)
	}
}

// Deleting the sandbox ends its URLs.
func TestDeletedSandbox(t *testing.T) {
	e := newEnv(t, DefaultMaxBytes)
	u := e.create(t, "", "/f", Upload, 0)
	if err := e.ext.ExtensionsV1beta1().SandboxClaims(testNS).Delete(context.Background(), testClaim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	step{"", "PUT", 1, false, http.StatusNotFound, false}.check(t, "after delete", u, "/f", e.sb)
}

// TestWithoutUploads: under the operator's filter no upload URL is handed out, and one granted
// by a process without it (another replica, before a restart) is refused unspent, writing
// nothing; downloads go on.
func TestWithoutUploads(t *testing.T) {
	const alice = "static:alice"
	e := newEnv(t, DefaultMaxBytes)
	const path = "/work/data set.bin" // the name step.check expects of a download
	_, sum, _ := digest(generated(path, 10))
	e.sb.files[path] = fakeFile{size: 10, sum: sum}
	granted := e.create(t, alice, path, Upload, 0) // by a process without the filter
	WithoutUploads()(e.reg)
	_, _, err := e.reg.Create(withPrincipal(context.Background(), alice), testOwner, testNS, testClaim, path, Upload, 0)
	if !errors.Is(err, ErrNoUploads) {
		t.Fatalf("Create upload without uploads: %v, want ErrNoUploads", err)
	}
	step{principal: alice, method: "PUT", size: 20, want: http.StatusForbidden}.check(t, "PUT under the filter", granted, path, e.sb)
	step{principal: "static:bob", method: "PUT", size: 20, want: http.StatusNotFound}.check(t, "another principal's PUT", granted, path, e.sb)
	if f, _ := e.sb.file(path); f.size != 10 || f.sum != sum {
		t.Errorf("the file was replaced: %+v", f)
	}
	step{principal: alice, method: "GET", want: http.StatusOK}.check(t, "a download", e.create(t, alice, path, Download, 0), path, e.sb)
	e.reg.noUploads = false // the refusal did not spend the grant
	step{principal: alice, method: "PUT", size: 20, want: http.StatusOK}.check(t, "PUT without the filter", granted, path, e.sb)
}
