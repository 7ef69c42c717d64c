package ports

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestREADMECheckInterval keeps the README's "within N s" on StreamsEndWithin.
func TestREADMECheckInterval(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("replica end within %d s.", int(StreamsEndWithin.Seconds()))
	if !strings.Contains(string(b), want) {
		t.Errorf("README does not say %q", want)
	}
}
