package kube

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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

func TestNewWatchCacheOptions(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	tests := []struct {
		name     string
		opts     []Option
		wantErr  bool
		wantMax  int // 0: no cache
		wantIdle time.Duration
	}{
		{"defaults", nil, false, DefaultMaxWatchedNamespaces, DefaultWatchIdleTimeout},
		{"custom", []Option{WithMaxWatchedNamespaces(5), WithWatchIdleTimeout(time.Minute)}, false, 5, time.Minute},
		{"cache off", []Option{WithMaxWatchedNamespaces(0)}, false, 0, 0},
		{"negative cap", []Option{WithMaxWatchedNamespaces(-1)}, true, 0, 0},
		{"zero idle", []Option{WithWatchIdleTimeout(0)}, true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(cfg, testKey, tt.opts...)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			switch {
			case tt.wantMax == 0 && c.cache != nil:
				t.Errorf("cache built with a cap of 0")
			case tt.wantMax > 0 && (c.cache == nil || c.cache.max != tt.wantMax || c.cache.idle != tt.wantIdle):
				t.Errorf("cache %+v, want max %d idle %s", c.cache, tt.wantMax, tt.wantIdle)
			}
		})
	}
}
