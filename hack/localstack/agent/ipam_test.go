package main

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestIPAM(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, a *ipam)
	}{
		{"first allocation is the first pod IP", func(t *testing.T, a *ipam) {
			if n, err := a.allocate("a", 0); err != nil || n != firstIP {
				t.Fatalf("got %d %v, want %d", n, err, firstIP)
			}
		}},
		{"same uid gets the same IP", func(t *testing.T, a *ipam) {
			n1, _ := a.allocate("a", 0)
			n2, _ := a.allocate("a", 0)
			if n1 != n2 {
				t.Fatalf("%d != %d", n1, n2)
			}
		}},
		{"a free preferred IP is honoured", func(t *testing.T, a *ipam) {
			if n, _ := a.allocate("a", 77); n != 77 {
				t.Fatalf("got %d, want 77", n)
			}
		}},
		{"a taken preferred IP is not shared", func(t *testing.T, a *ipam) {
			_, _ = a.allocate("a", 77)
			if n, _ := a.allocate("b", 77); n == 77 {
				t.Fatal("two pods share 77")
			}
		}},
		{"out of range preference is ignored", func(t *testing.T, a *ipam) {
			if n, _ := a.allocate("a", 254); n != firstIP {
				t.Fatalf("got %d", n)
			}
		}},
		{"a released IP is not reused at once", func(t *testing.T, a *ipam) {
			n, _ := a.allocate("a", 0)
			a.release("a", n)
			if m, _ := a.allocate("b", 0); m == n {
				t.Fatalf("reused %d immediately", n)
			}
		}},
		{"release by a non-owner is ignored", func(t *testing.T, a *ipam) {
			n, _ := a.allocate("a", 0)
			a.release("b", n)
			if m, _ := a.allocate("c", n); m == n {
				t.Fatal("foreign release freed the IP")
			}
		}},
		{"exhaustion is an error and a release makes room", func(t *testing.T, a *ipam) {
			for i := firstIP; i <= lastIP; i++ {
				if _, err := a.allocate(types.UID(rune('a'+i)), 0); err != nil {
					t.Fatalf("allocation %d: %v", i, err)
				}
			}
			if _, err := a.allocate("extra", 0); !errors.Is(err, errNoIP) {
				t.Fatalf("got %v, want errNoIP", err)
			}
			a.release(types.UID(rune('a'+100)), 100)
			if n, err := a.allocate("extra", 0); err != nil || n != 100 {
				t.Fatalf("got %d %v, want 100", n, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newIPAM()) })
	}
}

func TestIPIndex(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		inOK bool
	}{
		{"127.0.0.2", 2, true},
		{"127.0.0.250", 250, true},
		{"127.0.0.254", 254, false},
		{"127.0.0.1", 1, false},
		{"127.0.1.5", 0, false},
		{"10.0.0.5", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		n, ok := ipIndex(tt.in)
		if ok != tt.inOK || (ok && n != tt.n) {
			t.Errorf("ipIndex(%q) = %d %v, want %d %v", tt.in, n, ok, tt.n, tt.inOK)
		}
		if ok && podIP(n).String() != tt.in {
			t.Errorf("podIP(%d) = %s", n, podIP(n))
		}
	}
}
