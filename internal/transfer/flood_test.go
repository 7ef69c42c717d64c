package transfer

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
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
	const requests = 200
	for _, tc := range []struct {
		name, claim string
		maxGets     int
	}{
		{"wrong tokens of a claim", testClaim, 2}, // the watch cache's stand-in, then the API
		{"a claim that is not there", "no-such-claim", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, DefaultMaxBytes)
			good := e.create(t, "", "/f", Upload, 0)
			e.ext.ClearActions()
			var wg sync.WaitGroup
			codes := make([]int, requests)
			for w := range 8 {
				wg.Go(func() {
					for i := w; i < requests; i += 8 {
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
			if n := e.claimGets(); n > tc.maxGets {
				t.Errorf("%d wrong requests cost %d API GETs of the claim, want at most %d", requests, n, tc.maxGets)
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
