package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

const maxDocumentBytes = 1 << 20

// fetcher is the http.RoundTripper under every request go-oidc makes (discovery and JWKS).
// go-oidc refetches the JWKS whenever a token names a key it has not cached, which is how it
// follows key rotation, but with no limit: a flood of tokens with made-up kids would make the
// server hammer the issuer. The fetcher goes to the network for a URL at most once per
// minRefresh and answers from the last good copy in between; when a fetch fails it answers
// from the last good copy too, so a flaky issuer does not log everyone out. It also confines
// fetches to https (http on loopback only) and caps document size, which go-oidc does not.
type fetcher struct {
	client     *http.Client // the network side: timeout and redirect policy
	minRefresh time.Duration
	now        func() time.Time
	// validate decides whether a body is good enough to replace the last good copy.
	validate func(url string, body []byte) error

	// mu is held across a network fetch: fetches are rare, and holding it means concurrent
	// callers wait for one answer rather than start their own.
	mu   sync.Mutex
	docs map[string]*document
}

type document struct {
	triedAt time.Time
	body    []byte // last good answer; nil until one arrives
	err     error  // the last fetch's failure, nil after a success
}

func newFetcher(client *http.Client, minRefresh time.Duration, now func() time.Time, validate func(url string, body []byte) error) *fetcher {
	return &fetcher{client: client, minRefresh: minRefresh, now: now, validate: validate, docs: map[string]*document{}}
}

// Client is the client to hand go-oidc (through oidc.ClientContext).
func (f *fetcher) Client() *http.Client { return &http.Client{Transport: f} }

func (f *fetcher) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if req.Method != http.MethodGet {
		return nil, fmt.Errorf("auth: refusing %s %s: only GET is used for discovery and keys", req.Method, req.URL)
	}
	url := req.URL.String()
	if err := checkFetchURL(url); err != nil {
		return nil, fmt.Errorf("fetching %s: the URL %w", url, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.docs[url]
	if d == nil {
		d = &document{}
		f.docs[url] = d
	}
	if d.triedAt.IsZero() || f.now().Sub(d.triedAt) >= f.minRefresh {
		d.triedAt = f.now()
		body, err := f.get(req.Context(), url)
		if err == nil {
			d.body, d.err = body, nil
		} else {
			d.err = err
		}
	}
	if d.body == nil {
		if d.err == nil {
			d.err = errors.New("not fetched yet")
		}
		return nil, d.err
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(d.body)),
		ContentLength: int64(len(d.body)),
		Request:       req,
	}, nil
}

// state reports whether url has a good copy, and the last failure to fetch it.
func (f *fetcher) state(url string) (fetched bool, lastErr error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d := f.docs[url]; d != nil {
		return d.body != nil, d.err
	}
	return false, nil
}

func (f *fetcher) get(ctx context.Context, url string) ([]byte, error) {
	// Detached from the caller: a client hanging up must not abort (and so rate-limit) a fetch.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if len(body) > maxDocumentBytes {
		return nil, fmt.Errorf("GET %s: document larger than %d bytes", url, maxDocumentBytes)
	}
	if err := f.validate(url, body); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return body, nil
}
