package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestExposuresLiveOnTheClaim(t *testing.T) {
	ctx := context.Background()
	mine := claimObj(testNS, "mine", map[string]string{testKey: testOwner}, readyStatus("sb", "10.0.0.7"))
	foreign := claimObj(testNS, "foreign", map[string]string{"app": "x"}, readyStatus("sb2"))
	f := newFakes(t, mine, foreign, sandboxObj(testNS, "sb", "", []string{"10.0.0.7"}))
	c := f.c

	for i := range maxTokensPerPort + 1 {
		if err := c.Expose(ctx, testNS, "mine", testOwner, 8000, "static:alice", fmt.Sprint("h", i)); err != nil {
			t.Fatal(err)
		}
	}
	claim, got, err := c.Exposed(ctx, testNS, "mine", false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"h1", "h2", "h3", "h4"} // the newest maxTokensPerPort
	if e := got[8000]; e.Principal != "static:alice" || !slices.Equal(e.Tokens, want) || len(got) != 1 {
		t.Errorf("exposures %+v, want port 8000 of static:alice with %v", got, want)
	}
	if claim.SandboxName != "sb" || !slices.Equal(claim.PodIPs, []string{"10.0.0.7"}) {
		t.Errorf("claim %+v", claim)
	}
	// Another principal exposing the port replaces the tokens: the old URLs were not theirs.
	if err := c.Expose(ctx, testNS, "mine", testOwner, 8000, "static:bob", "b0"); err != nil {
		t.Fatal(err)
	}
	if _, got, _ := c.Exposed(ctx, testNS, "mine", false); !slices.Equal(got[8000].Tokens, []string{"b0"}) {
		t.Errorf("after another principal: %+v", got[8000])
	}

	for p := 1; len(got) < MaxExposedPorts; p++ {
		if err := c.Expose(ctx, testNS, "mine", testOwner, p, "", "t"); err != nil {
			t.Fatal(err)
		}
		_, got, _ = c.Exposed(ctx, testNS, "mine", false)
	}
	if err := c.Expose(ctx, testNS, "mine", testOwner, 9999, "", "t"); !errors.Is(err, ErrTooManyPorts) {
		t.Errorf("port %d: %v, want ErrTooManyPorts", MaxExposedPorts+1, err)
	}
	if err := c.Expose(ctx, testNS, "mine", testOwner, 8000, "", "t"); err != nil {
		t.Errorf("a new URL for an exposed port at the cap: %v", err)
	}

	cases := []struct {
		name, claim, owner string
		port               int
		found              bool
		err                error
		left               int
	}{
		{"another owner", "mine", "session-2", 0, false, ErrNotFound, MaxExposedPorts},
		{"a port not exposed", "mine", testOwner, 9999, false, nil, MaxExposedPorts},
		{"one port", "mine", testOwner, 8000, true, nil, MaxExposedPorts - 1},
		{"every port", "mine", testOwner, 0, true, nil, 0},
		{"nothing left", "mine", testOwner, 0, false, nil, 0},
	}
	for _, tc := range cases {
		found, err := c.Unexpose(ctx, testNS, tc.claim, tc.owner, tc.port)
		if found != tc.found || !errors.Is(err, tc.err) {
			t.Errorf("%s: unexpose %v %v, want %v %v", tc.name, found, err, tc.found, tc.err)
		}
		if _, got, _ := c.Exposed(ctx, testNS, "mine", false); len(got) != tc.left {
			t.Errorf("%s: %d ports left, want %d", tc.name, len(got), tc.left)
		}
	}
	for _, name := range []string{"foreign", "absent"} {
		if _, _, err := c.Exposed(ctx, testNS, name, false); !errors.Is(err, ErrNotFound) {
			t.Errorf("Exposed(%s): %v, want not found", name, err)
		}
	}
	if err := c.Expose(ctx, testNS, "foreign", testOwner, 80, "", "t"); !errors.Is(err, ErrNotFound) {
		t.Errorf("exposing a claim the server did not make: %v", err)
	}
}
