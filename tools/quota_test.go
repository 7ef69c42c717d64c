package tools

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCapHoldsUnderConcurrentCreates: with a cap of 3, twenty creates at once (each taking a
// while) leave exactly 3 sandboxes, whether they come from one owner or from twenty sessions
// of one principal; another principal still gets its own 3.
func TestCapHoldsUnderConcurrentCreates(t *testing.T) {
	const limit, callers = 3, 20
	tests := []struct {
		name   string
		owners bool // a new owner (session) per call, one principal behind them all
	}{
		{"one owner", false},
		{"one principal, many sessions", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			h := newHarness(t, func(d *Deps, f *fakeClaims) {
				d.MaxSandboxesPerOwner = limit
				f.delay = 20 * time.Millisecond
				if tt.owners {
					d.Owner = func(context.Context) (string, error) { return fmt.Sprintf("session-%d", n.Add(1)), nil }
					d.Principal = func(context.Context) (string, error) { return "p-alice", nil }
				}
			})
			var wg sync.WaitGroup
			var ok, refused atomic.Int64
			for range callers {
				wg.Go(func() {
					res := h.call(t, "create_sandbox", map[string]any{"warmpool": "p"})
					switch {
					case !res.IsError:
						ok.Add(1)
					case strings.Contains(text(res), "the most this server allows"):
						refused.Add(1)
					default:
						t.Errorf("unexpected error: %s", text(res))
					}
				})
			}
			wg.Wait()
			if ok.Load() != limit || refused.Load() != callers-limit {
				t.Errorf("%d created, %d refused; want %d and %d", ok.Load(), refused.Load(), limit, callers-limit)
			}
			if got := len(h.claims.claims); got != limit {
				t.Errorf("%d claims exist, want %d", got, limit)
			}
		})
	}
}

func TestCapCountsThePrincipalNotTheOwner(t *testing.T) {
	principal := "p-alice"
	h := newHarness(t, func(d *Deps, _ *fakeClaims) {
		d.MaxSandboxesPerOwner = 1
		d.Principal = func(context.Context) (string, error) { return principal, nil }
	})
	if res := h.call(t, "create_sandbox", map[string]any{"warmpool": "p"}); res.IsError {
		t.Fatal(text(res))
	}
	if got := h.claims.created[0].Principal; got != principal {
		t.Errorf("claim labelled with principal %q, want %q", got, principal)
	}
	want := "you already have 1 live sandboxes, the most this server allows; " +
		"delete one with delete_sandbox (list_sandboxes lists them) and retry"
	if res := h.call(t, "create_sandbox", map[string]any{"warmpool": "p"}); text(res) != want {
		t.Errorf("second create: %s", text(res))
	}
	principal = "p-bob"
	if res := h.call(t, "create_sandbox", map[string]any{"warmpool": "p"}); res.IsError {
		t.Errorf("another principal was refused: %s", text(res))
	}
}
