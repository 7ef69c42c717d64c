// Package ports serves expose_port: a URL that reaches one TCP port of a sandbox through this
// server. Over HTTP it is a path under the server's own address (/ports/<token>/), behind the
// same authentication as /mcp plus the unguessable token; over stdio, a listener of its own on
// 127.0.0.1. Every request is proxied (httputil.ReverseProxy: streaming responses and WebSocket
// upgrades pass through) the way the connection type reaches the sandbox (conn.Porter). An
// exposure ends with unexpose_port, with its sandbox (checked on every request and by a sweep),
// or with the server process.
package ports

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// PathPrefix is where exposures live on the HTTP server.
const PathPrefix = "/ports/"

// MaxPerOwner bounds the exposures one owner holds at once.
const MaxPerOwner = 32

// sweepEvery is how often exposures of deleted sandboxes are looked for.
const sweepEvery = 30 * time.Second

// ErrTooMany is an owner at MaxPerOwner.
var ErrTooMany = errors.New("too many exposed ports")

// Claims finds a caller's claim; a gone or foreign one is kube.ErrNotFound.
type Claims interface {
	Get(ctx context.Context, namespace, name, owner string) (kube.Claim, error)
}

// PrincipalFunc names the authenticated caller of a request or call ("" when there is none).
type PrincipalFunc func(context.Context) string

// Registry holds the exposures of this server process.
type Registry struct {
	claims    Claims
	porter    conn.Porter
	principal PrincipalFunc
	log       zerolog.Logger

	mu      sync.Mutex
	base    string // HTTP: the server's URL; "": a loopback listener per exposure
	byToken map[string]*exposure
}

type exposure struct {
	token, owner, namespace, claim string
	principal                      string // who exposed it; only they may use it
	port                           int
	url                            string
	srv                            *http.Server // stdio: its own listener
	host                           string       // stdio: the listener's address, the only Host accepted
	// ended is cancelled when the exposure ends: streams and upgraded connections end with it.
	ended  context.Context
	cancel context.CancelFunc
}

// New makes a registry; SetBase switches it to serving under an HTTP server. principal may
// be nil (every request then counts as the same caller).
func New(claims Claims, porter conn.Porter, principal PrincipalFunc, log zerolog.Logger) *Registry {
	if principal == nil {
		principal = func(context.Context) string { return "" }
	}
	return &Registry{claims: claims, porter: porter, principal: principal, log: log, byToken: map[string]*exposure{}}
}

// SetBase makes later exposures paths under base (the HTTP server's URL, no trailing slash).
func (r *Registry) SetBase(base string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.base = strings.TrimSuffix(base, "/")
}

// Expose returns the URL for port of the owner's claim, the same one while it is exposed.
func (r *Registry) Expose(ctx context.Context, owner, namespace, claim string, port int) (string, error) {
	if _, err := r.claims.Get(ctx, namespace, claim, owner); err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.byToken {
		if e.owner == owner && e.namespace == namespace && e.claim == claim && e.port == port {
			return e.url, nil
		}
		if e.owner == owner {
			n++
		}
	}
	if n >= MaxPerOwner {
		return "", fmt.Errorf("%w: %d are open; unexpose_port one first", ErrTooMany, n)
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("ports: token: %w", err)
	}
	e := &exposure{token: base64.RawURLEncoding.EncodeToString(b), owner: owner, namespace: namespace, claim: claim, port: port,
		principal: r.principal(ctx)}
	e.ended, e.cancel = context.WithCancel(context.Background())
	if r.base != "" {
		e.url = r.base + PathPrefix + e.token + "/"
	} else {
		// Over stdio too the path carries the token: any local user can connect to a loopback
		// port, and the Host check keeps web pages out (DNS rebinding).
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			e.cancel()
			return "", fmt.Errorf("ports: listening on loopback: %w", err)
		}
		e.host = ln.Addr().String()
		e.url = "http://" + e.host + "/" + e.token + "/"
		e.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			path, ok := strings.CutPrefix(req.URL.Path, "/"+e.token+"/")
			if !ok || !loopbackHost(req.Host, e.host) {
				http.Error(w, "no such exposed port", http.StatusNotFound)
				return
			}
			r.proxy(w, req, e, "/"+path)
		}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = e.srv.Serve(ln) }()
	}
	r.byToken[e.token] = e
	return e.url, nil
}

// Unexpose ends the owner's exposure of port (all of the claim's ports when port is 0) and
// says whether there was one.
func (r *Registry) Unexpose(owner, namespace, claim string, port int) bool {
	return r.remove(func(e *exposure) bool {
		return e.owner == owner && e.namespace == namespace && e.claim == claim && (port == 0 || e.port == port)
	}) > 0
}

// Forget ends every exposure of a claim (it was deleted).
func (r *Registry) Forget(namespace, claim string) {
	r.remove(func(e *exposure) bool { return e.namespace == namespace && e.claim == claim })
}

func (r *Registry) remove(match func(*exposure) bool) int {
	r.mu.Lock()
	var gone []*exposure
	for tok, e := range r.byToken {
		if match(e) {
			gone = append(gone, e)
			delete(r.byToken, tok)
		}
	}
	r.mu.Unlock()
	for _, e := range gone {
		e.cancel() // ends streams and upgraded connections, which Close leaves open
		if e.srv != nil {
			_ = e.srv.Close()
		}
	}
	return len(gone)
}

// loopbackHost accepts the listener's own address, or localhost with its port.
func loopbackHost(host, listener string) bool {
	_, port, _ := net.SplitHostPort(listener)
	return host == listener || host == "localhost:"+port
}

// Handler serves PathPrefix on the HTTP server.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rest := strings.TrimPrefix(req.URL.Path, PathPrefix)
		tok, path, _ := strings.Cut(rest, "/")
		r.mu.Lock()
		e := r.byToken[tok]
		r.mu.Unlock()
		if e == nil || e.principal != r.principal(req.Context()) {
			http.Error(w, "no such exposed port (it was unexposed, its sandbox is gone, or the server restarted): call expose_port again", http.StatusNotFound)
			return
		}
		r.proxy(w, req, e, "/"+path)
	})
}

// proxy forwards one request to the exposure's port, after checking its sandbox still exists.
func (r *Registry) proxy(w http.ResponseWriter, req *http.Request, e *exposure, path string) {
	c, err := r.claims.Get(req.Context(), e.namespace, e.claim, e.owner)
	if errors.Is(err, kube.ErrNotFound) {
		r.Forget(e.namespace, e.claim)
		http.Error(w, fmt.Sprintf("sandbox %s/%s is gone; its exposed ports ended with it", e.namespace, e.claim), http.StatusGone)
		return
	}
	if err != nil {
		http.Error(w, "looking up the sandbox: "+err.Error(), http.StatusBadGateway)
		return
	}
	ep, err := r.porter.Port(req.Context(), conn.Target{Namespace: c.Namespace, SandboxName: c.SandboxName, PodIPs: c.PodIPs, ServiceFQDN: c.ServiceFQDN}, e.port)
	if err != nil {
		http.Error(w, "reaching the sandbox: "+err.Error(), http.StatusBadGateway)
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(ep.Base)
			pr.Out.URL.Path = strings.TrimSuffix(ep.Base.Path, "/") + path
			pr.Out.URL.RawPath = ""
			pr.Out.Host = ""
			// The caller's credentials are for this server only, and routing is ours to say: a
			// caller's own X-Sandbox-Pod-IP would send the router to any pod.
			for k := range pr.Out.Header {
				if strings.HasPrefix(k, "X-Sandbox-") || strings.HasPrefix(k, "X-Forwarded-") || k == "Forwarded" || k == "Authorization" {
					pr.Out.Header.Del(k)
				}
			}
			for k, v := range ep.Header {
				pr.Out.Header[k] = v
			}
		},
		Transport:     ep.Transport,
		FlushInterval: -1, // stream as it comes (server-sent events, logs)
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, fmt.Sprintf("nothing answered on port %d of the sandbox (is the program running and listening on "+
				"0.0.0.0, not only 127.0.0.1?): %v", e.port, err), http.StatusBadGateway)
		},
	}
	// The request ends with the exposure too (unexpose_port, delete_sandbox).
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	stop := context.AfterFunc(e.ended, cancel)
	defer stop()
	rp.ServeHTTP(w, req.WithContext(ctx))
}

// Run sweeps exposures of deleted sandboxes until ctx ends, then closes every listener.
func (r *Registry) Run(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.remove(func(*exposure) bool { return true })
			return
		case <-t.C:
			r.sweep(ctx)
		}
	}
}

func (r *Registry) sweep(ctx context.Context) {
	r.mu.Lock()
	all := make([]*exposure, 0, len(r.byToken))
	for _, e := range r.byToken {
		all = append(all, e)
	}
	r.mu.Unlock()
	for _, e := range all {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := r.claims.Get(cctx, e.namespace, e.claim, e.owner)
		cancel()
		if errors.Is(err, kube.ErrNotFound) {
			r.Forget(e.namespace, e.claim)
			r.log.Info().Str("namespace", e.namespace).Str("claim", e.claim).Msg("exposed ports of a deleted sandbox ended")
		}
	}
}
