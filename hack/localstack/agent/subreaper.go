package main

import (
	"context"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes sandbox commands orphaned by their daemon (they start their own
// sessions) children of the agent instead of PID 1, and collects them once they exit: in a
// container PID 1 often never reaps, and their zombies would linger in the process table.
func (a *agent) becomeSubreaper(ctx context.Context) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		log.Printf("subreaper: %v", err)
		return
	}
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				a.collectOrphans()
			}
		}
	}()
}

// collectOrphans waits for exited children that no daemon supervisor owns (exec.Cmd.Wait
// collects those; reaping them here would steal their exit status).
func (a *agent) collectOrphans() {
	owned := a.daemonPIDs()
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 || fields[0] != "Z" || fields[1] != strconv.Itoa(self) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err != nil || owned[pid] {
			continue
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// daemonPIDs is the set of daemon processes the supervisors are waiting for.
func (a *agent) daemonPIDs() map[int]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[int]bool{}
	for _, r := range a.running {
		for _, d := range r.daemons {
			if s := d.state(); s.pid > 0 {
				out[s.pid] = true
			}
		}
	}
	return out
}
