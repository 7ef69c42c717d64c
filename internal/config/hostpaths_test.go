package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestHostPaths(t *testing.T) {
	a, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	b := filepath.Join(a, "b")
	must(t, os.Mkdir(b, 0o755))
	file := filepath.Join(a, "file")
	must(t, os.WriteFile(file, nil, 0o600))
	link := filepath.Join(t.TempDir(), "link")
	must(t, os.Symlink(b, link))
	sep := string(os.PathListSeparator)
	tests := []struct {
		name, value string
		want        []string
		wantErr     string // part of the one line, which always starts with the variable
	}{
		{name: "unset is off", value: "", want: nil},
		{name: "blank is off", value: "  ", want: nil},
		{name: "two directories", value: a + sep + b, want: []string{a, b}},
		{name: "empty entries skipped", value: sep + a + sep, want: []string{a}},
		{name: "a link is kept resolved", value: link, want: []string{b}},
		{name: "missing", value: a + sep + filepath.Join(a, "nope"), wantErr: "nope\" cannot be used"},
		{name: "a file", value: file, wantErr: "file\" is not a directory"},
		{name: "relative", value: "rel/dir", wantErr: `"rel/dir" is not an absolute path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_HOST_PATHS": tt.value})
			if tt.wantErr != "" {
				var ce *Error
				if err == nil || !errors.As(err, &ce) || ce.Var != "K8S_SANDBOX_HOST_PATHS" ||
					!strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one K8S_SANDBOX_HOST_PATHS line with %q", err, tt.wantErr)
				}
				return
			}
			must(t, err)
			if !slices.Equal(c.HostPaths, tt.want) {
				t.Errorf("HostPaths = %q, want %q", c.HostPaths, tt.want)
			}
		})
	}
}
