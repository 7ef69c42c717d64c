package main

import (
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

var errNoIP = errors.New("no free pod IP left in 127.0.0.2-250")

// ipam hands out the last octet of 127.0.0.N to pods. Allocation is round-robin so a freed
// address is not reused at once: clients (the router's cache) may still hold it briefly.
type ipam struct {
	mu    sync.Mutex
	owner map[int]types.UID
	next  int
}

func newIPAM() *ipam { return &ipam{owner: map[int]types.UID{}, next: firstIP} }

// allocate returns the address of uid, reserving prefer if it is free (to keep the IP a pod
// had before the agent restarted), or else the next free one.
func (a *ipam) allocate(uid types.UID, prefer int) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for n, o := range a.owner {
		if o == uid {
			return n, nil
		}
	}
	if prefer >= firstIP && prefer <= lastIP {
		if _, taken := a.owner[prefer]; !taken {
			a.owner[prefer] = uid
			return prefer, nil
		}
	}
	for i := 0; i <= lastIP-firstIP; i++ {
		n := firstIP + (a.next-firstIP+i)%(lastIP-firstIP+1)
		if _, taken := a.owner[n]; !taken {
			a.owner[n] = uid
			a.next = n + 1
			return n, nil
		}
	}
	return 0, errNoIP
}

// release frees n if uid holds it.
func (a *ipam) release(uid types.UID, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.owner[n] == uid {
		delete(a.owner, n)
	}
}
