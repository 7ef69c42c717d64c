package serve

import (
	"bytes"
	"context"
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

// bodyLimit reads a body up to the limit for the request and hands it on in memory (mcp-go
// reads it whole anyway; bodyOf gives it to the layers in between without a copy). limit
// returns the cap and a hint for the message. Too large gives 413 rather than mcp-go's
// JSON-RPC parse error, which would not tell the client what to change.
func bodyLimit(limit func(*http.Request) (int64, string), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		max, hint := limit(r)
		tooLargeBody := map[string]string{"error": tooLarge(max, hint)}
		if r.ContentLength > max {
			writeJSON(w, http.StatusRequestEntityTooLarge, tooLargeBody)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			writeJSON(w, http.StatusRequestEntityTooLarge, tooLargeBody)
			return
		case err != nil:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "could not read the request body"})
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

func tooLarge(max int64, hint string) string {
	return "request body too large: the limit is " + strconv.FormatInt(max, 10) + " bytes" + hint
}

type bodyKey struct{}

// bodyOf is the body bodyLimit read; nil when there was none.
func bodyOf(r *http.Request) []byte {
	b, _ := r.Context().Value(bodyKey{}).([]byte)
	return b
}
