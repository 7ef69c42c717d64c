package kube

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// DefaultGatewayTimeout applies when GatewayAddress is given a non-positive wait.
const DefaultGatewayTimeout = 180 * time.Second

var gatewayGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}

// timeoutError keeps an exact message while matching ErrTimeout.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }
func (e *timeoutError) Unwrap() error { return ErrTimeout }

// GatewayAddress waits, by watch, until the Gateway publishes an address that is an IP or a
// DNS hostname, and returns it unbracketed. Other values (URLs, paths) are ignored because a
// tampered Gateway status must not redirect traffic to an arbitrary URL.
func (c *Client) GatewayAddress(ctx context.Context, namespace, name string, wait time.Duration) (string, error) {
	if wait <= 0 {
		wait = DefaultGatewayTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	gws := c.dyn.Resource(gatewayGVR).Namespace(namespace)
	rv, needGet, backoff := "", true, minBackoff
	for {
		if wctx.Err() != nil {
			if err := ctx.Err(); err != nil {
				return "", fmt.Errorf("waiting for gateway %q: %w", namespace+"/"+name, context.Cause(ctx))
			}
			return "", &timeoutError{msg: fmt.Sprintf("gateway %q has no address after %s", namespace+"/"+name, wait)}
		}
		if needGet {
			gw, err := gws.Get(wctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				rv = "" // a watch from "now" reports the Gateway if it gets created
			case err != nil && retryable(err):
				sleep(wctx, &backoff)
				continue
			case err != nil:
				return "", fmt.Errorf("getting gateway %q: %w", namespace+"/"+name, err)
			default:
				if addr := gatewayAddress(gw); addr != "" {
					return addr, nil
				}
				rv = gw.GetResourceVersion()
			}
			needGet = false
		}
		opts := metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: rv,
		}
		if dl, ok := wctx.Deadline(); ok {
			secs := max(int64(math.Ceil(time.Until(dl).Seconds())), 1)
			opts.TimeoutSeconds = &secs
		}
		watcher, err := gws.Watch(wctx, opts)
		if err != nil {
			switch {
			case wctx.Err() != nil:
			case apierrors.IsGone(err) || apierrors.IsResourceExpired(err):
				needGet = true
			case !retryable(err):
				return "", fmt.Errorf("watching gateway %q: %w", namespace+"/"+name, err)
			default:
				sleep(wctx, &backoff)
			}
			continue
		}
		addr, events, resync := drainGateway(wctx, watcher, name, &rv)
		watcher.Stop()
		if addr != "" {
			return addr, nil
		}
		needGet = resync
		if events > 0 {
			backoff = minBackoff
		} else {
			sleep(wctx, &backoff)
		}
	}
}

// drainGateway reads one stream until an address shows up, the stream ends, or an error event
// asks for a fresh GET.
func drainGateway(ctx context.Context, watcher watch.Interface, name string, rv *string) (addr string, events int, resync bool) {
	for {
		select {
		case <-ctx.Done():
			return "", events, false
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return "", events, false
			}
			events++
			if ev.Type == watch.Error {
				return "", events, true
			}
			gw, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || gw.GetName() != name {
				continue
			}
			if v := gw.GetResourceVersion(); v != "" {
				*rv = v
			}
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				if a := gatewayAddress(gw); a != "" {
					return a, events, false
				}
			}
		}
	}
}

// gatewayAddress returns the first status.addresses[].value that is an IP or a hostname.
func gatewayAddress(gw *unstructured.Unstructured) string {
	addrs, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
	for _, a := range addrs {
		m, ok := a.(map[string]any)
		if !ok {
			continue
		}
		v, _ := m["value"].(string)
		if validIP(v) || validGatewayHostname(v) {
			return v
		}
	}
	return ""
}

func validIP(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Zone() == ""
}

// validGatewayHostname mirrors the Python SDK's is_valid_gateway_hostname: RFC 1123 labels, and
// not made only of integer labels, which libc would resolve as an IP (e.g. "127.1", "0x7f.1").
func validGatewayHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	allInts := true
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
		allInts = allInts && integerLabel(l)
	}
	return !allInts
}

func integerLabel(l string) bool {
	lower := strings.ToLower(l)
	digits, base := lower, "0123456789"
	if strings.HasPrefix(lower, "0x") {
		digits, base = lower[2:], "0123456789abcdef"
		if digits == "" {
			return true
		}
	}
	return strings.Trim(digits, base) == ""
}
