package kube

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestREADMEFigures keeps the README's figures (API requests, exposed ports) on the constants that own them.
func TestREADMEFigures(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("at most %d namespaces, each\ndropped after %d minutes unused", DefaultMaxWatchedNamespaces, int(DefaultWatchIdleTimeout.Minutes())),
		fmt.Sprintf("a name the API did not find within the last %d s", int(absentTTL.Seconds())),
		fmt.Sprintf("At most %d ports per\n  sandbox (`kube.MaxExposedPorts`)", MaxExposedPorts),
		fmt.Sprintf("the newest %d of a port keep\n  working", maxTokensPerPort),
		fmt.Sprintf("renewed every %d s, live for %d s)", int(holdRenewEvery.Seconds()), int(HoldDuration.Seconds())),
		fmt.Sprintf("stops renewing; %d s later its Lease", int(HoldDuration.Seconds())),
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README does not say %q", want)
		}
	}
}
