package cleanup

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

type fakeClaims struct {
	owners  map[string]string // ns/name -> owner
	listErr error
}

func (f *fakeClaims) List(_ context.Context, ns, owner string) ([]kube.Claim, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []kube.Claim
	for k, o := range f.owners {
		if o == owner && k[:len(ns)+1] == ns+"/" {
			out = append(out, kube.Claim{Namespace: ns, Name: k[len(ns)+1:]})
		}
	}
	return out, nil
}

func (f *fakeClaims) Delete(_ context.Context, ns, name, owner string) error {
	if f.owners[ns+"/"+name] != owner {
		return kube.ErrNotFound
	}
	delete(f.owners, ns+"/"+name)
	return nil
}

func TestRelease(t *testing.T) {
	f := &fakeClaims{owners: map[string]string{"a/1": "alice", "a/2": "alice", "b/3": "alice", "a/4": "bob", "c/5": "alice"}}
	j := New(f, zerolog.Nop(), 5*time.Second)
	j.Created("alice", "a")
	j.Created("alice", "b")
	j.Created("bob", "a")
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

func TestReleaseReportsErrorsAndAsync(t *testing.T) {
	f := &fakeClaims{owners: map[string]string{}, listErr: errors.New("boom")}
	j := New(f, zerolog.Nop(), time.Second)
	j.Created("o", "ns")
	if _, err := j.Release(context.Background(), "o", "test"); err == nil {
		t.Error("list failure not reported")
	}
	f.listErr = nil
	f.owners["ns/x"] = "o"
	j.Created("o", "ns")
	j.ReleaseAsync("o", "async")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	j.Wait(ctx)
	if len(f.owners) != 0 {
		t.Errorf("async release left %v", f.owners)
	}
}
