package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// machine describes where the figures come from.
type machine struct {
	cpuModel  string
	cpus      int
	memTotal  string
	kernel    string
	goVersion string
	loadStart string
	loadEnd   string
}

func describeMachine(ctx context.Context) machine {
	m := machine{cpus: runtime.NumCPU(), goVersion: runtime.Version(), loadStart: loadAvg()}
	m.cpuModel = firstField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseFloat(strings.TrimSuffix(firstField("/proc/meminfo", "MemTotal"), " kB"), 64); err == nil {
		m.memTotal = strconv.FormatFloat(kb/(1<<20), 'f', 1, 64) + " GiB"
	}
	if out, err := exec.CommandContext(ctx, "uname", "-sr").Output(); err == nil {
		m.kernel = strings.TrimSpace(string(out))
	}
	if out, err := exec.CommandContext(ctx, "go", "version").Output(); err == nil {
		m.goVersion = strings.TrimPrefix(strings.TrimSpace(string(out)), "go version ")
	}
	return m
}

func (m machine) rows() [][2]string {
	return [][2]string{
		{"CPU", m.cpuModel},
		{"cores (nproc)", strconv.Itoa(m.cpus)},
		{"memory", m.memTotal},
		{"kernel", m.kernel},
		{"Go", m.goVersion},
		{"load average (1/5/15 min) at start / end", m.loadStart + " / " + m.loadEnd},
		{"note", "the machine is shared: other builds and tests may run during the benchmark"},
	}
}

// firstField returns the value of the first "name : value" line of a /proc file.
func firstField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
