package cleanup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

type fakeClaims struct {
	mu      sync.Mutex
	owners  map[string]string // ns/name -> owner
	listErr error
}

func (f *fakeClaims) snapshot() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.owners)
}

func (f *fakeClaims) List(_ context.Context, ns, owner string) ([]kube.Claim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []kube.Claim
	for k, o := range f.owners {
		kns, name, _ := strings.Cut(k, "/")
		if o == owner && (ns == "" || kns == ns) {
			out = append(out, kube.Claim{Namespace: kns, Name: name})
		}
	}
	return out, nil
}

func (f *fakeClaims) Delete(_ context.Context, ns, name, owner string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.owners[ns+"/"+name] != owner {
		return kube.ErrNotFound
	}
	delete(f.owners, ns+"/"+name)
	return nil
}

// began records that owner creates in each namespace, and finishes at once with nothing created.
func began(t *testing.T, j *Janitor, owner string, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		done, err := j.Begin(owner, ns)
		if err != nil {
			t.Fatalf("Begin(%s, %s): %v", owner, ns, err)
		}
		if err := done(""); err != nil {
			t.Fatalf("done: %v", err)
		}
	}
}

func TestRelease(t *testing.T) {
	f := &fakeClaims{owners: map[string]string{"a/1": "alice", "a/2": "alice", "b/3": "alice", "a/4": "bob", "c/5": "alice"}}
	j := New(f, zerolog.Nop(), 5*time.Second)
	began(t, j, "alice", "a", "b")
	began(t, j, "bob", "a")
	n, err := j.Release(context.Background(), "alice", "test")
	if err != nil || n != 3 {
		t.Fatalf("released %d, %v", n, err)
	}
	var left []string
	for k := range f.owners {
		left = append(left, k)
	}
	sort.Strings(left)
	// c/5 is alice's but in a namespace this server never used for her: left for the TTL.
	if len(left) != 2 || left[0] != "a/4" || left[1] != "c/5" {
		t.Errorf("left %v", left)
	}
	if n, _ := j.Release(context.Background(), "alice", "again"); n != 0 {
		t.Errorf("second release deleted %d", n)
	}
}

func TestReleaseReportsErrors(t *testing.T) {
	f := &fakeClaims{owners: map[string]string{}, listErr: errors.New("boom")}
	j := New(f, zerolog.Nop(), time.Second)
	began(t, j, "o", "ns")
	if _, err := j.Release(context.Background(), "o", "test"); err == nil {
		t.Error("list failure not reported")
	}
}

// An ended owner is refused, a create in flight holds the release back until it is done, and
// a create that finishes after the release (which timed out waiting) deletes its own claim.
func TestReleaseIsExactAgainstCreates(t *testing.T) {
	t.Run("begin after release", func(t *testing.T) {
		j := New(&fakeClaims{owners: map[string]string{}}, zerolog.Nop(), time.Second)
		if _, err := j.Release(context.Background(), "o", "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Begin("o", "ns"); !errors.Is(err, ErrEnded) {
			t.Fatalf("Begin after release: %v", err)
		}
		if _, err := j.Begin("other", "ns"); err != nil {
			t.Fatalf("another owner: %v", err)
		}
	})
	t.Run("release waits", func(t *testing.T) {
		f := &fakeClaims{owners: map[string]string{}}
		j := New(f, zerolog.Nop(), 10*time.Second)
		done, err := j.Begin("o", "ns")
		if err != nil {
			t.Fatal(err)
		}
		released := make(chan int)
		go func() {
			n, _ := j.Release(context.Background(), "o", "test")
			released <- n
		}()
		select {
		case n := <-released:
			t.Fatalf("release finished (%d) while a create ran", n)
		case <-time.After(100 * time.Millisecond):
		}
		f.mu.Lock()
		f.owners["ns/new"] = "o" // the claim the create made
		f.mu.Unlock()
		// done runs after the mark: it deletes its own claim and reports the end.
		err = done("new")
		<-released
		if !errors.Is(err, ErrEnded) {
			t.Errorf("done after release began: %v", err)
		}
		if len(f.snapshot()) != 0 {
			t.Errorf("left %v", f.snapshot())
		}
	})
	t.Run("late create deletes its claim", func(t *testing.T) {
		f := &fakeClaims{owners: map[string]string{}}
		j := New(f, zerolog.Nop(), 50*time.Millisecond)
		done, err := j.Begin("o", "ns")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Release(context.Background(), "o", "test"); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		f.owners["ns/late"] = "o"
		f.mu.Unlock()
		err = done("late")
		if !errors.Is(err, ErrEnded) || !strings.Contains(err.Error(), `its sandbox "late" was deleted`) {
			t.Errorf("done: %v", err)
		}
		if len(f.snapshot()) != 0 {
			t.Errorf("left %v", f.snapshot())
		}
	})
	t.Run("failed create", func(t *testing.T) {
		j := New(&fakeClaims{owners: map[string]string{}}, zerolog.Nop(), time.Second)
		done, _ := j.Begin("o", "ns")
		if _, err := j.Release(context.Background(), "o", "test"); err != nil {
			t.Fatal(err)
		}
		if err := done(""); err != nil {
			t.Errorf("done with nothing created: %v", err)
		}
	})
}

// Ended owners are forgotten after the retention, so marks do not pile up.
func TestEndedOwnersArePruned(t *testing.T) {
	j := New(&fakeClaims{owners: map[string]string{}}, zerolog.Nop(), time.Second)
	now := time.Now()
	j.now = func() time.Time { return now }
	for i := range 100 {
		_, _ = j.Release(context.Background(), fmt.Sprint("o", i), "test")
	}
	now = now.Add(endedRetention + time.Minute)
	_, _ = j.Release(context.Background(), "last", "test")
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.owners) != 1 || len(j.ended) != 1 {
		t.Errorf("after retention: %d owners, %d marks", len(j.owners), len(j.ended))
	}
}

// Issue 30.3: a restarted stdio process with a fixed owner releases what the earlier process
// of that owner left in the namespaces it includes, though it created nothing there itself.
func TestReleaseIncludesInheritedNamespaces(t *testing.T) {
	f := &fakeClaims{owners: map[string]string{"ns1/old": "stdio-me", "ns2/old": "stdio-me", "ns3/kept": "stdio-me", "ns1/other": "stdio-you"}}
	j := New(f, zerolog.Nop(), time.Second)
	j.Include("stdio-me", "ns1", "", "ns2")
	n, err := j.Release(context.Background(), "stdio-me", "stdio closed")
	if err != nil || n != 2 {
		t.Fatalf("Release = %d, %v; want 2", n, err)
	}
	want := map[string]string{"ns3/kept": "stdio-me", "ns1/other": "stdio-you"}
	if got := f.snapshot(); !maps.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
}
