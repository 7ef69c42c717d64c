package transfer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynfake "k8s.io/client-go/dynamic/fake"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	corefake "sigs.k8s.io/agent-sandbox/clients/k8s/clientset/versioned/fake"
	extfake "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/clientset/versioned/fake"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

const (
	testNS    = "team-a"
	testClaim = "box"
	testOwner = "session-1"
	ownerKey  = "mcp.k8s-agent-sandbox/session-id"
)

type principalKey struct{}

func principalOf(ctx context.Context) string { p, _ := ctx.Value(principalKey{}).(string); return p }

func withPrincipal(ctx context.Context, p string) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// asPrincipal plays the server's auth middleware: the X-Test-Principal header is the caller.
func asPrincipal(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.ServeHTTP(w, req.WithContext(withPrincipal(req.Context(), req.Header.Get("X-Test-Principal"))))
	})
}

// generated is size bytes of a stream that seed always yields the same way, made as it is
// read: tests move large files without holding them.
func generated(seed string, size int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8(sha256.Sum256([]byte(seed))), size)
}

func digest(r io.Reader) (int64, string, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	return n, hex.EncodeToString(h.Sum(nil)), err
}

type fakeFile struct {
	size int64
	sum  string
}

// fakeSandbox is a Streamer that keeps only each file's size and digest. Downloads stream
// generated(path, size) of the size recorded.
type fakeSandbox struct {
	mu        sync.Mutex
	files     map[string]fakeFile
	failAfter int64 // a download fails after this many bytes (0: never)
	// dir is the working directory Exec runs commands in with the real /bin/sh, so the
	// special-file check meets real FIFOs; the files above are not in it.
	dir string
}

func (f *fakeSandbox) Exec(ctx context.Context, _ conn.Target, req conn.ExecRequest) (conn.ExecResult, error) {
	cmd := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = f.dir, req.Stdout, req.Stderr
	var exit *exec.ExitError
	if err := cmd.Run(); errors.As(err, &exit) {
		return conn.ExecResult{ExitCode: exit.ExitCode()}, nil
	} else if err != nil {
		return conn.ExecResult{}, err
	}
	return conn.ExecResult{}, nil
}

func (f *fakeSandbox) Upload(_ context.Context, t conn.Target, path string, r io.Reader) (int64, error) {
	if t.SandboxName != "sb" || t.Namespace != testNS {
		return 0, fmt.Errorf("upload to the wrong sandbox %+v", t)
	}
	n, sum, err := digest(r)
	if err != nil {
		return n, fmt.Errorf("writing %s: %w", path, err) // what arrived is discarded, as a temp-and-rename Upload does
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path] = fakeFile{size: n, sum: sum}
	return n, nil
}

func (f *fakeSandbox) Download(_ context.Context, t conn.Target, path string, w io.Writer, maxBytes int64) (int64, error) {
	f.mu.Lock()
	file, ok := f.files[path]
	failAfter := f.failAfter
	f.mu.Unlock()
	switch {
	case t.SandboxName != "sb":
		return 0, fmt.Errorf("download from the wrong sandbox %+v", t)
	case !ok:
		return 0, fmt.Errorf("%s: no such file", path)
	case file.size > maxBytes:
		return 0, fmt.Errorf("%s: %w", path, conn.ErrTooLarge)
	case failAfter > 0:
		n, _ := io.CopyN(w, generated(path, file.size), failAfter)
		return n, errors.New("the sandbox stopped answering")
	}
	return io.Copy(w, generated(path, file.size))
}

func (f *fakeSandbox) file(path string) (fakeFile, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	file, ok := f.files[path]
	return file, ok
}

// env is a registry over a kube.Client on fake clientsets holding one claim (testClaim, owned
// by testOwner, bound to Sandbox "sb"), served by an httptest server.
type env struct {
	reg *Registry
	url string
	sb  *fakeSandbox
	ext *extfake.Clientset
}

func newEnv(t *testing.T, maxBytes int64) *env {
	t.Helper()
	ext, core := extfake.NewSimpleClientset(), corefake.NewSimpleClientset()
	claim := &extv1beta1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testClaim, Labels: map[string]string{ownerKey: testOwner}},
		Status:     extv1beta1.SandboxClaimStatus{SandboxStatus: extv1beta1.SandboxStatus{Name: "sb", PodIPs: []string{"10.0.0.7"}}},
	}
	sandbox := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "sb"},
		Status: sandboxv1beta1.SandboxStatus{PodIPs: []string{"10.0.0.7"}}}
	// Explicit resources: the fakes' kind-to-resource guess makes "sandboxs".
	if err := ext.Tracker().Create(extv1beta1.SchemeGroupVersion.WithResource("sandboxclaims"), claim, testNS); err != nil {
		t.Fatal(err)
	}
	if err := core.Tracker().Create(sandboxv1beta1.SchemeGroupVersion.WithResource("sandboxes"), sandbox, testNS); err != nil {
		t.Fatal(err)
	}
	kc := kube.NewFromClients(ext, core, dynfake.NewSimpleDynamicClient(runtime.NewScheme()), ownerKey)
	sb := &fakeSandbox{files: map[string]fakeFile{}, dir: t.TempDir()}
	reg := New(kc, sb, principalOf, maxBytes, zerolog.Nop())
	mux := http.NewServeMux()
	mux.Handle(PathPrefix, asPrincipal(reg.Handler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	reg.SetBase(srv.URL + "/")
	return &env{reg: reg, url: srv.URL, sb: sb, ext: ext}
}

// create hands principal a URL for path; clock shifts the registry's clock while it does.
func (e *env) create(t *testing.T, principal, path, direction string, clock time.Duration) string {
	t.Helper()
	e.reg.now = func() time.Time { return time.Now().Add(clock) }
	defer func() { e.reg.now = time.Now }()
	u, _, err := e.reg.Create(withPrincipal(context.Background(), principal), testOwner, testNS, testClaim, path, direction, 0)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
