// Command mkimage turns directories into an OCI image tarball that `ctr images import` reads,
// and checks such a tarball with go-containerregistry's reader. The local stack's images are
// built with it (hack/localstack/images.sh): no registry, no docker engine.
//
//	mkimage build -name REF -out FILE -layer DIR [-layer DIR]... [-owner /PATH=UID:GID]...
//	        [-entrypoint JSON] [-cmd JSON] [-user U] [-workdir DIR] [-env K=V]... [-expose PORT]...
//	mkimage check -name REF [-want /PATH[=UID:GID]]... FILE
//	mkimage base -layout DIR
//	mkimage from-layout -layout DIR -name REF -out FILE
//
// base and from-layout serve hack/image.sh, which builds the server's image with ko: the
// first writes ko's base image where ko finds it without a registry, the second turns the
// image ko built for this machine's platform into a tarball for containerd.
//
// Layers are deterministic: fixed times, root-owned unless -owner says otherwise, so the
// same directories give the same image digest.
package main

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/hack/localstack/build/images/internal/dirlayer"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/hack/localstack/build/images/internal/ociarchive"
)

const usage = `usage:
  mkimage build -name REF -out FILE -layer DIR [-layer DIR]... [-owner /PATH=UID:GID]...
          [-entrypoint JSON] [-cmd JSON] [-user U] [-workdir DIR] [-env K=V]... [-expose PORT]...
  mkimage check -name REF [-want /PATH[=UID:GID]]... FILE
  mkimage base -layout DIR
  mkimage from-layout -layout DIR -name REF -out FILE`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "check":
		err = check(os.Args[2:])
	case "base":
		err = base(os.Args[2:])
	case "from-layout":
		err = fromLayout(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q\n%s", os.Args[1], usage)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

// jsonList parses a Dockerfile-style exec form (["a","b"]); empty means unset.
func jsonList(flagName, s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("-%s %q: want a JSON array of strings, e.g. [\"/bin/app\",\"--flag\"]", flagName, s)
	}
	return out, nil
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	var layers, owners, env, expose list
	ref := fs.String("name", "", "image name, registry/repository:tag")
	out := fs.String("out", "", "tarball to write (replaced atomically)")
	entrypoint := fs.String("entrypoint", "", "entrypoint, JSON array")
	cmdArg := fs.String("cmd", "", "cmd, JSON array")
	user := fs.String("user", "", "user (uid[:gid])")
	workdir := fs.String("workdir", "", "working directory")
	fs.Var(&layers, "layer", "directory to add as a layer, bottom first (repeatable)")
	fs.Var(&owners, "owner", "/PATH=UID:GID: owner of PATH and everything under it (repeatable; default root)")
	fs.Var(&env, "env", "KEY=VALUE (repeatable)")
	fs.Var(&expose, "expose", "port[/proto] (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ref == "" || *out == "" || len(layers) == 0 || fs.NArg() > 0 {
		return errors.New("build needs -name, -out and at least one -layer, and no other arguments\n" + usage)
	}
	if _, err := ociarchive.Tag(*ref); err != nil {
		return err
	}
	cfg := ociarchive.Config{User: *user, WorkingDir: *workdir, Env: env, ExposedPorts: expose}
	var err error
	if cfg.Entrypoint, err = jsonList("entrypoint", *entrypoint); err != nil {
		return err
	}
	if cfg.Cmd, err = jsonList("cmd", *cmdArg); err != nil {
		return err
	}
	for _, e := range env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("-env %q: want KEY=VALUE", e)
		}
	}
	own := dirlayer.Owners{}
	for _, o := range owners {
		p, ow, err := dirlayer.ParseOwner(o)
		if err != nil {
			return err
		}
		own[p] = ow
	}
	tmp, err := os.MkdirTemp(filepath.Dir(*out), ".mkimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var ls []ociarchive.Layer
	for i, dir := range layers {
		p := filepath.Join(tmp, fmt.Sprintf("layer%d.tar.gz", i))
		if err := writeLayer(p, dir, own); err != nil {
			return err
		}
		ls = append(ls, ociarchive.Layer{Path: p, CreatedBy: "mkimage -layer " + filepath.Base(dir)})
	}
	img, err := ociarchive.Image(ls, cfg)
	if err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(tmp, "image.tar"))
	if err != nil {
		return err
	}
	err = ociarchive.Write(f, img, *ref)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	return os.Rename(f.Name(), *out)
}

// writeLayer writes dir as a gzip-compressed layer file at p.
func writeLayer(p, dir string, owners dirlayer.Owners) error {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("-layer %s: not a directory", dir)
	}
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	defer f.Close()
	zw, err := gzip.NewWriterLevel(f, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	if err := dirlayer.Write(zw, dir, owners); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var wants list
	ref := fs.String("name", "", "the name the tarball must carry")
	fs.Var(&wants, "want", "/PATH or /PATH=UID:GID that must exist in the image (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ref == "" || fs.NArg() != 1 {
		return errors.New("check needs -name and one tarball\n" + usage)
	}
	file := fs.Arg(0)
	a, err := ociarchive.Read(file, filepath.Dir(file))
	if err != nil {
		return err
	}
	if a.Name != *ref {
		return fmt.Errorf("%s is named %q, want %q", file, a.Name, *ref)
	}
	for _, w := range wants {
		p, ow, hasOwner := w, dirlayer.Owner{}, strings.Contains(w, "=")
		if hasOwner {
			if p, ow, err = dirlayer.ParseOwner(w); err != nil {
				return err
			}
		}
		f, _, err := a.Lookup(p)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if hasOwner && (f.UID != ow.UID || f.GID != ow.GID) {
			return fmt.Errorf("%s: %s is owned by %d:%d, want %d:%d", file, p, f.UID, f.GID, ow.UID, ow.GID)
		}
	}
	var layers []string
	for _, s := range a.Layers {
		layers = append(layers, mib(s))
	}
	c := a.Config.Config
	fmt.Printf("%s ok: %s, %s, layers [%s], %d files, user %q, workdir %q, entrypoint %q, cmd %q\n",
		a.Name, a.Digest, mib(a.Size), strings.Join(layers, " "), len(a.Files), c.User, c.WorkingDir,
		c.Entrypoint, c.Cmd)
	return nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
