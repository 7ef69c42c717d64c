package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/budget"
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
// JSON-RPC parse error, which would not tell the client what to change. The body's bytes are
// taken from bodies before it is read, and held until the request has been answered: what was
// decoded from it lives that long.
func bodyLimit(limit func(*http.Request) (int64, string), bodies *inFlight, next http.Handler) http.Handler {
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
		l := bodies.lease(principalOf(r.Context()))
		defer l.release()
		defer collectAfterLarge(l)
		body, no, err := readBody(r.Context(), http.MaxBytesReader(w, r.Body, max), r.ContentLength, max, l)
		var mbe *http.MaxBytesError
		switch {
		case no != nil:
			no.write(w, nil)
			return
		case errors.As(err, &mbe):
			writeJSON(w, http.StatusRequestEntityTooLarge, tooLargeBody)
			return
		case err != nil:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "could not read the request body"})
			return
		}
		// The tools take their results' bytes from the same lease (budget.Reserve): held, like
		// the body's, until the response has been written.
		r = r.WithContext(budget.With(context.WithValue(r.Context(), bodyKey{}, body), resultBudget{l}))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// firstChunk is what a body of unknown length (chunked) is first given room for; small
// requests, the common case, need no more.
const firstChunk = 64 << 10

// readBody reads a body of size bytes (-1: unknown) into one buffer whose bytes l holds. A
// known size is read into a buffer of exactly that size; an unknown one into a buffer doubled
// as it fills, each growth taken from l before it is allocated.
func readBody(ctx context.Context, body io.Reader, size, limit int64, l *lease) ([]byte, *refusal, error) {
	if size >= 0 {
		if no := l.grow(ctx, size); no != nil {
			return nil, no, nil
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, nil, fmt.Errorf("reading %d bytes of body: %w", size, err)
		}
		return buf, nil, nil
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) == limit {
				// Full at the cap: one more byte means too large, which MaxBytesReader reports.
				var probe [1]byte
				if _, err := body.Read(probe[:]); err != nil && !errors.Is(err, io.EOF) {
					return nil, nil, fmt.Errorf("reading body: %w", err)
				}
				return buf, nil, nil
			}
			grown := min(limit, max(firstChunk, 2*int64(cap(buf))))
			if no := l.grow(ctx, grown-int64(cap(buf))); no != nil {
				return nil, no, nil
			}
			buf = append(make([]byte, 0, grown), buf...)
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading body: %w", err)
		}
	}
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
