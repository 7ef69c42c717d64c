package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// Item 11 (issue 32): a large file through the server, against sandboxd's REST API directly.
const (
	transferBytes = 1 << 30
	transferRuns  = 3
	// transferRatioGoal is the throughput the server keeps of the direct route (issue 32).
	transferRatioGoal = 0.8
)

func (b *bench) largeTransfer(ctx context.Context) (*section, error) {
	s := &section{title: "11. A 1 GiB file through the server against sandboxd's REST API directly",
		what: fmt.Sprintf("One file of %s of random bytes, from the host into a sandboxd sandbox and back, %d rounds after "+
			"one warm-up, interleaved. Server: `copy_to_sandbox` and `copy_from_sandbox` over stdio (K8S_SANDBOX_HOST_PATHS "+
			"set to the file's directory), from a server process started for this item; its peak RSS is VmHWM, reset before "+
			"each call. Baseline: `PUT` and `GET /v1/files/<path>` on the same sandboxd from this process, the file read "+
			"from and written to the same host disk (written files are synced, as the server's copy does).",
			fmtNum(mib(transferBytes), "MiB"), transferRuns)}
	dir, err := os.MkdirTemp("", "bench-transfer-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "data.bin")
	if err := writeRandom(src, transferBytes); err != nil {
		return nil, err
	}
	env, err := b.serverEnv("SANDBOXD_POD_IP")
	if err != nil {
		return nil, err
	}
	srv, err := startStdio(ctx, b.cfg.server, append(env, "K8S_SANDBOX_HOST_PATHS="+dir))
	if err != nil {
		return nil, err
	}
	defer srv.close()
	sb, err := b.createSandbox(ctx, srv, localstack.SandboxdPool)
	if err != nil {
		return nil, err
	}
	direct, err := newSandboxdDirect(sb.podIP)
	if err != nil {
		return nil, err
	}
	defer direct.close()
	var peaks series
	server := func(tool string, args map[string]any) func(context.Context) error {
		return func(ctx context.Context) error {
			p, err := measurePeak(srv.pid(), func() error {
				var out struct {
					Bytes int64 `json:"bytes"`
				}
				if err := callTool(ctx, srv.cs, tool, b.claimArgs(sb, args), &out); err != nil {
					return err
				}
				if out.Bytes != transferBytes {
					return fmt.Errorf("%w: %s moved %d bytes", errMismatch, tool, out.Bytes)
				}
				return nil
			})
			peaks = append(peaks, p.total)
			return err
		}
	}
	upBase, upSubj, err := interleave(ctx, 1, transferRuns,
		func(ctx context.Context) error { return direct.put(ctx, "bench-direct.bin", src) },
		server("copy_to_sandbox", map[string]any{"host_path": src, "path": "bench-server.bin"}))
	if err != nil {
		return s, fmt.Errorf("upload: %w", err)
	}
	downBase, downSubj, err := interleave(ctx, 1, transferRuns,
		func(ctx context.Context) error {
			return direct.get(ctx, "bench-direct.bin", filepath.Join(dir, "direct.bin"))
		},
		server("copy_from_sandbox", map[string]any{"path": "bench-server.bin", "host_path": filepath.Join(dir, "server.bin")}))
	if err != nil {
		return s, fmt.Errorf("download: %w", err)
	}
	s.comparisons("Time per 1 GiB (the ratio is server over direct; throughput is its inverse):",
		comparison{name: "host to sandbox", unit: "ms", base: upBase, subj: upSubj},
		comparison{name: "sandbox to host", unit: "ms", base: downBase, subj: downSubj})
	throughput := func(ms float64) string { return fmtNum(mib(transferBytes)/(ms/1000), "MiB/s") }
	s.tables = append(s.tables, table{caption: "Throughput (medians) and the server's memory:",
		header: []string{"direction", "direct", "server", "server's peak RSS (max over the calls)"},
		rows: [][]string{
			{"host to sandbox", throughput(upBase.median()), throughput(upSubj.median()), fmtNum(mib(peaks.quantile(1)), "MiB")},
			{"sandbox to host", throughput(downBase.median()), throughput(downSubj.median()), ""},
		}})
	up, down := upBase.median()/upSubj.median(), downBase.median()/downSubj.median()
	t := target{
		goal: fmt.Sprintf("a 1 GiB transfer through the server at ≥ %.1fx sandboxd REST's throughput", transferRatioGoal),
		measured: fmt.Sprintf("%.2fx up, %.2fx down (medians); server peak RSS %s", up, down,
			fmtNum(mib(peaks.quantile(1)), "MiB")),
		met: up >= transferRatioGoal && down >= transferRatioGoal,
		figures: []figure{{name: "throughput over direct, up", value: up, unit: ""},
			{name: "throughput over direct, down", value: down, unit: ""},
			{name: "server peak RSS", value: mib(peaks.quantile(1)), unit: "MiB"}}}
	if !t.met {
		t.why = "The server's route adds an MCP call, a temporary name and a rename in the sandbox (one exec each), " +
			"and on the way down an fsync and a rename on the host; the bytes themselves go through one copy each way."
	}
	s.targets = append(s.targets, t)
	return s, nil
}

// put uploads a host file with sandboxd's REST API, as a client skipping the server would.
func (d *sandboxdDirect) put(ctx context.Context, path, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, d.rest+"/v1/files/"+path, f)
	if err != nil {
		return err
	}
	req.ContentLength = fi.Size()
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := d.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT %s: %s", path, resp.Status)
	}
	return nil
}

// get downloads a sandbox file into a host file, synced.
func (d *sandboxdDirect) get(ctx context.Context, path, dst string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.rest+"/v1/files/"+path, nil)
	if err != nil {
		return err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, resp.Body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != transferBytes {
		err = fmt.Errorf("%w: GET %s gave %d bytes", errMismatch, path, n)
	}
	return err
}

// writeRandom writes n incompressible bytes to path.
func writeRandom(path string, n int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, io.LimitReader(rand.NewChaCha8([32]byte{11}), n))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
