package ociarchive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/hack/localstack/build/images/internal/dirlayer"
)

// layerFile writes files (path -> content) as a gzip layer, owners applied.
func layerFile(t *testing.T, files map[string]string, owners dirlayer.Owners) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if err := dirlayer.Write(zw, root, owners); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "layer.tar.gz")
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func write(t *testing.T, layers []Layer, cfg Config, ref string) string {
	t.Helper()
	img, err := Image(layers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(f, img, ref); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteReadsBack(t *testing.T) {
	base := layerFile(t, map[string]string{"etc/passwd": "root:x:0:0::/root:/bin/sh\n", "bin/sh": "sh"}, nil)
	top := layerFile(t, map[string]string{"usr/local/bin/sandboxd": "daemon", "workspace/.keep": ""},
		dirlayer.Owners{"/workspace": {UID: 1000, GID: 1000}})
	layers := []Layer{{base, "base"}, {top, "sandboxd"}}
	cfg := Config{Entrypoint: []string{"/usr/local/bin/sandboxd"}, Cmd: []string{"--root-dir", "/workspace"},
		User: "1000", WorkingDir: "/workspace", Env: []string{"PATH=/usr/bin:/bin"}, ExposedPorts: []string{"8080", "9090/tcp"}}
	ref := "localhost/k8s-sandbox-mcp/sandboxd:v0.5.6"
	p := write(t, layers, cfg, ref)

	a, err := Read(p, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != ref || a.Tag != "v0.5.6" {
		t.Errorf("annotations name %q tag %q, want %q and v0.5.6", a.Name, a.Tag, ref)
	}
	if a.Platform == nil || a.Platform.OS != "linux" || a.Platform.Architecture != a.Config.Architecture {
		t.Errorf("index platform %+v, want linux/%s", a.Platform, a.Config.Architecture)
	}
	c := a.Config.Config
	if !reflect.DeepEqual(c.Entrypoint, cfg.Entrypoint) || !reflect.DeepEqual(c.Cmd, cfg.Cmd) ||
		c.User != "1000" || c.WorkingDir != "/workspace" || !reflect.DeepEqual(c.Env, cfg.Env) ||
		!reflect.DeepEqual(c.ExposedPorts, map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}}) {
		t.Errorf("config %+v, want %+v", c, cfg)
	}
	if !a.Config.Created.Time.Equal(dirlayer.Epoch) || len(a.Config.History) != 2 || a.Config.History[1].CreatedBy != "sandboxd" {
		t.Errorf("created %v, history %+v", a.Config.Created, a.Config.History)
	}
	if len(a.Layers) != 2 || string(a.Manifest.MediaType) != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("layers %v, manifest media type %q", a.Layers, a.Manifest.MediaType)
	}
	for p, want := range map[string]File{
		"/etc/passwd":             {Type: tar.TypeReg, Mode: 0o755, Size: 26},
		"/usr/local/bin/sandboxd": {Type: tar.TypeReg, Mode: 0o755, Size: 6},
		"/workspace":              {Type: tar.TypeDir, Mode: 0o755, UID: 1000, GID: 1000},
	} {
		if got := a.Files[p]; got == nil || *got != want {
			t.Errorf("%s = %+v, want %+v", p, got, want)
		}
	}

	again, err := os.ReadFile(write(t, layers, cfg, ref))
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, again) {
		t.Error("the same layers and config gave a different tarball")
	}
}

// rewrite copies the tarball at p, passing each regular file's content through edit.
func rewrite(t *testing.T, p string, edit func(name string, data []byte) []byte) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	tr, tw := tar.NewReader(f), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data = edit(h.Name, data)
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(t.TempDir(), "edited.tar")
	if err := os.WriteFile(q, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return q
}

func TestReadRefusesBrokenArchives(t *testing.T) {
	l := layerFile(t, map[string]string{"pause": "pause"}, nil)
	ref := "registry.k8s.io/pause:3.10.2"
	good := write(t, []Layer{{l, "pause"}}, Config{Entrypoint: []string{"/pause"}}, ref)
	a, err := Read(good, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	layerBlob := "blobs/sha256/" + a.Manifest.Layers[0].Digest.Hex
	for _, tc := range []struct {
		name string
		edit func(name string, data []byte) []byte
		want string
	}{
		{"corrupt layer", func(name string, data []byte) []byte {
			if name == layerBlob {
				data = append([]byte{}, data...)
				data[len(data)/2] ^= 0xff
			}
			return data
		}, "invalid image"},
		{"tag annotation disagrees", func(name string, data []byte) []byte {
			if name == "index.json" {
				return bytes.Replace(data, []byte(`"3.10.2"`), []byte(`"3.10"`), 1)
			}
			return data
		}, `annotation org.opencontainers.image.ref.name is "3.10", want "3.10.2" (the tag of registry.k8s.io/pause:3.10.2)`},
		{"no name", func(name string, data []byte) []byte {
			if name == "index.json" {
				return bytes.Replace(data, []byte(`"io.containerd.image.name"`), []byte(`"x"`), 1)
			}
			return data
		}, `annotation io.containerd.image.name: image name "": `},
	} {
		p := rewrite(t, good, tc.edit)
		_, err := Read(p, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), p+": "+tc.want) {
			t.Errorf("%s: Read error = %v, want it to contain %q", tc.name, err, p+": "+tc.want)
		}
	}
}

func TestTag(t *testing.T) {
	for _, tc := range []struct{ ref, tag, err string }{
		{ref: "registry.k8s.io/pause:3.10.2", tag: "3.10.2"},
		{ref: "localhost/k8s-sandbox-mcp/forward:dev", tag: "dev"},
		{ref: "pause:3.10", err: `image name "pause:3.10": strict validation requires the registry to be explicitly defined (want registry/repository:tag)`},
		{ref: "docker.io/library/pause:3.10", err: `image name "docker.io/library/pause:3.10": read as "index.docker.io/library/pause:3.10"; use a name kept as given, e.g. localhost/NAME:TAG`},
		{ref: "localhost/k8s-sandbox-mcp/forward", err: `image name "localhost/k8s-sandbox-mcp/forward": `},
	} {
		tag, err := Tag(tc.ref)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("Tag(%q) error = %v, want prefix %q", tc.ref, err, tc.err)
			}
			continue
		}
		if err != nil || tag != tc.tag {
			t.Errorf("Tag(%q) = %q, %v; want %q", tc.ref, tag, err, tc.tag)
		}
	}
}

func TestLookup(t *testing.T) {
	dash := &File{Type: tar.TypeReg, Mode: 0o755}
	a := &Archive{Files: map[string]*File{
		"/bin":               {Type: tar.TypeSymlink, Linkname: "usr/bin"},
		"/usr":               {Type: tar.TypeDir},
		"/usr/bin":           {Type: tar.TypeDir},
		"/usr/bin/dash":      dash,
		"/usr/bin/sh":        {Type: tar.TypeSymlink, Linkname: "dash"},
		"/etc":               {Type: tar.TypeDir},
		"/etc/alternatives":  {Type: tar.TypeSymlink, Linkname: "/usr/bin/../bin/sh"},
		"/etc/loop":          {Type: tar.TypeSymlink, Linkname: "loop2"},
		"/etc/loop2":         {Type: tar.TypeSymlink, Linkname: "loop"},
		"/etc/dangling":      {Type: tar.TypeSymlink, Linkname: "nowhere"},
		"/usr/bin/python3.0": {Type: tar.TypeReg},
	}}
	for _, tc := range []struct{ path, resolved, err string }{
		{path: "/bin/sh", resolved: "/usr/bin/dash"},
		{path: "/usr/bin/dash", resolved: "/usr/bin/dash"},
		{path: "/etc/alternatives", resolved: "/usr/bin/dash"},
		{path: "/bin/bash", err: "/bin/bash is missing (no /usr/bin/bash)"},
		{path: "/etc/dangling", err: "/etc/dangling is missing (no /etc/nowhere)"},
		{path: "/etc/loop", err: "/etc/loop: too many levels of symbolic links"},
	} {
		f, resolved, err := a.Lookup(tc.path)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Lookup(%q) error = %v, want %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil || resolved != tc.resolved || f != dash {
			t.Errorf("Lookup(%q) = %v, %q, %v; want the dash entry at %q", tc.path, f, resolved, err, tc.resolved)
		}
	}
}
