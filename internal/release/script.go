package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RunScript runs root's hack/release.sh for tag into out, with env added to this process's
// environment (RELEASE_PLATFORMS, RELEASE_SKIP), and returns its output with the error.
func RunScript(ctx context.Context, root, tag, out string, env ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "release.sh"), tag, out)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("hack/release.sh %s: %w\n%s", tag, err, b)
	}
	return nil
}

// UserConfigFor returns the user_config values that make the manifest pass the server the
// given settings (K8S_SANDBOX_* name to value): what a user types into the host's form for
// each setting the manifest maps straight to one. A setting the manifest does not ask for is
// an error: the bundle's user could not set it.
func UserConfigFor(m Manifest, settings map[string]string) (map[string]any, error) {
	user := map[string]any{}
	for name, v := range settings {
		ref, ok := m.Server.MCPConfig.Env[name]
		if !ok || !userConfigRef.MatchString(ref) {
			return nil, fmt.Errorf("the manifest does not ask for %s", name)
		}
		key := strings.TrimPrefix(ref[2:len(ref)-1], "user_config.")
		if m.UserConfig[key].Type == "boolean" {
			user[key] = v == "true"
			continue
		}
		user[key] = v
	}
	return user, nil
}

// MCPBBin is the directory hack/deps.sh installs @anthropic-ai/mcpb's mcpb (and Node 22) in,
// as hack/localstack/versions.sh, the one owner of tool versions, names it.
func MCPBBin(ctx context.Context, root string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-c", `. hack/localstack/versions.sh && printf %s "$MCPB_BIN"`)
	cmd.Dir = root
	b, err := cmd.Output()
	if err != nil || len(b) == 0 {
		return "", fmt.Errorf("MCPB_BIN from hack/localstack/versions.sh: %w", err)
	}
	return string(b), nil
}

// Cmd is the server's process as the host starts it: the resolved command and arguments, and
// an environment of base (what the host passes of its own: Claude Desktop's is small) and
// the manifest's env.
func (c MCPConfig) Cmd(base ...string) *exec.Cmd {
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Env = append([]string{}, base...)
	for k, v := range c.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}
