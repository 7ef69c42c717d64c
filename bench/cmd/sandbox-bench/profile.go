package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"
)

// profileWindow is how long each CPU profile the collector asks for lasts. pprof's endpoint
// takes a duration up front and an item's length is not known in advance, so the collector
// asks for back-to-back windows until the item ends (`go tool pprof` merges the files); a
// short window keeps the wait after the item short.
const profileWindow = 2 * time.Second

// profiling is -profile for one server: its --metrics-addr and the file name prefix.
type profiling struct {
	addr, prefix string
}

// profileArgs returns the server flags that serve its profiles when -profile is set (nil and
// no flags otherwise). name labels the files (item and side).
func (b *bench) profileArgs(name string) (*profiling, []string, error) {
	if b.cfg.profileDir == "" {
		return nil, nil, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	b.profiles++
	p := &profiling{addr: addr, prefix: filepath.Join(b.cfg.profileDir, fmt.Sprintf("%s-%03d", name, b.profiles))}
	return p, []string{"--metrics-addr", addr, "--profiling"}, nil
}

// collect writes the server's CPU profile, window by window, until stop is called; stop
// waits for the window under way so that no part of the item goes unprofiled. A nil
// profiling collects nothing.
func (p *profiling) collect(ctx context.Context) (stop func()) {
	if p == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			if err := p.window(ctx, fmt.Sprintf("%s-cpu-%04d.pb.gz", p.prefix, i)); err != nil {
				fmt.Fprintf(os.Stderr, "sandbox-bench: profile: %v\n", err)
				return
			}
		}
	}()
	return func() { close(quit); <-done }
}

func (p *profiling) window(ctx context.Context, file string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.addr, int(profileWindow/time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileInProcess writes a CPU profile and an execution trace of item 1's in-process series,
// which runs in this process (the tools layer with the real Kubernetes client and runtime
// connection, no transport): DIR/inprocess-<kind>.cpu.pb.gz and .trace. The trace shows each
// call's goroutine hand-offs and waits, which a CPU profile cannot. Nothing without -profile.
func (b *bench) profileInProcess(kind string) (stop func(), err error) {
	if b.cfg.profileDir == "" {
		return func() {}, nil
	}
	prefix := filepath.Join(b.cfg.profileDir, "inprocess-"+strings.ToLower(kind))
	cpu, err := os.Create(prefix + ".cpu.pb.gz")
	if err != nil {
		return nil, err
	}
	tr, err := os.Create(prefix + ".trace")
	if err != nil {
		cpu.Close()
		return nil, err
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		tr.Close()
		return nil, err
	}
	if err := trace.Start(tr); err != nil {
		pprof.StopCPUProfile()
		cpu.Close()
		tr.Close()
		return nil, err
	}
	return func() {
		trace.Stop()
		pprof.StopCPUProfile()
		for _, f := range []*os.File{cpu, tr} {
			if err := f.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "sandbox-bench: profile: %v\n", err)
			}
		}
	}, nil
}
