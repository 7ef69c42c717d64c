package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/hack/localstack/build/images/internal/kobase"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/hack/localstack/build/images/internal/ociarchive"
)

// base writes the server image's base (kobase) into an OCI layout for ko's KOCACHE and prints
// its digest.
func base(args []string) error {
	fs := flag.NewFlagSet("base", flag.ContinueOnError)
	dir := fs.String("layout", "", "OCI layout to write it into ($KOCACHE/img for ko)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("base needs -layout\n" + usage)
	}
	h, err := kobase.WriteCache(*dir)
	if err != nil {
		return err
	}
	fmt.Println(h)
	return nil
}

// fromLayout writes this machine's platform's image of the index ko wrote into an OCI layout
// as a tarball named REF, the form the local stack imports into containerd, and prints the
// index's digest.
func fromLayout(args []string) error {
	fs := flag.NewFlagSet("from-layout", flag.ContinueOnError)
	dir := fs.String("layout", "", "the OCI layout `ko build --oci-layout-path` wrote")
	ref := fs.String("name", "", "image name, registry/repository:tag")
	out := fs.String("out", "", "tarball to write (replaced atomically)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *ref == "" || *out == "" {
		return errors.New("from-layout needs -layout, -name and -out\n" + usage)
	}
	img, idx, err := kobase.FromLayout(*dir, runtime.GOARCH)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(*out), ".mkimage-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	err = ociarchive.Write(f, img, *ref)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	if err := os.Rename(f.Name(), *out); err != nil {
		return err
	}
	fmt.Println(idx)
	return nil
}
