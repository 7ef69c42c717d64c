package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	processv1 "sigs.k8s.io/agent-sandbox/packages/sandboxd/spec/process/v1"
)

// The direct clients are the baselines: what a program that skips our server does to reach
// the same sandbox, with the same kind of connection reuse the server has.

// sandboxdDirect talks to one sandboxd: gRPC for commands, REST for files.
type sandboxdDirect struct {
	cc   *grpc.ClientConn
	proc processv1.ProcessServiceClient
	rest string
	http *http.Client
}

func newSandboxdDirect(podIP string) (*sandboxdDirect, error) {
	cc, err := grpc.NewClient("passthrough:///"+net.JoinHostPort(podIP, "9090"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, fmt.Errorf("gRPC client for %s: %w", podIP, err)
	}
	return &sandboxdDirect{cc: cc, proc: processv1.NewProcessServiceClient(cc),
		rest: "http://" + net.JoinHostPort(podIP, "8080"), http: newHTTPClient()}, nil
}

func (d *sandboxdDirect) close() { _ = d.cc.Close() }

// execute runs a shell command with the unary Execute RPC, the SDKs' way.
func (d *sandboxdDirect) execute(ctx context.Context, command string) (*processv1.ExecuteResponse, error) {
	return d.proc.Execute(ctx, &processv1.ExecuteRequest{Config: &processv1.ProcessConfig{Command: []string{"/bin/sh", "-c", command}}})
}

// drain runs a shell command with the streaming Start RPC and discards its output,
// returning the number of stdout bytes: the cheapest way to move output out of sandboxd.
func (d *sandboxdDirect) drain(ctx context.Context, command string) (int64, error) {
	stream, err := d.proc.Start(ctx, &processv1.StartRequest{Config: &processv1.ProcessConfig{Command: []string{"/bin/sh", "-c", command}}})
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		msg, err := stream.Recv()
		if err != nil {
			return n, err
		}
		switch ev := msg.GetEvent().(type) {
		case *processv1.StartResponse_Stdout:
			n += int64(len(ev.Stdout))
		case *processv1.StartResponse_Exit:
			if c := ev.Exit.GetExitCode(); c != 0 {
				return n, fmt.Errorf("exit code %d", c)
			}
			return n, nil
		}
	}
}

// listing is what a raw client gets from GET /v1/files/<dir>, decoded whole.
type listing struct {
	Entries []struct {
		Name       string `json:"name"`
		Size       int64  `json:"size"`
		Type       string `json:"type"`
		ModifiedAt string `json:"modified_at"`
		Mode       string `json:"mode"`
	} `json:"entries"`
}

// list fetches and decodes a directory listing the simple way (read it, unmarshal it), and
// reports the body size and the bytes this process allocated for it.
func (d *sandboxdDirect) list(ctx context.Context, dir string) (entries int, body, alloc int64, err error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.rest+"/v1/files/"+url.PathEscape(dir), nil)
	if err != nil {
		return 0, 0, 0, err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, 0, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, 0, err
	}
	var l listing
	if err := json.Unmarshal(raw, &l); err != nil {
		return 0, 0, 0, fmt.Errorf("decode listing: %w", err)
	}
	runtime.ReadMemStats(&after)
	return len(l.Entries), int64(len(raw)), int64(after.TotalAlloc - before.TotalAlloc), nil
}

// pythonDirect talks to the python runtime's /execute.
type pythonDirect struct {
	base string
	http *http.Client
}

func newPythonDirect(podIP string) *pythonDirect {
	return &pythonDirect{base: "http://" + net.JoinHostPort(podIP, "8888"), http: newHTTPClient()}
}

type pyResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
}

// execute posts a command (shlex-split by the runtime, no shell) and decodes the answer.
func (p *pythonDirect) execute(ctx context.Context, command string) (pyResult, error) {
	body, _ := json.Marshal(map[string]string{"command": command})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/execute", bytes.NewReader(body))
	if err != nil {
		return pyResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.http.Do(req)
	if err != nil {
		return pyResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return pyResult{}, fmt.Errorf("POST /execute: %s", resp.Status)
	}
	var out pyResult
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return pyResult{}, fmt.Errorf("decode /execute: %w", err)
	}
	if out.ExitCode != 0 {
		return out, fmt.Errorf("exit code %d: %.300s", out.ExitCode, out.Stderr)
	}
	return out, nil
}

func newHTTPClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{
		MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}}
}

// shQuote quotes s for a POSIX shell (and for python's shlex.split).
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

var errMismatch = errors.New("unexpected result")
