package transfer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/readgate"
)

// claimGets counts the GETs of sandbox claims the server has sent to the (fake) API.
func (e *env) claimGets() int {
	n := 0
	for _, a := range e.ext.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "sandboxclaims" {
			n++
		}
	}
	return n
}

// Issue 43.5: a flood of wrong tokens, or of a claim that is not there, costs one or two API
// reads of the claim, not one per request (the /ports rule, readgate); the URL handed out
// keeps working through it.
func TestWrongTokensCostNoReadEach(t *testing.T) {
	const requests, workers = 200, 8
	// The fake client has no watch cache, so its reads cost a GET too: the requests that race
	// the first API read (at most one per worker) each cost one more, then none does.
	const maxGets = workers + 1
	for _, tc := range []struct{ name, claim string }{
		{"wrong tokens of a claim", testClaim},
		{"a claim that is not there", "no-such-claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, DefaultMaxBytes)
			good := e.create(t, "", "/f", Upload, 0)
			e.ext.ClearActions()
			var wg sync.WaitGroup
			codes := make([]int, requests)
			for w := range workers {
				wg.Go(func() {
					for i := w; i < requests; i += workers {
						req, _ := http.NewRequest(http.MethodPut, e.url+PathPrefix+testNS+"/"+tc.claim+"/wrong-"+strconv.Itoa(i), strings.NewReader("x"))
						if resp, err := http.DefaultClient.Do(req); err == nil {
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							codes[i] = resp.StatusCode
						}
					}
				})
			}
			wg.Wait()
			for i, c := range codes {
				if c != http.StatusNotFound {
					t.Fatalf("wrong request %d: %d, want 404", i, c)
				}
			}
			if n := e.claimGets(); n > maxGets {
				t.Errorf("%d wrong requests cost %d API GETs of the claim, want at most %d", requests, n, maxGets)
			}
			req, _ := http.NewRequest(http.MethodPut, good, strings.NewReader("data"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("the URL handed out, after the flood: %d", resp.StatusCode)
			}
		})
	}
}

// Issue 43.5: a request through a transfer URL is held to the caller's caps (the call cap while
// it is checked, the stream cap while it runs); a refusal is 429 and does not spend the URL.
func TestLimitsRefuseWithoutSpending(t *testing.T) {
	e := newEnv(t, DefaultMaxBytes)
	u := e.create(t, "", "/f", Upload, 0)
	refuse := func(context.Context) (func(), error) {
		return nil, errors.New("too many concurrent calls for this principal")
	}
	taken, released := 0, 0
	allow := func(context.Context) (func(), error) { taken++; return func() { released++ }, nil }
	put := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPut, u, strings.NewReader("data"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, l := range []readgate.Limits{{Check: refuse, Stream: allow}, {Check: allow, Stream: refuse}} {
		e.reg.SetLimits(l)
		if code, body := put(); code != http.StatusTooManyRequests || !strings.Contains(body, "too many concurrent calls") ||
			!strings.Contains(body, "the URL is not spent") {
			t.Fatalf("past a cap: %d %q", code, body)
		}
	}
	e.reg.SetLimits(readgate.Limits{Check: allow, Stream: allow})
	if code, body := put(); code != http.StatusOK {
		t.Fatalf("within the caps: %d %q", code, body)
	}
	if taken != released || taken != 3 {
		t.Errorf("places taken %d, released %d; want 3 and 3", taken, released)
	}
}
