// Package load drives several server replicas the way a shared deployment sees them: many
// sessionless clients, some 2025-11-25 sessions, and sandboxes created and deleted throughout,
// through one round-robin address (Front), as a Service spreads connections over its
// endpoints. The benchmark (hack/bench.sh, item 8) and the end-to-end tests use it.
package load

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
)

// Front is a round-robin load balancer over replicas. A replica that refuses the connection is
// skipped (nothing was sent yet), as a load balancer retrying on connect failure does; a request
// a replica already received is not retried.
type Front struct {
	srv      *httptest.Server
	mu       sync.Mutex
	backends []string // host:port
	next     int
	hits     []int
}

// NewFront listens on ln (so its URL can be known before the replicas start) and sends each
// request to the next replica added with Add.
func NewFront(ln net.Listener) *Front {
	f := &Front{}
	f.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "replica" },
		Transport:     f,
		FlushInterval: -1,
	}}}
	f.srv.Start()
	return f
}

// URL is the front's base URL.
func (f *Front) URL() string { return f.srv.URL }

// Close stops the front.
func (f *Front) Close() { f.srv.Close() }

// Add puts a replica (host:port) into the rotation.
func (f *Front) Add(hostPort string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.backends = append(f.backends, hostPort)
	f.hits = append(f.hits, 0)
}

// Remove takes a replica out of the rotation, as the endpoints controller does with a deleted
// pod, and drops the pooled connections (a request written on one to a dead replica would fail).
func (f *Front) Remove(hostPort string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, b := range f.backends {
		if b == hostPort {
			f.backends = append(f.backends[:i:i], f.backends[i+1:]...)
			f.hits = append(f.hits[:i:i], f.hits[i+1:]...)
			f.next = 0
			break
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

// Served is how many requests each replica has been sent, in the order added.
func (f *Front) Served() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.hits...)
}

// RoundTrip sends req to the next replica that accepts a connection.
func (f *Front) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	n := len(f.backends)
	f.mu.Unlock()
	var last error
	for range n {
		f.mu.Lock()
		i := f.next
		f.next = (f.next + 1) % len(f.backends)
		host := f.backends[i]
		f.mu.Unlock()
		out := req.Clone(req.Context())
		out.URL.Host = host
		if req.Body != nil {
			out.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := http.DefaultTransport.RoundTrip(out)
		var op *net.OpError
		if err != nil && errors.As(err, &op) && op.Op == "dial" {
			last = err
			continue
		}
		f.mu.Lock()
		f.hits[i]++
		f.mu.Unlock()
		return resp, err
	}
	return nil, last
}

// Goroutines reads go_goroutines from each replica's /metrics URL (-1 when it has none).
func Goroutines(metricsURLs []string) ([]int, error) {
	var out []int
	for _, u := range metricsURLs {
		resp, err := http.Get(u)
		if err != nil {
			return nil, err
		}
		n := -1
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
				n, _ = strconv.Atoi(v)
			}
		}
		resp.Body.Close()
		out = append(out, n)
	}
	return out, nil
}
