// Package ports serves expose_port: a URL that reaches one TCP port of a sandbox through this
// server. Over HTTP it is a path under the server's own address
// (/ports/<namespace>/<claim>/<port>/<token>/), behind the same authentication as /mcp plus the
// unguessable token; over stdio, a listener of its own on 127.0.0.1. Every request is proxied
// (httputil.ReverseProxy: streaming responses and WebSocket upgrades pass through) the way the
// connection type reaches the sandbox (conn.Porter).
//
// The exposure lives on the claim (kube.Exposure: who exposed it and the hashes of its tokens),
// not in this process, so any replica of the server serves the URL, and it ends with
// unexpose_port or with the claim. What a process holds is only its own: the open requests it
// proxies and, over stdio, the listeners; a check against the claims ends those whose exposure
// ended elsewhere.
package ports

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/readgate"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/token"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// PathPrefix is where exposures live on the HTTP server.
const PathPrefix = "/ports/"

// Bounds of the proxy; README's numbers and the tests take theirs from here.
const (
	// StreamsEndWithin is how soon an exposure ended through another replica ends the open
	// requests and listeners this one holds: a check every checkEvery, the watch's delay in
	// showing the change to the cache, and the API read that confirms it (at most
	// confirmWithin) together stay inside it. Through the replica that ended it, at once.
	// Exported for the e2e test that holds the running server to it.
	StreamsEndWithin = 2 * time.Second
	checkEvery       = StreamsEndWithin / 4
	confirmWithin    = StreamsEndWithin / 2
)

// Store records exposures on the claims (kube.Client implements it).
type Store interface {
	Expose(ctx context.Context, namespace, name, owner string, port int, principal, tokenHash string) error
	Unexpose(ctx context.Context, namespace, name, owner string, port int) (bool, error)
	// Exposed reads a claim's exposures, from the API when fresh (else the watch cache may answer).
	Exposed(ctx context.Context, namespace, name string, fresh bool) (kube.Claim, map[int]kube.Exposure, error)
}

// PrincipalFunc names the authenticated caller of a request or call ("" when there is none).
type PrincipalFunc func(context.Context) string

// Registry serves the exposures of every claim this server made.
type Registry struct {
	store     Store
	porter    conn.Porter
	principal PrincipalFunc
	log       zerolog.Logger

	mu        sync.Mutex
	base      string // HTTP: the server's URL; "": a loopback listener per exposed port
	listeners map[key]*listener
	open      map[*openRequest]struct{}
	// gate checks a request's token against its claim's exposures at a bounded cost in API
	// reads (one per claim per readgate.ReadFor for a flood of wrong tokens), as /transfer does.
	gate *readgate.Gate[claimRead]
	// limits hold HTTP requests to the caller's caps (SetLimits); none over stdio.
	limits readgate.Limits
}

// key names one exposed port.
type key struct {
	namespace, claim string
	port             int
}

type listener struct {
	srv  *http.Server
	host string // the listener's address, the only Host accepted
}

// openRequest is a proxied request this process is serving, ended when its exposure ends.
type openRequest struct {
	key
	tokenHash string
	cancel    context.CancelFunc
}

// New makes a registry; SetBase switches it to serving under an HTTP server. principal may
// be nil (every request then counts as the same caller).
func New(store Store, porter conn.Porter, principal PrincipalFunc, log zerolog.Logger) *Registry {
	if principal == nil {
		principal = func(context.Context) string { return "" }
	}
	r := &Registry{store: store, porter: porter, principal: principal, log: log,
		listeners: map[key]*listener{}, open: map[*openRequest]struct{}{}}
	r.gate = readgate.New(r.readClaim)
	return r
}

// SetBase makes later exposures paths under base (the HTTP server's URL, no trailing slash).
func (r *Registry) SetBase(base string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.base = strings.TrimSuffix(base, "/")
}

// SetLimits holds later requests through the HTTP server to the caller's caps.
func (r *Registry) SetLimits(l readgate.Limits) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limits = l
}

// ControlPortError refuses a port a runtime's API listens on (conn.Porter.ControlPorts):
// its URL would give whoever holds it what the tools guard, e.g. commands through the python
// runtime's /execute, with no MCP call, audit Event or session in between.
type ControlPortError struct {
	conn.ControlPort
	Reserved []int // every port refused, for the model to pick another
}

func (e *ControlPortError) Error() string {
	reserved := make([]string, len(e.Reserved))
	for i, p := range e.Reserved {
		reserved[i] = strconv.Itoa(p)
	}
	return fmt.Sprintf("port %d is %s; exposing it would hand out %s — expose your application's port instead: "+
		"run it on a port this server does not reserve (not %s), listening on 0.0.0.0, and expose that one",
		e.Port, e.What, e.Hands, strings.Join(reserved, ", "))
}

// controlPort returns the refusal of port when a runtime's API listens on it, or nil.
func (r *Registry) controlPort(port int) *ControlPortError {
	cps := r.porter.ControlPorts()
	i := slices.IndexFunc(cps, func(cp conn.ControlPort) bool { return cp.Port == port })
	if i < 0 {
		return nil
	}
	e := &ControlPortError{ControlPort: cps[i]}
	for _, cp := range cps {
		e.Reserved = append(e.Reserved, cp.Port)
	}
	slices.Sort(e.Reserved)
	return e
}

// Expose returns a new URL for port of the owner's claim. Earlier URLs of the port keep
// working (the newest few; see kube.Exposure) until unexpose_port.
func (r *Registry) Expose(ctx context.Context, owner, namespace, claim string, port int) (string, error) {
	if e := r.controlPort(port); e != nil {
		return "", e
	}
	tok, err := token.New(24)
	if err != nil {
		return "", fmt.Errorf("ports: %w", err)
	}
	if err := r.store.Expose(ctx, namespace, claim, owner, port, r.principal(ctx), token.Hash(tok)); err != nil {
		return "", err
	}
	r.gate.Forget(readgate.Ref{Namespace: namespace, Name: claim}) // the tokens it remembers lack this one
	k := key{namespace: namespace, claim: claim, port: port}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.base != "" {
		return fmt.Sprintf("%s%s%s/%s/%d/%s/", r.base, PathPrefix, namespace, claim, port, tok), nil
	}
	l, err := r.listenLocked(k)
	if err != nil {
		return "", err
	}
	return "http://" + l.host + "/" + tok + "/", nil
}

// listenLocked returns the stdio listener of k, starting it the first time. Over stdio too the
// path carries the token: any local user can connect to a loopback port, and the Host check
// keeps web pages out (DNS rebinding).
func (r *Registry) listenLocked(k key) (*listener, error) {
	if l := r.listeners[k]; l != nil {
		return l, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("ports: listening on loopback: %w", err)
	}
	l := &listener{host: ln.Addr().String()}
	l.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		tok, path, ok := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
		if !ok || !loopbackHost(req.Host, l.host) {
			http.Error(w, "no such exposed port", http.StatusNotFound)
			return
		}
		r.serve(w, req, k, tok, "/"+path)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = l.srv.Serve(ln) }()
	r.listeners[k] = l
	return l, nil
}

// Unexpose ends the owner's exposure of port (all of the claim's ports when port is 0) and
// says whether there was one.
func (r *Registry) Unexpose(ctx context.Context, owner, namespace, claim string, port int) (bool, error) {
	found, err := r.store.Unexpose(ctx, namespace, claim, owner, port)
	if err != nil {
		return false, err
	}
	r.end(func(k key) bool { return k.namespace == namespace && k.claim == claim && (port == 0 || k.port == port) })
	return found, nil
}

// Forget ends what this process holds for a claim (it was deleted).
func (r *Registry) Forget(namespace, claim string) {
	r.end(func(k key) bool { return k.namespace == namespace && k.claim == claim })
}

// end closes the listeners and open requests of every port that match says ended.
func (r *Registry) end(match func(key) bool) {
	r.endWhere(match, func(o *openRequest) bool { return match(o.key) })
}

// endWhere closes the listeners of the ports port says ended and the open requests request
// says ended.
// It returns how many listeners it closed.
func (r *Registry) endWhere(port func(key) bool, request func(*openRequest) bool) int {
	r.mu.Lock()
	var closing []*listener
	for k, l := range r.listeners {
		if port(k) {
			closing = append(closing, l)
			delete(r.listeners, k)
		}
	}
	for o := range r.open {
		if request(o) {
			o.cancel() // ends streams and upgraded connections, which Close leaves open
			delete(r.open, o)
		}
	}
	r.mu.Unlock()
	for _, l := range closing {
		_ = l.srv.Close()
	}
	return len(closing)
}

// loopbackHost accepts the listener's own address, or localhost with its port.
func loopbackHost(host, listener string) bool {
	_, port, _ := net.SplitHostPort(listener)
	return host == listener || host == "localhost:"+port
}

// notExposed is the one answer for a URL that is not (or no longer) valid, whatever the reason,
// so that a guess learns nothing.
const notExposed = "no such exposed port (it was unexposed, or its sandbox is gone): call expose_port again"

// Handler serves PathPrefix on the HTTP server: /ports/<namespace>/<claim>/<port>/<token>/<path>.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		parts := strings.SplitN(strings.TrimPrefix(req.URL.Path, PathPrefix), "/", 5)
		if len(parts) < 5 {
			http.Error(w, notExposed, http.StatusNotFound)
			return
		}
		port, err := strconv.Atoi(parts[2])
		if err != nil {
			http.Error(w, notExposed, http.StatusNotFound)
			return
		}
		r.serve(w, req, key{namespace: parts[0], claim: parts[1], port: port}, parts[3], "/"+parts[4])
	})
}

// authorize returns the claim and the exposure of k's port, through the gate: the watch cache
// first, the API for a token it does not know, at most one API read per claim per
// readgate.ReadFor for a flood of wrong tokens.
func (r *Registry) authorize(ctx context.Context, k key, th string) (kube.Claim, kube.Exposure, error) {
	c, err := r.gate.Check(ctx, readgate.Ref{Namespace: k.namespace, Name: k.claim},
		func(c claimRead) bool { return c.exposed[k.port].Valid(th) })
	return c.claim, c.exposed[k.port], err
}

// claimRead is one read of a claim's exposures.
type claimRead struct {
	claim   kube.Claim
	exposed map[int]kube.Exposure
}

func (r *Registry) readClaim(ctx context.Context, ref readgate.Ref, fresh bool) (claimRead, error) {
	c, exposed, err := r.store.Exposed(ctx, ref.Namespace, ref.Name, fresh)
	return claimRead{claim: c, exposed: exposed}, err
}

// serve checks the token and the caller against the claim's record, then proxies.
func (r *Registry) serve(w http.ResponseWriter, req *http.Request, k key, tok, path string) {
	if e := r.controlPort(k.port); e != nil {
		// An exposure recorded before the port was refused (an older server, other settings)
		// is not served either.
		http.Error(w, e.Error(), http.StatusForbidden)
		return
	}
	r.mu.Lock()
	limits := r.limits
	r.mu.Unlock()
	streaming, checking, err := limits.Enter(req.Context())
	if err != nil {
		tooMany(w, err)
		return
	}
	defer streaming()
	defer checking()
	th := token.Hash(tok)
	c, e, err := r.authorize(req.Context(), k, th)
	if err != nil && !errors.Is(err, kube.ErrNotFound) {
		http.Error(w, "looking up the sandbox: "+err.Error(), http.StatusBadGateway)
		return
	}
	if err != nil || !e.Valid(th) || e.Principal != r.principal(req.Context()) {
		http.Error(w, notExposed, http.StatusNotFound)
		return
	}
	ep, err := r.porter.Port(req.Context(), conn.Target{Namespace: c.Namespace, SandboxName: c.SandboxName, PodIPs: c.PodIPs, ServiceFQDN: c.ServiceFQDN}, k.port)
	if err != nil {
		http.Error(w, "reaching the sandbox: "+err.Error(), http.StatusBadGateway)
		return
	}
	checking() // checked: from here on only the stream's place is held
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	o := &openRequest{key: k, tokenHash: th, cancel: cancel}
	r.mu.Lock()
	r.open[o] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.open, o)
		r.mu.Unlock()
	}()
	proxy(ep, k.port, path).ServeHTTP(w, req.WithContext(ctx))
}

// tooMany refuses a request past one of the caller's caps; the places come back as soon as
// the caller's other calls and requests end.
func tooMany(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, err.Error(), http.StatusTooManyRequests)
}

func proxy(ep conn.PortEndpoint, port int, path string) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
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
				"0.0.0.0, not only 127.0.0.1?): %v", port, err), http.StatusBadGateway)
		},
	}
}
