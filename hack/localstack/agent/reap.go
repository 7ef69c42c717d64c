package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// uidRange is an inclusive range of sandbox uids.
type uidRange struct{ first, last int }

func (r uidRange) contains(uid int) bool { return uid >= r.first && uid <= r.last }

// reapUIDs SIGKILLs every process whose real or effective uid is in r until none is left.
// Sandbox commands start their own process groups and sessions, so killing the daemons'
// process groups is not enough; the per-pod uid is what reliably marks a pod's processes.
func reapUIDs(ctx context.Context, r uidRange) (int, error) {
	killed := 0
	for attempt := 0; attempt < 50; attempt++ {
		pids, err := pidsOfUIDs(r)
		if err != nil {
			return killed, err
		}
		if len(pids) == 0 {
			return killed, nil
		}
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed++
			}
		}
		select {
		case <-ctx.Done():
			return killed, fmt.Errorf("reap uids %d-%d: %w", r.first, r.last, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	pids, _ := pidsOfUIDs(r)
	if len(pids) > 0 {
		return killed, fmt.Errorf("processes of uids %d-%d survive SIGKILL: %v", r.first, r.last, pids)
	}
	return killed, nil
}

// pidsOfUIDs lists live (non-zombie) processes whose real or effective uid is in r.
func pidsOfUIDs(r uidRange) ([]int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		uids, state, ok := procUIDs(d)
		if !ok || state == "Z" {
			continue
		}
		for _, u := range uids {
			if r.contains(u) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}

// procUIDs reads the real and effective uid and the state letter from /proc/<pid>/status.
func procUIDs(dir string) (uids []int, state string, ok bool) {
	f, err := os.Open(filepath.Join(dir, "status"))
	if err != nil {
		return nil, "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "State:"):
			if f := strings.Fields(line); len(f) > 1 {
				state = f[1]
			}
		case strings.HasPrefix(line, "Uid:"):
			f := strings.Fields(line)
			for _, s := range f[1:min(3, len(f))] {
				if u, err := strconv.Atoi(s); err == nil {
					uids = append(uids, u)
				}
			}
			return uids, state, true
		}
	}
	return nil, "", false
}
