//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDevShCommandsWorkAsPrinted is issue 44.6: the Inspector CLI commands hack/dev.sh prints,
// run as printed (each its own MCP session), create a sandbox, run a command in it and delete
// it. dev.sh and the commands run on the host's network, as a newcomer runs them; the stack
// being up, dev.sh reuses it.
func TestDevShCommandsWorkAsPrinted(t *testing.T) {
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(10000))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	hostNet := stack.Env["HOST_NETNS"]
	if hostNet == "" {
		t.Fatal("the stack's env file names no HOST_NETNS: bring it up again (hack/localstack/stack.sh down && up)")
	}
	onHost := func(name string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + hostNet, "--", name}, args...)...)
		cmd.Dir = stack.RepoRoot
		return cmd
	}
	dev := onHost(filepath.Join(stack.RepoRoot, "hack", "dev.sh"))
	dev.Env = append(os.Environ(), "MCP_ADDR="+addr)
	dev.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dev.Cancel = func() error { return syscall.Kill(-dev.Process.Pid, syscall.SIGTERM) }
	stderr, err := dev.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-dev.Process.Pid, syscall.SIGTERM)
		_ = dev.Wait()
	})
	// The block between "Inspector CLI" and the stdio entry is what a newcomer copies.
	var printed []string
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	for in := false; sc.Scan(); {
		line := sc.Text()
		log.WriteString(line + "\n")
		switch {
		case strings.HasPrefix(line, "  Inspector CLI"):
			in = true
		case strings.HasPrefix(line, "  stdio"):
			in = false
		case in:
			printed = append(printed, line)
		}
		if strings.Contains(line, "serving streamable HTTP") {
			break
		}
	}
	go func() { // keep draining, so the server never blocks on its log
		for sc.Scan() {
		}
	}()
	if len(printed) < 4 || !strings.Contains(printed[0], "mcp-inspector") {
		t.Fatalf("dev.sh printed no Inspector commands:\n%s", log.String())
	}
	script := strings.Join(printed, "\n") + "\necho \"CLAIM=$claim\"\n"
	out, err := onHost("bash", "-euc", script).CombinedOutput()
	got := string(out)
	if err != nil || !strings.Contains(got, `hello from `) || !strings.Contains(got, `\"deleted\":true`) || strings.Contains(got, "not found") {
		t.Fatalf("the printed commands: %v\n%s\ndev.sh said:\n%s", err, got, log.String())
	}
	claim := got[strings.LastIndex(got, "CLAIM=")+len("CLAIM="):]
	claimGone(t, "default", strings.TrimSpace(claim), 30*time.Second)
}
