//go:build e2e

package localstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/types"
	processv1 "sigs.k8s.io/agent-sandbox/packages/sandboxd/spec/process/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

var stack *localstack.Stack // shared by every test of the package; started in TestMain

func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Short() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		s, err := localstack.Start(ctx)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting the local stack:", err)
			os.Exit(1)
		}
		stack = s
	}
	os.Exit(m.Run())
}

func requireStack(t *testing.T) *localstack.Stack {
	t.Helper()
	if stack == nil {
		t.Skip("-short: the local stack is not started")
	}
	t.Parallel()
	return stack
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// processClient dials sandboxd's gRPC ProcessService at ip:9090.
func processClient(t *testing.T, ip string) processv1.ProcessServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(ip+":9090", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc dial %s: %v", ip, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return processv1.NewProcessServiceClient(conn)
}

func shExecute(ctx context.Context, t *testing.T, c processv1.ProcessServiceClient, script string) *processv1.ExecuteResponse {
	t.Helper()
	resp, err := c.Execute(ctx, &processv1.ExecuteRequest{
		Config: &processv1.ProcessConfig{Command: []string{"/bin/sh", "-c", script}}})
	if err != nil {
		t.Fatalf("Execute %q: %v", script, err)
	}
	return resp
}

type pyResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
}

// pyExecute posts a command to the python runtime's /execute at base, with extra headers
// (the router's X-Sandbox-*). It retries 502s briefly: the router's pod cache learns about
// a freshly claimed pod from an informer event.
func pyExecute(ctx context.Context, t *testing.T, base string, headers map[string]string, command string) pyResult {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"command": command})
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/execute", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		status, b := do(t, req)
		if status == http.StatusBadGateway && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if status != http.StatusOK {
			t.Fatalf("POST %s/execute: %d %s", base, status, b)
		}
		var r pyResult
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("execute response %q: %v", b, err)
		}
		return r
	}
}

// pyUpload writes a file through the python runtime's multipart /upload.
func pyUpload(ctx context.Context, t *testing.T, base, name string, content []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(content)
	_ = mw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/upload", &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if status, b := do(t, req); status != http.StatusOK {
		t.Fatalf("upload %s: %d %s", name, status, b)
	}
}

func httpDo(ctx context.Context, t *testing.T, method, url string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return resp.StatusCode, b
}

// running reports whether pid is a live (non-zombie) process.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// podProcesses returns the processes in a pod's cgroups (the kubelet's cgroupfs layout names
// them pod<UID>), pid -> command name. The test runs in the host's pid namespace.
func podProcesses(t *testing.T, uid types.UID) map[int]string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	mark := "/pod" + string(uid) + "/"
	out := map[int]string{}
	for _, d := range dirs {
		cg, err := os.ReadFile(d + "/cgroup")
		if err != nil || !strings.Contains(string(cg), mark) {
			continue
		}
		comm, err := os.ReadFile(d + "/comm")
		pid, perr := strconv.Atoi(filepath.Base(d))
		if err == nil && perr == nil && running(pid) {
			out[pid] = strings.TrimSpace(string(comm))
		}
	}
	return out
}
