package serve

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// originGuard answers 403 to a request whose Origin is neither loopback nor allowed, as the
// MCP transport spec requires: a page on another site must not drive the server through the
// user's browser. Requests without Origin (non-browser clients) pass.
func originGuard(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origins := r.Header.Values("Origin"); len(origins) > 0 && !(len(origins) == 1 && originAllowed(origins[0], allowed)) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "origin not allowed"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func originAllowed(origin string, allowed []string) bool {
	norm, ok := normalizeOrigin(origin)
	if !ok {
		return false // includes the opaque origin "null"
	}
	if u, err := url.Parse(norm); err == nil {
		switch strings.ToLower(u.Hostname()) {
		case "localhost", "127.0.0.1", "::1":
			return true
		}
	}
	return slices.Contains(allowed, norm)
}

// bodyLimit reads a body up to max bytes and hands it on in memory (mcp-go reads it whole
// anyway). Too large gives 413 rather than mcp-go's JSON-RPC parse error, which would not
// tell the client what to change.
func bodyLimit(max int64, next http.Handler) http.Handler {
	tooLarge := map[string]string{"error": "request body too large: the limit is " + strconv.FormatInt(max, 10) + " bytes"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > max {
			writeJSON(w, http.StatusRequestEntityTooLarge, tooLarge)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			writeJSON(w, http.StatusRequestEntityTooLarge, tooLarge)
			return
		case err != nil:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "could not read the request body"})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}
