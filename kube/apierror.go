package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// Cause is why the API server could not be used.
type Cause string

// Causes an APIError can have. Only the first three may go away by themselves.
const (
	CauseRefused      Cause = "connection refused"
	CauseTimeout      Cause = "timeout"
	CauseUnreachable  Cause = "unreachable"
	CauseTLS          Cause = "TLS error"
	CauseUnauthorized Cause = "401 Unauthorized"
	CauseForbidden    Cause = "403 Forbidden"
	CauseDNS          Cause = "DNS lookup failed"
)

// APIError is a request the Kubernetes API server did not answer or refused to serve, with
// the facts a person needs to fix it. Every request of a Client built by New that fails this
// way returns one (wrapped by client-go in a *url.Error): find it with DescribeAPIError.
// For 401 and 403 it wraps the server's Status, so apierrors.IsForbidden and friends hold.
type APIError struct {
	URL   string // the API server, as the kubeconfig names it
	User  string // the kubeconfig user of the context in use ("" when unknown, as in a pod)
	Cause Cause
	Err   error
}

// DescribeAPIError finds the APIError in err's chain.
func DescribeAPIError(err error) (*APIError, bool) {
	var api *APIError
	ok := errors.As(err, &api)
	return api, ok
}

func (e *APIError) Error() string {
	switch e.Cause {
	case CauseRefused:
		return fmt.Sprintf("the Kubernetes API server at %s refused the connection", e.URL)
	case CauseTimeout:
		return fmt.Sprintf("the Kubernetes API server at %s did not answer in time (timeout)", e.URL)
	case CauseUnreachable:
		return fmt.Sprintf("the Kubernetes API server at %s is unreachable (%v)", e.URL, e.Err)
	case CauseTLS:
		return fmt.Sprintf("the TLS handshake with the Kubernetes API server at %s failed (%v)", e.URL, e.Err)
	case CauseUnauthorized:
		return fmt.Sprintf("the Kubernetes API server at %s rejected the credentials of %s (401 Unauthorized)", e.URL, e.who())
	case CauseForbidden:
		return fmt.Sprintf("the Kubernetes API server at %s denied %s (403 Forbidden: %s)", e.URL, e.who(), statusMessage(e.Err))
	case CauseDNS:
		return fmt.Sprintf("the host name of the Kubernetes API server at %s does not resolve (%v)", e.URL, e.Err)
	}
	return fmt.Sprintf("the Kubernetes API server at %s: %v", e.URL, e.Err)
}

// Retryable reports whether waiting may help: the server may be starting or the network
// recovering. The other causes need a person to change the configuration.
func (e *APIError) Retryable() bool {
	return e.Cause == CauseRefused || e.Cause == CauseTimeout || e.Cause == CauseUnreachable
}

// Advice says what to do next, and whether retrying is worth it.
func (e *APIError) Advice() string {
	switch e.Cause {
	case CauseUnauthorized:
		return fmt.Sprintf("Retrying will not help: the person running this server must fix the credentials of %s in the kubeconfig (expired or wrong token or certificate?)", e.who())
	case CauseForbidden:
		return fmt.Sprintf("Retrying will not help: use a namespace the server may use, or the person running this server must grant %s access (RBAC)", e.who())
	case CauseTLS:
		return "Retrying will not help: the person running this server must fix the kubeconfig (the cluster's certificate-authority data or its server URL)"
	case CauseDNS:
		return "Retrying will not help: the person running this server must fix the server URL in the kubeconfig"
	}
	return fmt.Sprintf("Retry in a few seconds; if it persists, the API server at %s is down — check the kubeconfig", e.URL)
}

func (e *APIError) who() string {
	if e.User == "" {
		return "the server's Kubernetes identity"
	}
	return fmt.Sprintf("user %q", e.User)
}

func (e *APIError) Unwrap() error { return e.Err }

// Timeout and Temporary keep what url.Error and client-go read of the cause (a timed-out
// watch is restarted quietly) the same as without the wrapper.
func (e *APIError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

func (e *APIError) Temporary() bool {
	var t interface{ Temporary() bool }
	return errors.As(e.Err, &t) && t.Temporary()
}

func statusMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return "no message"
}

// WithAPIUser names the kubeconfig user in APIErrors.
func WithAPIUser(user string) Option { return func(o *options) { o.apiUser = user } }

// apiHTTPClient is client-go's HTTP client for cfg (TLS, credentials, exec plugins) with the
// describing transport outermost, so it sees a 401 only after client-go's own credential
// refresh has had its go.
func apiHTTPClient(cfg *rest.Config, user string) (*http.Client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	// A copy: without TLS or credentials client-go hands out http.DefaultClient itself.
	out := *hc
	next := out.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	out.Transport = &describingTransport{next: next, url: cfg.Host, user: user}
	return &out, nil
}

type describingTransport struct {
	next      http.RoundTripper
	url, user string
}

// maxStatusBody bounds the 401/403 body read for its Status.
const maxStatusBody = 64 << 10

func (t *describingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		if cause, ok := classify(err); ok {
			return nil, &APIError{URL: t.url, User: t.user, Cause: cause, Err: err}
		}
		return nil, err
	}
	var cause Cause
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		cause = CauseUnauthorized
	case http.StatusForbidden:
		cause = CauseForbidden
	default:
		return resp, nil
	}
	return nil, &APIError{URL: t.url, User: t.user, Cause: cause, Err: &apierrors.StatusError{ErrStatus: readStatus(resp)}}
}

// readStatus decodes the API server's Status from a failed response (and closes its body),
// or makes one from the status code when the body is not a Status.
func readStatus(resp *http.Response) metav1.Status {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Code == int32(resp.StatusCode) {
		return st
	}
	reason := metav1.StatusReasonForbidden
	if resp.StatusCode == http.StatusUnauthorized {
		reason = metav1.StatusReasonUnauthorized
	}
	return metav1.Status{Status: metav1.StatusFailure, Code: int32(resp.StatusCode), Reason: reason, Message: http.StatusText(resp.StatusCode)}
}

// classify names the transport errors that mean the API server cannot be used. Anything
// else (a cancelled call, a reset connection client-go retries) is left as it is.
func classify(err error) (Cause, bool) {
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case errors.Is(err, context.Canceled):
		return "", false
	case errors.As(err, &dnsErr):
		if dnsErr.IsTimeout && !dnsErr.IsNotFound {
			return CauseTimeout, true
		}
		return CauseDNS, true
	case utilnet.IsConnectionRefused(err):
		return CauseRefused, true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return CauseUnreachable, true
	case isTimeout(err):
		return CauseTimeout, true
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify),
		errors.As(err, &header), errors.As(err, &alert):
		return CauseTLS, true
	}
	return "", false
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || utilnet.IsTimeout(err)
}
