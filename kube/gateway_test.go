package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
)

func gateway(name string, values ...string) *unstructured.Unstructured {
	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1",
		"kind":       "Gateway",
		"metadata":   map[string]any{"name": name, "namespace": "gw-ns"},
	}}
	if len(values) > 0 {
		var addrs []any
		for _, v := range values {
			addrs = append(addrs, map[string]any{"type": "IPAddress", "value": v})
		}
		gw.Object["status"] = map[string]any{"addresses": addrs}
	}
	return gw
}

func TestGatewayAddress(t *testing.T) {
	tests := []struct {
		name    string
		initial []runtime.Object
		later   []*unstructured.Unstructured // applied one by one once the client watches
		wait    time.Duration
		want    string
		wantErr string
	}{
		{name: "ip already set", initial: []runtime.Object{gateway("gw", "203.0.113.5")}, want: "203.0.113.5"},
		{name: "ipv6", initial: []runtime.Object{gateway("gw", "2001:db8::1")}, want: "2001:db8::1"},
		{name: "hostname", initial: []runtime.Object{gateway("gw", "lb.example.com")}, want: "lb.example.com"},
		{name: "skips invalid values", initial: []runtime.Object{gateway("gw", "http://evil/x", "127.1", "lb-2.example.com")}, want: "lb-2.example.com"},
		{
			name:    "address arrives through the watch",
			initial: []runtime.Object{gateway("gw"), gateway("other", "198.51.100.1")},
			later:   []*unstructured.Unstructured{gateway("other", "198.51.100.2"), gateway("gw", "evil.example.com/path"), gateway("gw", "198.51.100.9")},
			want:    "198.51.100.9",
		},
		{
			name:  "gateway created later",
			later: []*unstructured.Unstructured{gateway("gw", "198.51.100.10")},
			want:  "198.51.100.10",
		},
		{
			name:    "no address in time",
			initial: []runtime.Object{gateway("gw", "not a host")},
			wait:    300 * time.Millisecond,
			wantErr: `gateway "gw-ns/gw" has no address after 300ms`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, tt.initial...)
			watching := make(chan struct{}, 8)
			f.dyn.PrependWatchReactor("gateways", func(a clienttesting.Action) (bool, watch.Interface, error) {
				w, err := f.dyn.Tracker().Watch(a.GetResource(), a.GetNamespace(), a.(clienttesting.WatchActionImpl).ListOptions)
				select {
				case watching <- struct{}{}:
				default:
				}
				return true, w, err
			})
			done := make(chan error, 1)
			go func() {
				if len(tt.later) > 0 {
					select {
					case <-watching:
					case <-time.After(10 * time.Second):
						done <- errors.New("gateway never watched")
						return
					}
				}
				for _, gw := range tt.later {
					gws := f.dyn.Resource(gatewayGVR).Namespace("gw-ns")
					_, err := gws.Update(context.Background(), gw, metav1.UpdateOptions{})
					if err != nil {
						_, err = gws.Create(context.Background(), gw, metav1.CreateOptions{})
					}
					if err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			wait := tt.wait
			if wait == 0 {
				wait = 10 * time.Second
			}
			got, err := f.c.GatewayAddress(context.Background(), "gw-ns", "gw", wait)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrTimeout) {
					t.Fatalf("err = %v, want %q matching ErrTimeout", err, tt.wantErr)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("GatewayAddress = %q, %v; want %q", got, err, tt.want)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestGatewayAddressCancelled(t *testing.T) {
	f := newFakes(t, gateway("gw"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.c.GatewayAddress(ctx, "gw-ns", "gw", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestValidGatewayHostname(t *testing.T) {
	tests := map[string]bool{
		"lb.example.com": true, "LB.Example.COM": true, "a-b.c": true, "localhost": true, "1.example": true,
		"": false, "127.1": false, "0x7f.1": false, "0x": false, "2130706433": false,
		"-a.com": false, "a-.com": false, "a..com": false, ".a": false, "a.": false,
		"a_b.com": false, "a/b": false, "a:80": false, "user@host": false,
		strings.Repeat("a", 64) + ".com": false, strings.Repeat("a", 63) + ".com": true,
	}
	for in, want := range tests {
		if got := validGatewayHostname(in); got != want {
			t.Errorf("validGatewayHostname(%q) = %v, want %v", in, got, want)
		}
	}
}
