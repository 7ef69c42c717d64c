package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLinking(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(dir, "static")
	build := exec.Command("go", "build", "-o", static, ".")
	build.Dir, build.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	got, err := linking(static)
	if err != nil || !strings.HasPrefix(got, "statically linked") {
		t.Errorf("linking(static) = %q, %v", got, err)
	}

	// Any dynamically linked system binary will do.
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	sh, _ = filepath.EvalSymlinks(sh)
	if f, err := elf.Open(sh); err != nil || f.Section(".interp") == nil {
		t.Skipf("%s is not a dynamically linked ELF binary", sh)
	}
	got, err = linking(sh)
	if err != nil || !strings.HasPrefix(got, `dynamically linked (interpreter "/lib`) || !strings.Contains(got, "libc.so") {
		t.Errorf("linking(%s) = %q, %v", sh, got, err)
	}
	if _, err := linking(filepath.Join(dir, "main.go")); err == nil {
		t.Error("linking accepted a file that is not ELF")
	}
}
