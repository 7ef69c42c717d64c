package ociarchive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// Archive is what an image tarball holds, as go-containerregistry reads it back.
type Archive struct {
	Name, Tag string // the two name annotations
	Digest    v1.Hash
	Config    *v1.ConfigFile
	Layers    []int64          // compressed size of each layer
	Files     map[string]*File // flattened filesystem, by absolute path
	Size      int64            // bytes of the tarball
	Manifest  *v1.Manifest
	Platform  *v1.Platform
}

// File is one entry of the flattened filesystem.
type File struct {
	Type     byte // tar.TypeReg, TypeDir, TypeSymlink, TypeLink
	Mode     int64
	UID, GID int
	Size     int64
	Linkname string
}

// Read reads the image tarball at p, checks it the way go-containerregistry validates an
// image (every blob's digest and size, layer diff IDs against the config, the manifest
// against its blobs) and that its index holds exactly one manifest with both name
// annotations, and returns its content. scratch is a directory for the unpacked layout.
func Read(p, scratch string) (*Archive, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(scratch, "ocicheck-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := untar(p, dir); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s is not an OCI image layout: %w", p, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("%s: index.json: %w", p, err)
	}
	if len(im.Manifests) != 1 {
		return nil, fmt.Errorf("%s: index.json lists %d manifests, want 1", p, len(im.Manifests))
	}
	desc := im.Manifests[0]
	a := &Archive{Name: desc.Annotations[AnnotationImageName], Tag: desc.Annotations[AnnotationRefName],
		Digest: desc.Digest, Size: fi.Size(), Platform: desc.Platform}
	tag, err := Tag(a.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: annotation %s: %w", p, AnnotationImageName, err)
	}
	if a.Tag != tag {
		return nil, fmt.Errorf("%s: annotation %s is %q, want %q (the tag of %s)", p, AnnotationRefName, a.Tag, tag, a.Name)
	}
	img, err := idx.Image(desc.Digest)
	if err != nil {
		return nil, fmt.Errorf("%s: manifest %s: %w", p, desc.Digest, err)
	}
	if err := validate.Image(img); err != nil {
		return nil, fmt.Errorf("%s: invalid image: %w", p, err)
	}
	if a.Config, err = img.ConfigFile(); err != nil {
		return nil, err
	}
	if a.Manifest, err = img.Manifest(); err != nil {
		return nil, err
	}
	for _, l := range a.Manifest.Layers {
		a.Layers = append(a.Layers, l.Size)
	}
	if a.Files, err = flatten(img); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return a, nil
}

// flatten lists the filesystem the layers give, whiteouts applied.
func flatten(img v1.Image) (map[string]*File, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]*File{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("flatten layers: %w", err)
		}
		files[path.Join("/", h.Name)] = &File{Type: h.Typeflag, Mode: h.Mode, UID: h.Uid, GID: h.Gid,
			Size: h.Size, Linkname: h.Linkname}
	}
}

// untar unpacks the layout tarball: regular files and directories only, all inside dir.
func untar(p, dir string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		clean := path.Clean(h.Name)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			return fmt.Errorf("entry %q escapes the archive", h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(clean))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q: type %q does not belong in an image layout", h.Name, h.Typeflag)
		}
	}
}

// Lookup finds p in the flattened filesystem, following symbolic links (of the directories on
// the way and of p itself) as the kernel would inside the container: "/bin/bash" is found
// when /bin links to usr/bin. p itself is cleaned lexically first. It returns the file and
// the path it resolved to.
func (a *Archive) Lookup(p string) (*File, string, error) {
	const maxLinks = 40 // the kernel's own limit
	links := 0
	rest := strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/")
	cur := "/"
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if c == "" || c == "." {
			continue
		}
		next := path.Join(cur, c)
		f, ok := a.Files[next]
		if !ok {
			return nil, "", fmt.Errorf("%s is missing (no %s)", p, next)
		}
		if f.Type != tar.TypeSymlink {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return nil, "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		base := cur
		if path.IsAbs(f.Linkname) {
			base = "/"
		}
		target := strings.Split(strings.Trim(path.Clean(path.Join(base, f.Linkname)), "/"), "/")
		rest = append(target, rest...)
		cur = "/"
	}
	if cur == "/" {
		return &File{Type: tar.TypeDir, Mode: 0o755}, cur, nil
	}
	return a.Files[cur], cur, nil
}
