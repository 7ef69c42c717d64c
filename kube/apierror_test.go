package kube

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// TestAPIErrors drives a real Client against loopback servers that fail each way an API
// server can, and checks the facts and the advice the person gets.
func TestAPIErrors(t *testing.T) {
	tests := []struct {
		name      string
		server    func(t *testing.T) *rest.Config
		cause     Cause
		retryable bool
		message   string // with $URL standing for the server's URL
		advice    string
		check     func(t *testing.T, err error)
	}{
		{
			name:      "refused",
			server:    refusingServer,
			cause:     CauseRefused,
			retryable: true,
			message:   "the Kubernetes API server at $URL refused the connection",
			advice:    "Retry in a few seconds; if it persists, the API server at $URL is down — check the kubeconfig",
		},
		{
			name:      "timeout",
			server:    silentServer,
			cause:     CauseTimeout,
			retryable: true,
			message:   "the Kubernetes API server at $URL did not answer in time (timeout)",
			advice:    "Retry in a few seconds; if it persists, the API server at $URL is down — check the kubeconfig",
		},
		{
			name:    "TLS with an unknown CA",
			server:  unknownCAServer,
			cause:   CauseTLS,
			message: `the TLS handshake with the Kubernetes API server at $URL failed (tls: failed to verify certificate: x509: certificate signed by unknown authority)`,
			advice:  "Retrying will not help: the person running this server must fix the kubeconfig (the cluster's certificate-authority data or its server URL)",
		},
		{
			name:    "401",
			server:  statusServer(http.StatusUnauthorized, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`),
			cause:   CauseUnauthorized,
			message: `the Kubernetes API server at $URL rejected the credentials of user "alice" (401 Unauthorized)`,
			advice:  `Retrying will not help: the person running this server must fix the credentials of user "alice" in the kubeconfig (expired or wrong token or certificate?)`,
			check: func(t *testing.T, err error) {
				if !apierrors.IsUnauthorized(err) {
					t.Error("apierrors.IsUnauthorized no longer holds through the APIError")
				}
			},
		},
		{
			name:   "403",
			server: statusServer(http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"sandboxclaims.extensions.agents.x-k8s.io is forbidden: User \"alice\" cannot list resource \"sandboxclaims\" in API group \"extensions.agents.x-k8s.io\" in the namespace \"team-a\"","reason":"Forbidden","code":403}`),
			cause:  CauseForbidden,
			message: `the Kubernetes API server at $URL denied user "alice" (403 Forbidden: sandboxclaims.extensions.agents.x-k8s.io is forbidden: ` +
				`User "alice" cannot list resource "sandboxclaims" in API group "extensions.agents.x-k8s.io" in the namespace "team-a")`,
			advice: `Retrying will not help: use a namespace the server may use, or the person running this server must grant user "alice" access (RBAC)`,
			check: func(t *testing.T, err error) {
				if !apierrors.IsForbidden(err) {
					t.Error("apierrors.IsForbidden no longer holds through the APIError")
				}
			},
		},
		{
			name:    "403 from a proxy, not the API server",
			server:  statusServer(http.StatusForbidden, `<html>denied</html>`),
			cause:   CauseForbidden,
			message: `the Kubernetes API server at $URL denied user "alice" (403 Forbidden: Forbidden)`,
			advice:  `Retrying will not help: use a namespace the server may use, or the person running this server must grant user "alice" access (RBAC)`,
		},
		{
			name:    "DNS",
			server:  unresolvableServer,
			cause:   CauseDNS,
			message: "the host name of the Kubernetes API server at $URL does not resolve (dial tcp: lookup api.cluster.example on DNS: no such host)",
			advice:  "Retrying will not help: the person running this server must fix the server URL in the kubeconfig",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.server(t)
			c, err := New(cfg, testKey, WithAPIUser("alice"), WithMaxWatchedNamespaces(0))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Only the silent server should reach the deadline: on a loaded machine a TLS
			// handshake can take longer than the half second that case waits.
			wait := 10 * time.Second
			if tt.cause == CauseTimeout {
				wait = 500 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(t.Context(), wait)
			defer cancel()
			err = c.Probe(ctx, testNS)
			api, ok := DescribeAPIError(err)
			if !ok {
				t.Fatalf("Probe: %v (%T), want an APIError", err, errors.Unwrap(err))
			}
			msg := strings.ReplaceAll(tt.message, "$URL", cfg.Host)
			var dnsErr *net.DNSError
			if errors.As(err, &dnsErr) {
				// Go names the nameserver of resolv.conf, which the test's dial hook replaced.
				msg = strings.ReplaceAll(msg, "on DNS", "on "+dnsErr.Server)
			}
			if api.URL != cfg.Host || api.User != "alice" || api.Cause != tt.cause || api.Retryable() != tt.retryable {
				t.Errorf("got URL %q user %q cause %q retryable %v", api.URL, api.User, api.Cause, api.Retryable())
			}
			if api.Error() != msg {
				t.Errorf("message\n got %s\nwant %s", api.Error(), msg)
			}
			if got, want := api.Advice(), strings.ReplaceAll(tt.advice, "$URL", cfg.Host); got != want {
				t.Errorf("advice\n got %s\nwant %s", got, want)
			}
			if tt.check != nil {
				tt.check(t, err)
			}
		})
	}
}

func TestAPIErrorLeavesOthersAlone(t *testing.T) {
	// A cancelled call is the caller's doing, not the API server's.
	cfg := silentServer(t)
	c, err := New(cfg, testKey, WithMaxWatchedNamespaces(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	err = c.Probe(ctx, testNS)
	if _, ok := DescribeAPIError(err); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Probe: %v, want context.Canceled and no APIError", err)
	}
	// Other statuses keep client-go's own errors.
	c2, err := New(statusServer(http.StatusNotFound, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)(t), testKey, WithMaxWatchedNamespaces(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	err = c2.Probe(t.Context(), testNS)
	if _, ok := DescribeAPIError(err); ok || !apierrors.IsNotFound(err) {
		t.Fatalf("404: %v, want a NotFound status and no APIError", err)
	}
}

func TestAPIErrorWithoutUser(t *testing.T) {
	e := &APIError{URL: "https://k:6443", Cause: CauseUnauthorized}
	if want := "the Kubernetes API server at https://k:6443 rejected the credentials of the server's Kubernetes identity (401 Unauthorized)"; e.Error() != want {
		t.Errorf("got %s", e.Error())
	}
}

// refusingServer is a loopback port nobody listens on any more.
func refusingServer(t *testing.T) *rest.Config {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return &rest.Config{Host: "https://" + addr}
}

// silentServer accepts connections and never answers.
func silentServer(t *testing.T) *rest.Config {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return &rest.Config{Host: "http://" + l.Addr().String()}
}

// unknownCAServer serves TLS with a certificate from a CA the client does not trust.
func unknownCAServer(t *testing.T) *rest.Config {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the client's refusal is the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

func statusServer(code int, body string) func(t *testing.T) *rest.Config {
	return func(t *testing.T) *rest.Config {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return &rest.Config{Host: srv.URL, BearerToken: "token"}
	}
}

// unresolvableServer names a host that a loopback DNS server says does not exist; the
// client's dialer asks only that server, so the test never leaves the machine.
func unresolvableServer(t *testing.T) *rest.Config {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp, ok := nxdomain(buf[:n]); ok {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	t.Cleanup(func() { _ = pc.Close(); <-done })
	server := pc.LocalAddr().String()
	d := &net.Dialer{Resolver: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", server)
	}}}
	return &rest.Config{Host: "https://api.cluster.example:6443", Dial: d.DialContext}
}

func nxdomain(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	hdr, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: hdr.ID, Response: true, RecursionDesired: hdr.RecursionDesired,
		RecursionAvailable: true, RCode: dnsmessage.RCodeNameError})
	if b.StartQuestions() != nil || b.Question(q) != nil {
		return nil, false
	}
	out, err := b.Finish()
	return out, err == nil
}
