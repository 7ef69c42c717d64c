// Package kobase makes the base image ko builds the server's image on (hack/image.sh): what
// gcr.io/distroless/static:nonroot gives a static Go binary that needs nothing from its
// image, made here from nothing so that no registry is needed and the same code always gives
// the same digest, which .ko.yaml pins. It holds /etc/passwd and /etc/group with root,
// nonroot (65532) and nobody, nonroot's home and /tmp; no CA bundle: the server carries its
// own roots (golang.org/x/crypto/x509roots/fallback), used when the image has none.
package kobase

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Platforms are those the server's image is built for (.ko.yaml's defaultPlatforms).
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// NonRoot is distroless's nonroot user and group, the image's default user.
const NonRoot = 65532

// epoch is the time of every file and of the image: fixed, so the digest is.
var epoch = time.Unix(0, 0).UTC()

type entry struct {
	name     string
	mode     int64
	uid, gid int
	body     string // a regular file's content; directories have none
	dir      bool
}

var entries = []entry{
	{name: "etc/", mode: 0o755, dir: true},
	{name: "etc/group", mode: 0o644, body: "root:x:0:\nnonroot:x:65532:\nnogroup:x:65534:\n"},
	{name: "etc/passwd", mode: 0o644, body: "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"},
	{name: "home/", mode: 0o755, dir: true},
	{name: "home/nonroot/", mode: 0o700, uid: NonRoot, gid: NonRoot, dir: true},
	{name: "tmp/", mode: 0o1777, dir: true},
}

// layerTar is the base's one layer, uncompressed.
func layerTar() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: epoch, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Index is the base: one image per platform, the same layer in each.
func Index() (v1.ImageIndex, error) {
	data, err := layerTar()
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	var adds []mutate.IndexAddendum
	for _, p := range Platforms {
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
			History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "k8s-sandbox-mcp kobase"}})
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture, cf.Created = p.OS, p.Architecture, v1.Time{Time: epoch}
		cf.Config.User = fmt.Sprintf("%d:%d", NonRoot, NonRoot)
		cf.Config.WorkingDir = "/home/nonroot"
		cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

// WriteCache writes the base into dir, an OCI layout where ko (KOCACHE=<parent of dir>) finds
// a base named by digest without asking a registry: ko looks each manifest up by digest among
// the layout's top-level descriptors, so the index and each of its images get one.
func WriteCache(dir string) (v1.Hash, error) {
	idx, err := Index()
	if err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return v1.Hash{}, fmt.Errorf("layout %s: %w", dir, err)
		}
	}
	if err := p.AppendIndex(idx); err != nil {
		return v1.Hash{}, fmt.Errorf("layout %s: %w", dir, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	for _, d := range im.Manifests {
		if err := p.AppendDescriptor(d); err != nil {
			return v1.Hash{}, fmt.Errorf("layout %s: %w", dir, err)
		}
	}
	return idx.Digest()
}

// FromLayout returns the image for platform linux/arch of the one index in the OCI layout dir
// (what `ko build --oci-layout-path` writes), and the index's digest.
func FromLayout(dir, arch string) (v1.Image, v1.Hash, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, v1.Hash{}, err
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, v1.Hash{}, fmt.Errorf("layout %s: %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	tm, err := top.IndexManifest()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	if len(tm.Manifests) != 1 || !tm.Manifests[0].MediaType.IsIndex() {
		return nil, v1.Hash{}, fmt.Errorf("layout %s: want one image index, found %d manifests", dir, len(tm.Manifests))
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		return nil, v1.Hash{}, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == arch {
			img, err := idx.Image(d.Digest)
			if err != nil {
				return nil, v1.Hash{}, err
			}
			// Read it through once: a missing or corrupt blob fails here, not in containerd.
			if _, err := partial.Descriptor(img); err != nil {
				return nil, v1.Hash{}, err
			}
			return img, tm.Manifests[0].Digest, nil
		}
	}
	return nil, v1.Hash{}, fmt.Errorf("layout %s: no linux/%s image in index %s", dir, arch, tm.Manifests[0].Digest)
}
