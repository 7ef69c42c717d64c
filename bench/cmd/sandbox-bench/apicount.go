package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// apiCounter forwards one server's Kubernetes requests to the stack's API server with the
// stack's credentials and counts them by verb and resource, so that a figure is that server's
// own whatever else runs on the stack (the API server's metrics count every client).
type apiCounter struct {
	kubeconfig string
	srv        *http.Server
	ln         net.Listener
	dir        string

	mu     sync.Mutex
	counts map[string]int // "VERB resource" → requests
}

func newAPICounter(cfg *rest.Config) (*apiCounter, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &apiCounter{ln: ln, counts: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1, // watch events pass at once
	}
	c.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.add(requestKey(r))
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = c.srv.Serve(ln) }()

	kc := clientcmdapi.NewConfig()
	kc.Clusters["counter"] = &clientcmdapi.Cluster{Server: "http://" + ln.Addr().String()}
	kc.AuthInfos["counter"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["counter"] = &clientcmdapi.Context{Cluster: "counter", AuthInfo: "counter", Namespace: "default"}
	kc.CurrentContext = "counter"
	if c.dir, err = os.MkdirTemp("", "sandbox-bench-api-"); err != nil {
		c.close()
		return nil, err
	}
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, c.kubeconfig); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// requestKey names a request as the API server's audit log would: its verb (LIST and WATCH
// told apart from GET) and resource, read from /api/v1/... or /apis/<group>/<version>/...
func requestKey(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	k := 2 // the resource's index in /api/v1/<resource>
	if len(parts) > 0 && parts[0] == "apis" {
		k = 3
	}
	if k+2 < len(parts) && parts[k] == "namespaces" {
		k += 2
	}
	if k >= len(parts) {
		return r.Method + " " + r.URL.Path // discovery, /version and the like
	}
	verb := r.Method
	switch q := r.URL.Query(); {
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		verb = "WATCH"
	case r.Method == http.MethodGet && k == len(parts)-1:
		verb = "LIST"
	}
	return verb + " " + parts[k]
}

func (c *apiCounter) add(key string) {
	c.mu.Lock()
	c.counts[key]++
	c.mu.Unlock()
}

// take returns the counts since the last take and starts counting afresh.
func (c *apiCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

func (c *apiCounter) close() {
	_ = c.srv.Close()
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// countsText lists counts as "PATCH sandboxclaims 6, WATCH sandboxes 1", largest first.
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, m[k])
	}
	return b.String()
}
