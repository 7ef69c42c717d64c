package config

import (
	"os"
	"path/filepath"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/hostfs"
)

// hostPaths reads the host directories copy_to_sandbox and copy_from_sandbox may use, each
// checked and resolved once here (hostfs owns the rule); none: the copies are off.
func (p *parser) hostPaths() []string {
	v, ok := p.lookup("HOST_PATHS")
	if !ok {
		return nil
	}
	var dirs []string
	for _, d := range filepath.SplitList(v) {
		if d == "" {
			continue
		}
		resolved, err := hostfs.CheckDir(d)
		if err != nil {
			p.fail("HOST_PATHS", "%v: list existing absolute directories separated by %q", err, string(os.PathListSeparator))
			return nil
		}
		dirs = append(dirs, resolved)
	}
	return dirs
}
