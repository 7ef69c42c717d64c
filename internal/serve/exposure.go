package serve

import (
	"fmt"
	"net"
	"strings"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
)

// CheckExposure decides whether the server may listen on addr. Without authentication, only
// a loopback address is allowed, unless the operator passed --insecure-no-auth; then warn is
// a text to log (at warn level) on every start. Host names other than localhost count as
// exposed: what they resolve to can change.
func CheckExposure(addr string, authEnabled, insecureNoAuth bool) (warn string, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--http %q is not host:port (e.g. 127.0.0.1:8000): %w", addr, err)
	}
	if authEnabled || isLoopback(host) {
		return "", nil
	}
	if !insecureNoAuth {
		return "", fmt.Errorf("refusing to serve %s without authentication: it is not a loopback address, so anyone who reaches it "+
			"could run commands in sandboxes. Configure %s, %s or %s, listen on 127.0.0.1, or pass --insecure-no-auth "+
			"if something in front of this server authenticates callers",
			addr, auth.VarTokens, auth.VarTokensFile, auth.VarOIDCIssuer)
	}
	return fmt.Sprintf("serving %s WITHOUT authentication (--insecure-no-auth): anyone who can reach this address can create "+
		"sandboxes and run commands in them; sandboxes are kept apart only by MCP session", addr), nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
