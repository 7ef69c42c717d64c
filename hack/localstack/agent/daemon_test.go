package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestDaemonIsProbedRestartedAndStopped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	d := &daemon{name: "sleeper", probeURL: srv.URL, logPath: filepath.Join(t.TempDir(), "log"),
		grace: time.Second, notify: func() {},
		command: func() (*exec.Cmd, error) {
			cmd := exec.Command("sleep", "60")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			return cmd, nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.supervise(ctx); close(done) }()

	waitFor(t, "ready", func() bool { s := d.state(); return s.ready && s.pid > 0 })
	first := d.state().pid
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "restart", func() bool { s := d.state(); return s.ready && s.pid > 0 && s.pid != first })
	s := d.state()
	if s.restarts != 1 || s.lastExit == nil || s.lastExit.code != 128+9 {
		t.Errorf("after kill: restarts %d lastExit %+v", s.restarts, s.lastExit)
	}
	second := s.pid
	cancel()
	<-done
	if alive(second) {
		t.Errorf("pid %d survives the stop", second)
	}
	if s := d.state(); s.pid != 0 || s.ready {
		t.Errorf("state after stop %+v", s)
	}
}

func TestForwarderPipesAndCloses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	f, err := startForwarder(context.Background(), "127.0.0.1:0", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", f.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo %q %v", buf, err)
	}
	if err := f.close(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Error("connection still open after close")
	}
	if _, err := net.Dial("tcp", f.ln.Addr().String()); err == nil {
		t.Error("still accepting after close")
	}
}

func TestReapKillsEveryProcessOfTheUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run processes as another uid")
	}
	const uid = defaultUIDBase + 999
	var pids []int
	for range 3 {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = cmd.Wait() }()
		pids = append(pids, cmd.Process.Pid)
	}
	bystander := exec.Command("sleep", "60")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bystander.Process.Kill(); _ = bystander.Wait() }()
	n, err := reapUIDs(context.Background(), uidRange{uid, uid})
	if err != nil || n < 3 {
		t.Fatalf("reaped %d: %v", n, err)
	}
	waitFor(t, "reaped processes to exit", func() bool {
		for _, p := range pids {
			if alive(p) {
				return false
			}
		}
		return true
	})
	if !alive(bystander.Process.Pid) {
		t.Error("reap killed a process of another uid")
	}
}
