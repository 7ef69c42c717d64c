package serve

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Variable names of the HTTP hardening settings.
const (
	VarAllowedOrigins     = "K8S_SANDBOX_HTTP__ALLOWED_ORIGINS"
	VarMaxBodyBytes       = "K8S_SANDBOX_HTTP__MAX_BODY_BYTES"
	VarMaxConcurrentCalls = "K8S_SANDBOX_HTTP__MAX_CONCURRENT_CALLS"
	VarReadTimeout        = "K8S_SANDBOX_HTTP__READ_TIMEOUT"

	VarMaxBodyBytesInFlight             = "K8S_SANDBOX_HTTP__MAX_BODY_BYTES_IN_FLIGHT"
	VarMaxBodyBytesInFlightPerPrincipal = "K8S_SANDBOX_HTTP__MAX_BODY_BYTES_IN_FLIGHT_PER_PRINCIPAL"

	VarMaxSessions             = "K8S_SANDBOX_HTTP__MAX_SESSIONS"
	VarMaxSessionsPerPrincipal = "K8S_SANDBOX_HTTP__MAX_SESSIONS_PER_PRINCIPAL"
	VarMaxStreamsPerPrincipal  = "K8S_SANDBOX_HTTP__MAX_STREAMS_PER_PRINCIPAL"
	VarUnusedSessionTTL        = "K8S_SANDBOX_HTTP__UNUSED_SESSION_TTL"
	VarMaxInitializeBytes      = "K8S_SANDBOX_HTTP__MAX_INITIALIZE_BYTES"
	VarPublicURL               = "K8S_SANDBOX_HTTP__PUBLIC_URL"
	VarDrainSeconds            = "K8S_SANDBOX_HTTP__DRAIN_SECONDS"
)

// Variables lists every variable LoadHTTPSettings reads.
func Variables() []string {
	return []string{VarAllowedOrigins, VarMaxBodyBytes, VarMaxConcurrentCalls, VarReadTimeout,
		VarMaxBodyBytesInFlight, VarMaxBodyBytesInFlightPerPrincipal,
		VarMaxSessions, VarMaxSessionsPerPrincipal, VarMaxStreamsPerPrincipal, VarUnusedSessionTTL, VarMaxInitializeBytes, VarPublicURL, VarDrainSeconds}
}

// HTTPSettings harden the HTTP transport. Zero fields take the defaults.
type HTTPSettings struct {
	// AllowedOrigins are exact origins (scheme://host[:port]) allowed besides loopback ones.
	AllowedOrigins []string
	// MaxBodyBytes caps a request body (default 8 MiB: an upload_file of ~6 MiB in base64).
	MaxBodyBytes int64
	// MaxConcurrentCalls caps tool calls in flight per principal (default 8), see LimitConcurrency.
	MaxConcurrentCalls int
	// ReadTimeout bounds reading one request, headers and body (default 60 s), against
	// slow-drip clients. It does not limit how long a tool call or its stream runs.
	ReadTimeout time.Duration
	// MaxBodyBytesInFlight caps the bytes of request bodies and tool results held at once in
	// total (default four bodies at MaxBodyBytes) and MaxBodyBytesInFlightPerPrincipal per
	// principal (default two, or one MaxResultBytes and one body if more), see inFlight. Each is at least the
	// one below it, so a body or result at the cap always fits.
	MaxBodyBytesInFlight             int64
	MaxBodyBytesInFlightPerPrincipal int64
	// MaxResultBytes is the most one tool result holds in memory (tools.MaxResultBytes: the
	// base64 of a download at K8S_SANDBOX_MAX_DOWNLOAD_BYTES). Results take their bytes from the
	// same in-flight bounds as bodies, so each bound is at least this: a result at the cap fits.
	MaxResultBytes int64

	// MaxSessions caps open MCP sessions in total (default 1024) and MaxSessionsPerPrincipal
	// per principal (default 64; without authentication everyone is one principal). Each
	// session holds transport state and what its client sent in initialize.
	MaxSessions             int
	MaxSessionsPerPrincipal int
	// MaxStreamsPerPrincipal caps the streams a principal holds open (default 64): standalone
	// GET streams, one per session, and 2026-07-28 subscriptions/listen requests. See streams.go.
	MaxStreamsPerPrincipal int
	// UnusedSessionTTL ends a session that made no call (anything beyond initialize,
	// notifications/initialized and ping) this long after it opened (default 60 s), sooner
	// than the idle TTL.
	UnusedSessionTTL time.Duration
	// MaxInitializeBytes caps the body of an initialize request (default 32 KiB), which the
	// session keeps (clientInfo, capabilities) for its whole life.
	MaxInitializeBytes int64
	// PublicURL is how clients reach this server (scheme://host[:port][/prefix]), for the URLs
	// expose_port hands out; "" means http:// and the address it listens on.
	PublicURL string
	// Drain is how long, after SIGTERM, /readyz answers 503 while requests are still served,
	// so the Service stops sending new ones before the server stops taking them (default 0:
	// nothing routes by readiness outside a cluster).
	Drain time.Duration
}

func (s HTTPSettings) withDefaults() HTTPSettings {
	if s.MaxBodyBytes <= 0 {
		s.MaxBodyBytes = 8 << 20
	}
	if s.MaxBodyBytesInFlightPerPrincipal <= 0 {
		// With a result at the cap in flight, the principal's other calls still get in.
		s.MaxBodyBytesInFlightPerPrincipal = max(2*s.MaxBodyBytes, s.MaxResultBytes+s.MaxBodyBytes)
	}
	s.MaxBodyBytesInFlightPerPrincipal = max(s.MaxBodyBytesInFlightPerPrincipal, s.MaxBodyBytes, s.MaxResultBytes)
	if s.MaxBodyBytesInFlight <= 0 {
		s.MaxBodyBytesInFlight = 4 * s.MaxBodyBytes
	}
	s.MaxBodyBytesInFlight = max(s.MaxBodyBytesInFlight, s.MaxBodyBytesInFlightPerPrincipal)
	if s.MaxConcurrentCalls <= 0 {
		s.MaxConcurrentCalls = 8
	}
	if s.ReadTimeout <= 0 {
		s.ReadTimeout = 60 * time.Second
	}
	if s.MaxSessions <= 0 {
		s.MaxSessions = 1024
	}
	if s.MaxSessionsPerPrincipal <= 0 {
		s.MaxSessionsPerPrincipal = 64
	}
	if s.MaxStreamsPerPrincipal <= 0 {
		s.MaxStreamsPerPrincipal = 64
	}
	if s.UnusedSessionTTL <= 0 {
		s.UnusedSessionTTL = 60 * time.Second
	}
	if s.MaxInitializeBytes <= 0 {
		s.MaxInitializeBytes = 32 << 10
	}
	return s
}

// LoadHTTPSettings reads the K8S_SANDBOX_HTTP__* settings from upper-cased variable names;
// maxResult is the largest tool result (see HTTPSettings.MaxResultBytes).
func LoadHTTPSettings(vars map[string]string, maxResult int64) (HTTPSettings, error) {
	s := HTTPSettings{MaxResultBytes: maxResult}
	get := func(name string) string { return strings.TrimSpace(vars[name]) }
	integer := func(name string, lo, hi int64) (int64, error) {
		v := get(name)
		if v == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%s must be an integer from %d to %d, got %q", name, lo, hi, v)
		}
		return n, nil
	}
	var err error
	if s.MaxBodyBytes, err = integer(VarMaxBodyBytes, 64<<10, 1<<30); err != nil {
		return HTTPSettings{}, err
	}
	if s.MaxBodyBytesInFlight, err = integer(VarMaxBodyBytesInFlight, 64<<10, 1<<40); err != nil {
		return HTTPSettings{}, err
	}
	if s.MaxBodyBytesInFlightPerPrincipal, err = integer(VarMaxBodyBytesInFlightPerPrincipal, 64<<10, 1<<40); err != nil {
		return HTTPSettings{}, err
	}
	// Checked against the values in force, so a default on one side is held to the same order.
	switch d := s.withDefaults(); {
	case s.MaxBodyBytesInFlightPerPrincipal > 0 && s.MaxBodyBytesInFlightPerPrincipal < d.MaxBodyBytes:
		return HTTPSettings{}, fmt.Errorf("%s must be at least %s (%d), got %d: a body at the cap would never fit",
			VarMaxBodyBytesInFlightPerPrincipal, VarMaxBodyBytes, d.MaxBodyBytes, s.MaxBodyBytesInFlightPerPrincipal)
	case s.MaxBodyBytesInFlightPerPrincipal > 0 && s.MaxBodyBytesInFlightPerPrincipal < maxResult:
		return HTTPSettings{}, fmt.Errorf("%s must be at least %d, got %d: a download at K8S_SANDBOX_MAX_DOWNLOAD_BYTES (%d bytes in base64) "+
			"would never fit; raise it, or lower K8S_SANDBOX_MAX_DOWNLOAD_BYTES", VarMaxBodyBytesInFlightPerPrincipal, maxResult,
			s.MaxBodyBytesInFlightPerPrincipal, maxResult)
	case s.MaxBodyBytesInFlight > 0 && s.MaxBodyBytesInFlight < d.MaxBodyBytesInFlightPerPrincipal:
		return HTTPSettings{}, fmt.Errorf("%s must be at least %s (%d), got %d: one principal's share would never fit",
			VarMaxBodyBytesInFlight, VarMaxBodyBytesInFlightPerPrincipal, d.MaxBodyBytesInFlightPerPrincipal, s.MaxBodyBytesInFlight)
	}
	n, err := integer(VarMaxConcurrentCalls, 1, 1024)
	if err != nil {
		return HTTPSettings{}, err
	}
	s.MaxConcurrentCalls = int(n)
	if n, err = integer(VarReadTimeout, 1, 3600); err != nil {
		return HTTPSettings{}, err
	}
	s.ReadTimeout = time.Duration(n) * time.Second
	if n, err = integer(VarMaxSessions, 1, 1_000_000); err != nil {
		return HTTPSettings{}, err
	}
	s.MaxSessions = int(n)
	if n, err = integer(VarMaxSessionsPerPrincipal, 1, 1_000_000); err != nil {
		return HTTPSettings{}, err
	}
	s.MaxSessionsPerPrincipal = int(n)
	if n, err = integer(VarMaxStreamsPerPrincipal, 1, 1_000_000); err != nil {
		return HTTPSettings{}, err
	}
	s.MaxStreamsPerPrincipal = int(n)
	if n, err = integer(VarUnusedSessionTTL, 1, 86400); err != nil {
		return HTTPSettings{}, err
	}
	s.UnusedSessionTTL = time.Duration(n) * time.Second
	if s.MaxInitializeBytes, err = integer(VarMaxInitializeBytes, 1<<10, 1<<20); err != nil {
		return HTTPSettings{}, err
	}
	if n, err = integer(VarDrainSeconds, 0, 300); err != nil {
		return HTTPSettings{}, err
	}
	s.Drain = time.Duration(n) * time.Second
	if v := get(VarPublicURL); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return HTTPSettings{}, fmt.Errorf("%s: %q is not a URL of this server; write scheme://host[:port][/path], e.g. https://mcp.example.com", VarPublicURL, v)
		}
		s.PublicURL = strings.TrimSuffix(v, "/")
	}
	for _, o := range strings.Split(get(VarAllowedOrigins), ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		norm, ok := normalizeOrigin(o)
		if !ok {
			return HTTPSettings{}, fmt.Errorf("%s: %q is not an origin; write scheme://host[:port], e.g. https://app.example.com (no path, no wildcard)", VarAllowedOrigins, o)
		}
		s.AllowedOrigins = append(s.AllowedOrigins, norm)
	}
	return s.withDefaults(), nil
}

// normalizeOrigin lower-cases scheme and host and drops a default port, so the allowlist
// and the browser's Origin header compare equal however the operator wrote them.
func normalizeOrigin(o string) (string, bool) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.Contains(u.Host, "*") {
		return "", false
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, true
}
