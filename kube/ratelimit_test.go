package kube

import (
	"errors"
	"testing"

	"k8s.io/client-go/rest"
)

func TestRateLimitIsOneBucketForTheProcess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []Option
		wantQPS float32 // 0: no client-side limiter
		wantErr bool
	}{
		{"default", nil, DefaultQPS, false},
		{"configured", []Option{WithRateLimit(7, 9)}, 7, false},
		{"off", []Option{WithRateLimit(NoRateLimit, 0)}, 0, false},
		{"zero rate", []Option{WithRateLimit(0, 10)}, 0, true},
		{"zero burst", []Option{WithRateLimit(10, 0)}, 0, true},
		{"negative other than off", []Option{WithRateLimit(-5, 10)}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, testKey, append(tc.opts, WithMaxWatchedNamespaces(0))...)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("New: %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			claims := c.ext.ExtensionsV1beta1().RESTClient().GetRateLimiter()
			sandboxes := c.core.AgentsV1beta1().RESTClient().GetRateLimiter()
			if tc.wantQPS == 0 {
				if claims != nil || sandboxes != nil {
					t.Fatalf("limiters %v %v, want none", claims, sandboxes)
				}
				return
			}
			if claims == nil || claims != sandboxes {
				t.Fatalf("claims and sandboxes limiters %p %p: want one shared bucket", claims, sandboxes)
			}
			if claims.QPS() != tc.wantQPS {
				t.Errorf("QPS %v, want %v", claims.QPS(), tc.wantQPS)
			}
		})
	}
}
