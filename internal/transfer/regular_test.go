package transfer

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 43.5: a download URL of a FIFO (or a link to one) answers 422 at once, saying why,
// instead of never answering; regular files, directories and missing paths are Download's.
func TestDownloadOfSpecialFile(t *testing.T) {
	e := newEnv(t, DefaultMaxBytes)
	if err := syscall.Mkfifo(filepath.Join(e.sb.dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pipe", filepath.Join(e.sb.dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.sb.dir, "plain"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.sb.files["/plain"] = fakeFile{size: 1}
	get := func(path string) (int, string) {
		u := e.create(t, "", path, Download, 0)
		// A bound for the test only: the old code never answered.
		resp, err := (&http.Client{Timeout: time.Minute}).Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"pipe", "/pipe", "link"} {
		if code, body := get(path); code != http.StatusUnprocessableEntity || !strings.Contains(body, "is not a regular file") {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	if code, _ := get("/plain"); code != http.StatusOK {
		t.Errorf("a regular file: %d", code)
	}
	if code, body := get("/missing"); code != http.StatusBadGateway || strings.Contains(body, "regular") {
		t.Errorf("a missing file: %d %q", code, body)
	}
}
