package kobase

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestDigestIsPinned: the base's digest is the one .ko.yaml names, and the same on every
// build: ko builds on it by that digest, so any change to the base must change .ko.yaml too.
func TestDigestIsPinned(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "..", "..", ".ko.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^defaultBaseImage: \S+@(sha256:[0-9a-f]{64})$`).FindSubmatch(data)
	if m == nil {
		t.Fatal(".ko.yaml names no defaultBaseImage by digest")
	}
	for i := range 2 {
		idx, err := Index()
		if err != nil {
			t.Fatal(err)
		}
		h, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if h.String() != string(m[1]) {
			t.Fatalf("build %d: base digest %s, .ko.yaml pins %s: update .ko.yaml if the base changed on purpose", i+1, h, m[1])
		}
	}
}

// TestBase: one image per platform of the server's, each running as nonroot with the files
// distroless's nonroot image gives such a user.
func TestBase(t *testing.T) {
	idx, err := Index()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != len(Platforms) {
		t.Fatalf("%d images, want %d", len(im.Manifests), len(Platforms))
	}
	for i, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS != Platforms[i].OS || d.Platform.Architecture != Platforms[i].Architecture {
			t.Errorf("image %d: platform %v, want %v", i, d.Platform, Platforms[i])
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != Platforms[i].Architecture || cf.Config.User != "65532:65532" {
			t.Errorf("image %d: architecture %q user %q", i, cf.Architecture, cf.Config.User)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("image %d: layers %d, %v", i, len(layers), err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*tar.Header{}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got[h.Name] = h
		}
		rc.Close()
		for name, want := range map[string]struct{ mode, uid int64 }{
			"etc/passwd": {0o644, 0}, "etc/group": {0o644, 0}, "home/nonroot/": {0o700, NonRoot}, "tmp/": {0o1777, 0}} {
			h := got[name]
			if h == nil || h.Mode != want.mode || int64(h.Uid) != want.uid {
				t.Errorf("image %d: %s is %+v, want mode %o uid %d", i, name, h, want.mode, want.uid)
			}
		}
	}
}
