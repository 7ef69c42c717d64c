package main

import (
	"debug/elf"
	"fmt"
	"strings"
)

// linking says how an ELF binary is linked. The server ships static (install.sh and
// hack/image.sh build with CGO_ENABLED=0); Go's default here links it dynamically
// (kustomize, through cli-runtime, imports Go's plugin package), and that binary is larger,
// maps more pages and starts slower, so the report says which one it measured.
func linking(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return "", fmt.Errorf("reading %s's program interpreter: %w", path, err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	libs, _ := f.DynString(elf.DT_NEEDED) // fails without a dynamic section: no libraries
	if interp == "" && len(libs) == 0 {
		return "statically linked (no program interpreter, no shared libraries), as it ships", nil
	}
	return fmt.Sprintf("dynamically linked (interpreter %q, libraries %s): not the binary that ships, "+
		"which is built with CGO_ENABLED=0", interp, strings.Join(libs, ", ")), nil
}
