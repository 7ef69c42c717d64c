// Package ociarchive builds an image from layer files and writes it as an OCI image layout in
// one tar stream, the form `ctr images import` reads; and reads such a tarball back with
// go-containerregistry's own layout reader to check it.
package ociarchive

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/hack/localstack/build/images/internal/dirlayer"
)

// The annotations containerd reads the image name from on import (the first wins); ref.name
// holds only the tag, as the OCI spec and containerd's own exporter have it.
const (
	AnnotationImageName = "io.containerd.image.name"
	AnnotationRefName   = "org.opencontainers.image.ref.name"
)

// Config is the part of the image config a Dockerfile sets.
type Config struct {
	Entrypoint, Cmd  []string
	User, WorkingDir string
	Env              []string // KEY=VALUE
	ExposedPorts     []string // "8080/tcp"
}

// Layer is a layer file (a tar stream, gzip-compressed or not) and what made it, for the
// image history.
type Layer struct {
	Path      string
	CreatedBy string
}

// Tag checks that ref is a fully qualified tag reference (registry/repository:tag) that
// go-containerregistry keeps as given, and returns the tag. Docker Hub names are completed
// differently by containerd (docker.io/library/...) and go-containerregistry
// (index.docker.io/...), so such an image might not be found under the name a pod spec gives.
func Tag(ref string) (string, error) {
	t, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("image name %q: %w (want registry/repository:tag)", ref, err)
	}
	if t.Name() != ref {
		return "", fmt.Errorf("image name %q: read as %q; use a name kept as given, e.g. localhost/NAME:TAG", ref, t.Name())
	}
	return t.TagStr(), nil
}

// Image assembles an OCI image (OCI media types, linux on this machine's architecture,
// created at dirlayer.Epoch) from layers, bottom first.
func Image(layers []Layer, cfg Config) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	adds := make([]mutate.Addendum, 0, len(layers))
	for _, l := range layers {
		layer, err := tarball.LayerFromFile(l.Path, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.Path, err)
		}
		adds = append(adds, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
			History: v1.History{Created: v1.Time{Time: dirlayer.Epoch}, CreatedBy: l.CreatedBy}})
	}
	img, err := mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("append layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = runtime.GOARCH, "linux"
	cf.Created = v1.Time{Time: dirlayer.Epoch}
	cf.Config = v1.Config{Entrypoint: cfg.Entrypoint, Cmd: cfg.Cmd, User: cfg.User,
		WorkingDir: cfg.WorkingDir, Env: cfg.Env}
	for _, p := range cfg.ExposedPorts {
		if !strings.Contains(p, "/") {
			p += "/tcp"
		}
		if cf.Config.ExposedPorts == nil {
			cf.Config.ExposedPorts = map[string]struct{}{}
		}
		cf.Config.ExposedPorts[p] = struct{}{}
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return img, nil
}

// Write writes img named ref as an OCI image layout tar stream: oci-layout, index.json (one
// manifest, annotated with the name) and the blobs, in a fixed order with fixed times, so the
// same image gives the same bytes.
func Write(w io.Writer, img v1.Image, ref string) error {
	tag, err := Tag(ref)
	if err != nil {
		return err
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("manifest digest: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	index, err := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex,
		Manifests: []v1.Descriptor{{MediaType: types.OCIManifestSchema1, Size: int64(len(manifest)),
			Digest: digest, Annotations: map[string]string{AnnotationImageName: ref, AnnotationRefName: tag},
			Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture}}}})
	if err != nil {
		return fmt.Errorf("index.json: %w", err)
	}
	blobs, err := blobsOf(img, manifest, digest)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, f := range []struct {
		name string
		data []byte
	}{{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"index.json", index}} {
		if err := writeFile(tw, f.name, int64(len(f.data)), func(w io.Writer) error {
			_, err := w.Write(f.data)
			return err
		}); err != nil {
			return err
		}
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: dirlayer.Epoch}); err != nil {
			return err
		}
	}
	for _, b := range blobs {
		if err := writeFile(tw, "blobs/sha256/"+b.digest.Hex, b.size, b.write); err != nil {
			return fmt.Errorf("blob %s: %w", b.digest, err)
		}
	}
	return tw.Close()
}

type blob struct {
	digest v1.Hash
	size   int64
	write  func(io.Writer) error
}

// blobsOf lists the manifest, config and layer blobs of img, sorted by digest; a layer that
// appears twice is written once.
func blobsOf(img v1.Image, manifest []byte, digest v1.Hash) ([]blob, error) {
	config, err := img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return nil, fmt.Errorf("config digest: %w", err)
	}
	bytesBlob := func(d v1.Hash, b []byte) blob {
		return blob{d, int64(len(b)), func(w io.Writer) error { _, err := w.Write(b); return err }}
	}
	byDigest := map[v1.Hash]blob{digest: bytesBlob(digest, manifest), configDigest: bytesBlob(configDigest, config)}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("layers: %w", err)
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, fmt.Errorf("layer digest: %w", err)
		}
		size, err := l.Size()
		if err != nil {
			return nil, fmt.Errorf("layer size: %w", err)
		}
		byDigest[d] = blob{d, size, func(w io.Writer) error {
			rc, err := l.Compressed()
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(w, rc)
			return err
		}}
	}
	out := make([]blob, 0, len(byDigest))
	for _, b := range byDigest {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].digest.Hex < out[j].digest.Hex })
	return out, nil
}

func writeFile(tw *tar.Writer, name string, size int64, write func(io.Writer) error) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644,
		ModTime: dirlayer.Epoch}); err != nil {
		return err
	}
	return write(tw)
}
