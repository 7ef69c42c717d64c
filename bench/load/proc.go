package load

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcStatus reads a size field of /proc/<pid>/status (VmRSS, VmHWM, RssAnon, ...) in bytes.
func ProcStatus(pid int, field string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status %s: %w", pid, field, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// GoroutineSlack is how many goroutines above its baseline a replica may keep and still count
// as back: scrapes and timers come and go.
const GoroutineSlack = 3

// GoroutinesBack polls each replica's go_goroutines until every one is within GoroutineSlack of
// before, or within has passed (the gRPC connections to deleted sandboxes close 30 s after their
// last call). It returns the last reading and whether they came back.
func GoroutinesBack(ctx context.Context, metricsURLs []string, before []int, within time.Duration) ([]int, bool, error) {
	deadline := time.Now().Add(within)
	for {
		after, err := Goroutines(metricsURLs)
		if err != nil {
			return nil, false, err
		}
		back := len(after) == len(before)
		for i := 0; back && i < len(after); i++ {
			back = after[i] <= before[i]+GoroutineSlack
		}
		if back || time.Now().After(deadline) {
			return after, back, nil
		}
		select {
		case <-ctx.Done():
			return after, false, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
