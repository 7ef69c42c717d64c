package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// daemon is one supervised in-sandbox server process of a pod (sandboxd or the python
// runtime): started in its own process group, probed until it answers, restarted when it dies.
type daemon struct {
	name     string
	command  func() (*exec.Cmd, error) // a fresh command for every (re)start
	probeURL string
	logPath  string
	grace    time.Duration
	notify   func() // called on every state change

	mu       sync.Mutex
	pid      int
	ready    bool
	restarts int32
	started  time.Time
	lastExit *exitInfo
}

type exitInfo struct {
	code     int
	reason   string
	started  time.Time
	finished time.Time
}

type daemonState struct {
	name     string
	pid      int
	ready    bool
	restarts int32
	started  time.Time
	lastExit *exitInfo
}

func (d *daemon) state() daemonState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return daemonState{name: d.name, pid: d.pid, ready: d.ready, restarts: d.restarts,
		started: d.started, lastExit: d.lastExit}
}

func (d *daemon) set(f func()) {
	d.mu.Lock()
	f()
	d.mu.Unlock()
	d.notify()
}

// supervise runs the daemon until ctx ends, then stops its process group (SIGTERM, then
// SIGKILL after the grace period). A daemon that exits is restarted with a backoff.
func (d *daemon) supervise(ctx context.Context) {
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		began := time.Now()
		err := d.runOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		log.Printf("%s exited: %v; restarting in %s", d.name, err, backoff)
		d.set(func() { d.restarts++ })
		if time.Since(began) > 30*time.Second {
			backoff = 200 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (d *daemon) runOnce(ctx context.Context) error {
	cmd, err := d.command()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	began := time.Now()
	if err := cmd.Start(); err != nil {
		d.set(func() { d.lastExit = &exitInfo{code: 128, reason: "StartError", started: began, finished: time.Now()} })
		return fmt.Errorf("start: %w", err)
	}
	pid := cmd.Process.Pid
	d.set(func() { d.pid, d.ready, d.started = pid, false, began })

	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	probeCtx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	go d.probe(probeCtx, pid)

	select {
	case err = <-waitErr:
	case <-ctx.Done():
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case err = <-waitErr:
		case <-time.After(d.grace):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			err = <-waitErr
		}
	}
	// The process group may outlive its leader (e.g. a crashed leader's helpers).
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	code, reason := exitCode(err)
	d.set(func() {
		d.pid, d.ready = 0, false
		d.lastExit = &exitInfo{code: code, reason: reason, started: began, finished: time.Now()}
	})
	return err
}

func exitCode(err error) (int, string) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), "Error"
		}
		return ee.ExitCode(), "Error"
	}
	if err != nil {
		return 128, "Error"
	}
	return 0, "Completed"
}

// probe polls the readiness URL until it answers 200, then marks the daemon ready.
func (d *daemon) probe(ctx context.Context, pid int) {
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.probeURL, nil)
		if err != nil {
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			d.set(func() {
				if d.pid == pid {
					d.ready = true
				}
			})
			return
		}
	}
}
