// Package release reads what hack/release.sh makes as its consumers do: it unpacks a .mcpb
// bundle and turns its manifest into the command a host such as Claude Desktop starts, with
// the host's substitution rules (modelcontextprotocol/mcpb, src/shared/config.ts,
// getMcpConfigForManifest), quirks included, so that the tests start the server exactly as a
// user's Claude Desktop would.
package release

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// Manifest is the part of an MCPB manifest (manifest_version 0.3) a host needs to start the server.
type Manifest struct {
	ManifestVersion string                `json:"manifest_version"`
	Name            string                `json:"name"`
	Version         string                `json:"version"`
	Server          Server                `json:"server"`
	UserConfig      map[string]UserOption `json:"user_config"`
	Compatibility   struct {
		Platforms []string `json:"platforms"`
	} `json:"compatibility"`
}

// Server is the manifest's server section.
type Server struct {
	Type       string    `json:"type"`
	EntryPoint string    `json:"entry_point"`
	MCPConfig  MCPConfig `json:"mcp_config"`
}

// MCPConfig is how the host runs the server; PlatformOverrides are keyed by Node's
// process.platform (darwin, win32, linux).
type MCPConfig struct {
	Command           string               `json:"command"`
	Args              []string             `json:"args"`
	Env               map[string]string    `json:"env"`
	PlatformOverrides map[string]MCPConfig `json:"platform_overrides,omitempty"`
}

// UserOption is one setting the host asks the user for.
type UserOption struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
	Default     any    `json:"default"`
}

// ReadManifest reads a manifest.json.
func ReadManifest(path string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("read manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("parse %s: %w", path, err)
	}
	return m, nil
}

// NodePlatform is Node's process.platform for a GOOS, the key of platform_overrides.
func NodePlatform(goos string) string {
	if goos == "windows" {
		return "win32"
	}
	return goos
}

// userConfigRef is a whole argument that is one user_config variable: the host expands it to
// the value (or to several arguments for a list), and keeps it verbatim when the value is
// missing or empty (a falsy value in JavaScript).
var userConfigRef = regexp.MustCompile(`^\$\{user_config\.[^}]+\}$`)

// Resolve returns the command, arguments and environment the host starts for manifest m
// unpacked at dir on platform (Node's name), with the user's values (strings, booleans,
// numbers) over the manifest's defaults. Like the host, it leaves a ${...} it has no value for
// as it is, and it refuses (as the host does, by not starting the server) when a required
// setting has no value.
func Resolve(m Manifest, dir, platform string, user map[string]any) (MCPConfig, error) {
	c := m.Server.MCPConfig
	if o, ok := c.PlatformOverrides[platform]; ok {
		if o.Command != "" {
			c.Command = o.Command
		}
		if o.Args != nil {
			c.Args = o.Args
		}
		if o.Env != nil {
			c.Env = o.Env
		}
	}
	c.PlatformOverrides = nil
	merged := map[string]any{}
	for k, o := range m.UserConfig {
		if o.Default != nil {
			merged[k] = o.Default
		}
	}
	for k, v := range user {
		merged[k] = v
	}
	for k, o := range m.UserConfig {
		if v, ok := user[k]; o.Required && (!ok || v == nil || v == "") {
			return MCPConfig{}, fmt.Errorf("required setting %q has no value: the host does not start the server", k)
		}
	}
	sep := string(filepath.Separator)
	vars := map[string]string{"__dirname": dir, "pathSeparator": sep, "/": sep}
	for k, v := range merged {
		switch v := v.(type) {
		case bool:
			vars["user_config."+k] = fmt.Sprint(v)
		case string:
			vars["user_config."+k] = v
		default:
			vars["user_config."+k] = fmt.Sprint(v)
		}
	}
	out := MCPConfig{Command: substitute(c.Command, vars), Env: map[string]string{}}
	for _, a := range c.Args {
		if userConfigRef.MatchString(a) {
			if v := vars[a[2:len(a)-1]]; v != "" {
				out.Args = append(out.Args, v)
				continue
			}
			out.Args = append(out.Args, a) // the host's quirk: kept verbatim
			continue
		}
		out.Args = append(out.Args, substitute(a, vars))
	}
	for k, v := range c.Env {
		out.Env[k] = substitute(v, vars)
	}
	return out, nil
}

// substitute replaces each ${name} that has a value, empty included, and keeps the others.
func substitute(s string, vars map[string]string) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, "${"+k+"}", v)
	}
	return s
}

// Unpack extracts a .mcpb (a zip) into dir with the files' Unix modes, as the host installs
// it, and refuses entries that would land outside dir.
func Unpack(bundle, dir string) error {
	zr, err := zip.OpenReader(bundle)
	if err != nil {
		return fmt.Errorf("open bundle: %w", err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		dst := filepath.Join(dir, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(dst, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("bundle entry %q leaves the directory", f.Name)
		}
		if f.FileInfo().IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := unpackFile(f, dst); err != nil {
			return err
		}
	}
	return nil
}

func unpackFile(f *zip.File, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("unpack %s: %w", f.Name, err)
	}
	mode := f.Mode().Perm()
	if mode == 0 || runtime.GOOS == "windows" {
		mode = 0o644
	}
	r, err := f.Open()
	if err != nil {
		return fmt.Errorf("unpack %s: %w", f.Name, err)
	}
	defer r.Close()
	w, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("unpack %s: %w", f.Name, err)
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return fmt.Errorf("unpack %s: %w", f.Name, err)
	}
	return w.Close()
}
