package kube

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestREADMEFigures keeps the README's account of API requests on the constants that own it.
func TestREADMEFigures(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("at most %d namespaces, each\ndropped after %d minutes unused", DefaultMaxWatchedNamespaces, int(DefaultWatchIdleTimeout.Minutes())),
		fmt.Sprintf("a name the API did not find within the last %d s", int(absentTTL.Seconds())),
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README does not say %q", want)
		}
	}
}
