//go:build e2e

package e2e

import (
	"debug/elf"
	"testing"
)

// TestBinaryIsStatic: the binary every end-to-end test runs is the static one that ships
// (install.sh, hack/image.sh): no program interpreter and no shared libraries. The
// default CGO_ENABLED=1 would link it dynamically, through kustomize's use of Go's plugin
// package.
func TestBinaryIsStatic(t *testing.T) {
	f, err := elf.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %s program header: it is dynamically linked", binary, p.Type)
		}
	}
	// DynString fails when there is no dynamic section, which is what a static binary has.
	if libs, err := f.DynString(elf.DT_NEEDED); err == nil && len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", binary, libs)
	}
}
