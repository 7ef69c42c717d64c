// Package localstack_test checks that the local stack's pinned versions agree where they are
// written twice: versions.sh (which stamps binaries and names images) against the build
// modules' go.mod files (which build them), and the stack's module against this repository's
// own go.mod and the older agent-sandbox's, whose shared modules must be at the same versions
// for go's build cache to compile them once for the stack, the tests and the compatibility run
// (versions.sh says why).
package localstack_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"golang.org/x/mod/modfile"
)

// versions reads versions.sh's NAME=vX.Y.Z lines.
func versions(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("versions.sh")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^([A-Z_]+)=(v[0-9][^ ]*)$`)
	v := map[string]string{}
	for s := bufio.NewScanner(f); s.Scan(); {
		if m := line.FindStringSubmatch(s.Text()); m != nil {
			v[m[1]] = m[2]
		}
	}
	return v
}

// modules reads a go.mod into module path → the version a build uses (a replacement's, where
// there is one).
func modules(t *testing.T, gomod string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, r := range f.Require {
		m[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		if _, ok := m[r.Old.Path]; ok && r.New.Version != "" {
			m[r.Old.Path] = r.New.Version
		}
	}
	return m
}

func TestVersionsMatchTheBuildModules(t *testing.T) {
	v := versions(t)
	stack := filepath.Join("build", "stack", "go.mod")
	for _, c := range []struct{ variable, gomod, module string }{
		{"KUBE_VERSION", stack, "k8s.io/kubernetes"},
		{"ETCD_VERSION", stack, "go.etcd.io/etcd/server/v3"},
		{"CONTAINERD_VERSION", stack, "github.com/containerd/containerd/v2"},
		{"COREDNS_VERSION", stack, "github.com/coredns/coredns"},
		{"KUBE_ROUTER_VERSION", stack, "github.com/cloudnativelabs/kube-router/v2"},
		{"AGENT_SANDBOX_DEFAULT_VERSION", stack, "sigs.k8s.io/agent-sandbox"},
		{"AGENT_SANDBOX_DEFAULT_VERSION", filepath.Join("..", "..", "go.mod"), "sigs.k8s.io/agent-sandbox"},
		{"AGENT_SANDBOX_COMPAT_VERSION", filepath.Join("build", "sandbox-"+v["AGENT_SANDBOX_COMPAT_VERSION"], "go.mod"), "sigs.k8s.io/agent-sandbox"},
		{"METRICS_SERVER_VERSION", stack, "sigs.k8s.io/metrics-server"},
	} {
		want := v[c.variable]
		if want == "" {
			t.Errorf("versions.sh sets no %s", c.variable)
			continue
		}
		if got := modules(t, c.gomod)[c.module]; got != want {
			t.Errorf("%s requires %s %q, versions.sh's %s is %s: change one to match", c.gomod, c.module, got, c.variable, want)
		}
	}
}

// TestTheStackSharesVersions checks the modules whose tests or binaries are built after the
// stack's: this repository's and the older agent-sandbox's.
func TestTheStackSharesVersions(t *testing.T) {
	stackMod := filepath.Join("build", "stack", "go.mod")
	stack := modules(t, stackMod)
	for _, c := range []struct{ gomod, differs string }{
		{filepath.Join("..", "..", "go.mod"), ""},
		// The one module it must not share: it is there for the other version.
		{filepath.Join("build", "sandbox-"+versions(t)["AGENT_SANDBOX_COMPAT_VERSION"], "go.mod"), "sigs.k8s.io/agent-sandbox"},
	} {
		gomod := c.gomod
		t.Run(gomod, func(t *testing.T) {
			other := modules(t, gomod)
			n := 0
			for path, want := range stack {
				got, ok := other[path]
				if !ok || path == c.differs {
					continue
				}
				n++
				if got != want {
					t.Errorf("%s requires %s %s, the stack's module (%s) %s: go's build cache then compiles "+
						"it and every package that imports it twice in a cold hack/test.sh; `go get %s@<the higher one>` in the "+
						"lower module, then go mod tidy in both", gomod, path, got, stackMod, want, path)
				}
			}
			if n < 50 {
				t.Errorf("only %d modules in common with %s: is it the stack's module?", n, stackMod)
			}
		})
	}
}
