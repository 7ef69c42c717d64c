package kube

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

func TestNewWiresRealClients(t *testing.T) {
	var gotPath, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery = r.URL.Path, r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaimList","metadata":{},"items":[]}`))
	}))
	defer srv.Close()

	c, err := New(&rest.Config{Host: srv.URL}, testKey)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := c.Probe(context.Background(), "probe-ns"); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if want := "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/probe-ns/sandboxclaims"; gotPath != want || gotQuery != "limit=1" {
		t.Errorf("Probe requested %s?%s, want %s?limit=1", gotPath, gotQuery, want)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	if _, err := New(&rest.Config{Host: "http://127.0.0.1:1"}, "not a key"); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad owner key: err = %v, want ErrInvalid", err)
	}
	if _, err := New(nil, testKey); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil config: err = %v, want ErrInvalid", err)
	}
}
