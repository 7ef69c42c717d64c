// Package usage reads what a sandbox consumes from inside it: the disk use of its working
// directory and, when the cluster's metrics API has nothing, CPU and memory from its cgroup
// (v2 or v1), computed the way metrics-server does (CPU over an interval, memory as the
// working set: usage minus inactive file pages).
package usage

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// Execer is the part of conn.Conn the sampler needs.
type Execer interface {
	Exec(ctx context.Context, t conn.Target, req conn.ExecRequest) (conn.ExecResult, error)
}

// Figures are what the sandbox said; a negative value is unknown.
type Figures struct {
	DiskUsedBytes  int64 // the working directory, this filesystem only (du -x)
	DiskTotalBytes int64 // size of the filesystem it is on
	DiskFreeBytes  int64 // free on that filesystem for unprivileged users
	Cgroup         bool  // the CPU and memory fields below were read
	CPUMillis      int64
	MemoryBytes    int64
	CPULimitMillis int64 // 0: unlimited
	MemLimitBytes  int64 // 0: unlimited
}

// script prints, with $1 = 1, the cgroup's "cpu BEFORE AFTER UNIT T0 T1" (sampled over $2
// seconds), "mem USAGE INACTIVE LIMIT" and "cpumax QUOTA PERIOD", then "disk USED_KB SIZE_KB
// AVAIL_KB": the cgroup first and du last, under a timeout of its own, so a huge tree costs only
// the disk figure. Fields are printed as read (awk prints a field verbatim), so no 64-bit
// arithmetic in the shell.
const script = `cg=$1 iv=$2
c=/sys/fs/cgroup unit=
if [ "$cg" = 1 ] && [ -r $c/cpu.stat ]; then
  cpu() { awk '$1=="usage_usec"{print $2}' $c/cpu.stat; }; unit=us
  mem="$(cat $c/memory.current) $(awk '$1=="inactive_file"{print $2}' $c/memory.stat) $(cat $c/memory.max)"
  cpumax=$(cat $c/cpu.max)
elif [ "$cg" = 1 ] && [ -r $c/cpuacct/cpuacct.usage ]; then
  cpu() { cat $c/cpuacct/cpuacct.usage; }; unit=ns
  mem="$(cat $c/memory/memory.usage_in_bytes) $(awk '$1=="total_inactive_file"{print $2}' $c/memory/memory.stat) $(cat $c/memory/memory.limit_in_bytes)"
  cpumax="$(cat $c/cpu/cpu.cfs_quota_us) $(cat $c/cpu/cpu.cfs_period_us)"
fi
if [ -n "$unit" ]; then
  a=$(cpu); t0=$(cut -d' ' -f1 /proc/uptime); sleep "$iv"; b=$(cpu); t1=$(cut -d' ' -f1 /proc/uptime)
  echo "cpu $a $b $unit $t0 $t1"
  echo "mem $mem"
  echo "cpumax $cpumax"
fi
set -- $(df -Pk . 2>/dev/null | awk 'NR==2{print $2, $4}')
if command -v timeout >/dev/null 2>&1; then du=$(timeout 5 du -skx . 2>/dev/null | cut -f1); else du=$(du -skx . 2>/dev/null | cut -f1); fi
echo "disk ${du:--1} ${1:--1} ${2:--1}"`

// SampleSeconds is how long the in-sandbox CPU sample spans.
const SampleSeconds = 1

// Sample runs the script in the sandbox; cgroup asks for CPU and memory too (SampleSeconds longer).
func Sample(ctx context.Context, e Execer, t conn.Target, cgroup bool, timeout time.Duration) (Figures, error) {
	flag := "0"
	if cgroup {
		flag = "1"
	}
	o, err := conn.RunScript(ctx, e.Exec, t, conn.Script{Argv: []string{"/bin/sh", "-c", script, "sh", flag, strconv.Itoa(SampleSeconds)}, Timeout: timeout, MaxStdout: 4 << 10})
	if err != nil {
		return Figures{}, err
	}
	if o.ExitCode != 0 {
		return Figures{}, fmt.Errorf("usage: %w", o.Failure(o.ExitCode))
	}
	return parse(o.Stdout)
}

func parse(out string) (Figures, error) {
	f := Figures{DiskUsedBytes: -1, DiskTotalBytes: -1, DiskFreeBytes: -1, CPUMillis: -1, MemoryBytes: -1, CPULimitMillis: -1, MemLimitBytes: -1}
	var cpuSeen, memSeen bool
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) == 0 {
			continue
		}
		switch {
		case w[0] == "disk" && len(w) == 4:
			f.DiskUsedBytes, f.DiskTotalBytes, f.DiskFreeBytes = kib(w[1]), kib(w[2]), kib(w[3])
		case w[0] == "cpu" && len(w) == 6:
			f.CPUMillis, cpuSeen = cpuRate(w[1], w[2], w[3], w[4], w[5])
		case w[0] == "mem" && len(w) == 4:
			usage, e1 := strconv.ParseInt(w[1], 10, 64)
			inactive, e2 := strconv.ParseInt(w[2], 10, 64)
			if e1 == nil && e2 == nil {
				f.MemoryBytes, memSeen = max(usage-inactive, 0), true
			}
			f.MemLimitBytes = memLimit(w[3])
		case w[0] == "cpumax" && len(w) == 3:
			f.CPULimitMillis = cpuLimit(w[1], w[2])
		}
	}
	f.Cgroup = cpuSeen && memSeen
	if f.DiskUsedBytes < 0 && !f.Cgroup {
		return f, fmt.Errorf("usage: the sandbox's answer had no figures: %q", strings.TrimSpace(out))
	}
	return f, nil
}

func kib(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n << 10
}

// cpuRate is millicores over the sample: CPU time used per second of uptime.
func cpuRate(before, after, unit, t0, t1 string) (int64, bool) {
	a, e1 := strconv.ParseInt(before, 10, 64)
	b, e2 := strconv.ParseInt(after, 10, 64)
	s0, e3 := strconv.ParseFloat(t0, 64)
	s1, e4 := strconv.ParseFloat(t1, 64)
	if e1 != nil || e2 != nil || e3 != nil || e4 != nil || s1 <= s0 || b < a {
		return -1, false
	}
	ns := float64(b - a)
	if unit == "us" {
		ns *= 1000
	}
	return int64(ns / 1e6 / (s1 - s0)), true
}

// memLimit reads memory.max ("max") or memory.limit_in_bytes (a page-rounded 2^63 when
// unlimited); 0 is unlimited, -1 unreadable.
func memLimit(s string) int64 {
	if s == "max" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil || n < 0:
		return -1
	case n >= 1<<62:
		return 0
	}
	return n
}

// cpuLimit reads cpu.max ("max 100000") or cfs quota and period ("-1 100000"); 0 is
// unlimited, -1 unreadable.
func cpuLimit(quota, period string) int64 {
	if quota == "max" || quota == "-1" {
		return 0
	}
	q, e1 := strconv.ParseInt(quota, 10, 64)
	p, e2 := strconv.ParseInt(period, 10, 64)
	if e1 != nil || e2 != nil || q <= 0 || p <= 0 {
		return -1
	}
	return q * 1000 / p
}
