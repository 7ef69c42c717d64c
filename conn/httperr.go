package conn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Response-size bounds: a misbehaving or hostile runtime must not make the server buffer
// without limit.
const (
	maxErrorBody   = 64 << 10
	maxSmallJSON   = 1 << 20
	maxListingBody = 256 << 20
)

var errBodyTooLarge = errors.New("response body exceeds its size limit")

// statusError turns a non-2xx response into an error wrapping the conn sentinel that the
// status means, keeping the server's own message (runtime {"message"}, router {"detail"},
// sandboxd {"code","message"}) so the caller can show it.
func statusError(op string, resp *http.Response) error {
	msg := scrubPaths(errorMessage(resp))
	code := resp.StatusCode
	var sentinel error
	switch {
	case code == http.StatusNotFound:
		sentinel = ErrNotFound
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		sentinel = ErrDenied
	case code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout:
		sentinel = ErrUnreachable
	case code >= 300 && code < 400:
		// Both runtimes redirect only a path they clean up themselves ("." or ".." segments
		// that reach the URL), so the advice is about the path, not the network.
		return fmt.Errorf("%s: the sandbox's runtime answered with a redirect (HTTP %d to %q), which it does for a path it rewrites, "+
			"such as one made of '.' or '..' segments; redirects are not followed: name the path inside the working directory "+
			"without them", op, code, resp.Header.Get("Location"))
	}
	if sentinel != nil {
		return fmt.Errorf("%s: %w (HTTP %d: %s)", op, sentinel, code, msg)
	}
	return fmt.Errorf("%s: HTTP %d: %s", op, code, msg)
}

// errorMessage extracts the human-readable part of an error body.
func errorMessage(resp *http.Response) string {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Code    string          `json:"code"`
	}
	if json.Unmarshal(raw, &body) == nil {
		var detail string
		if len(body.Detail) > 0 && json.Unmarshal(body.Detail, &detail) != nil {
			detail = string(body.Detail) // FastAPI validation errors: a list
		}
		switch {
		case body.Message != "" && body.Code != "":
			return body.Code + ": " + body.Message
		case body.Message != "":
			return body.Message
		case detail != "":
			return detail
		}
	}
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return http.StatusText(resp.StatusCode)
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) > 512 {
		s = s[:512] + "..."
	}
	return s
}

// transportError classifies a failed round trip: the caller's own cancellation or
// deadline is returned as such, anything else means the sandbox could not be reached.
func transportError(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", op, ctxErr)
	}
	return fmt.Errorf("%s: %w: %w", op, ErrUnreachable, err)
}

// capReader fails with errBodyTooLarge once more than n bytes are read.
type capReader struct {
	r io.Reader
	n int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		var probe [1]byte
		n, err := c.r.Read(probe[:])
		if n > 0 {
			return 0, errBodyTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

// decodeJSON decodes a bounded JSON body into v.
func decodeJSON(op string, r io.Reader, max int64, v any) error {
	if err := json.NewDecoder(&capReader{r: r, n: max}).Decode(v); err != nil {
		if errors.Is(err, errBodyTooLarge) {
			return fmt.Errorf("%s: %w: response larger than %d bytes", op, ErrTooLarge, max)
		}
		return fmt.Errorf("%s: decoding response: %w", op, err)
	}
	return nil
}
