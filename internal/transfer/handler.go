package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/readgate"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/token"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// gone is the one answer for a URL that cannot be used, whatever the reason (used, expired,
// never handed out, its sandbox deleted, another principal's), so that a guess learns nothing.
const gone = "this transfer URL was used, expired, or never existed: call create_transfer_url again"

// errNotRegular is a download of a FIFO, socket or device.
var errNotRegular = errors.New("not a regular file")

// errNotYours refuses another principal's request; it is answered as gone.
var errNotYours = errors.New("another principal's transfer URL")

// wrongMethodError refuses a request whose method is the other direction's.
type wrongMethodError struct{ direction string }

func (e *wrongMethodError) Error() string { return "this transfer URL is for " + e.direction }

// methods maps a request's method to the direction it performs; usage says how to perform one.
var (
	methods = map[string]string{http.MethodPut: Upload, http.MethodGet: Download}
	usage   = map[string]struct{ method, curl string }{
		Upload:   {http.MethodPut, "curl -T file URL"},
		Download: {http.MethodGet, "curl -o file URL"},
	}
)

// Handler serves PathPrefix on the HTTP server: /transfer/<namespace>/<claim>/<token>. Mount
// it behind the authentication of /mcp: the grant's principal is compared with the request's.
func (r *Registry) Handler() http.Handler { return http.HandlerFunc(r.serve) }

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	parts := strings.Split(strings.TrimPrefix(req.URL.Path, PathPrefix), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		http.Error(w, gone, http.StatusNotFound)
		return
	}
	direction, ok := methods[req.Method]
	if !ok {
		w.Header().Set("Allow", "GET, PUT")
		http.Error(w, "a transfer URL takes PUT to upload (curl -T file URL) or GET to download (curl -o file URL), as it was made for", http.StatusMethodNotAllowed)
		return
	}
	if direction == Upload && req.ContentLength > r.maxBytes {
		http.Error(w, r.tooLarge(req.ContentLength), http.StatusRequestEntityTooLarge)
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
	principal := r.principal(req.Context())
	th := token.Hash(parts[2])
	ctx, cancel := context.WithTimeout(req.Context(), consumeWithin)
	defer cancel()
	has := func(gs []kube.TransferGrant) bool {
		return slices.ContainsFunc(gs, func(g kube.TransferGrant) bool { return g.TokenHash == th })
	}
	if grants, err := r.gate.Check(ctx, readgate.Ref{Namespace: parts[0], Name: parts[1]}, has); errors.Is(err, kube.ErrNotFound) || err == nil && !has(grants) {
		http.Error(w, gone, http.StatusNotFound)
		return
	}
	claim, g, err := r.store.ConsumeTransfer(ctx, parts[0], parts[1], th, func(g kube.TransferGrant) error {
		if g.Principal != principal {
			return errNotYours
		}
		if g.Direction != direction {
			return &wrongMethodError{g.Direction}
		}
		if g.Direction == Upload && r.noUploads {
			return ErrNoUploads
		}
		return nil
	})
	cancel()
	var wrong *wrongMethodError
	switch {
	case errors.Is(err, kube.ErrNotFound) || errors.Is(err, kube.ErrNoTransfer) || errors.Is(err, errNotYours):
		http.Error(w, gone, http.StatusNotFound)
		return
	case errors.As(err, &wrong):
		u := usage[wrong.direction]
		w.Header().Set("Allow", u.method)
		http.Error(w, fmt.Sprintf("this transfer URL is for %s: use %s (%s); it is still usable", wrong.direction, u.method, u.curl),
			http.StatusMethodNotAllowed)
		return
	case errors.Is(err, ErrNoUploads):
		http.Error(w, err.Error()+"; nothing was written", http.StatusForbidden)
		return
	case err != nil:
		http.Error(w, "looking up the transfer on its sandbox: "+err.Error()+"; try the URL again", http.StatusBadGateway)
		return
	}
	checking() // spent: from here on only the stream's place is held
	log := r.log.With().Str("namespace", claim.Namespace).Str("claim", claim.Name).Str("direction", g.Direction).Str("path", g.Path).Logger()
	start := time.Now()
	var n int64
	if g.Direction == Upload {
		n, err = r.upload(w, req, claim, g)
	} else {
		n, err = r.download(w, req, claim, g)
	}
	log.Info().Err(err).Int64("bytes", n).Dur("took", time.Since(start)).Msg("transfer")
}

// tooMany refuses a request past one of the caller's caps, before its URL is spent.
func tooMany(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, err.Error()+"; the URL is not spent", http.StatusTooManyRequests)
}

// upload streams the request body into the sandbox file, at most maxBytes of it.
func (r *Registry) upload(w http.ResponseWriter, req *http.Request, claim kube.Claim, g kube.TransferGrant) (int64, error) {
	// The server's ReadTimeout is sized for MCP bodies; a large file takes longer to arrive.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	body := &cappedBody{Reader: http.MaxBytesReader(w, req.Body, r.maxBytes)}
	n, err := r.streamer.Upload(req.Context(), target(claim), g.Path, body)
	switch {
	case body.over:
		http.Error(w, r.tooLarge(-1)+"; the URL is spent", http.StatusRequestEntityTooLarge)
		return n, fmt.Errorf("body over the cap: %w", err)
	case err != nil:
		http.Error(w, fmt.Sprintf("writing %s in the sandbox: %v; the URL is spent: call create_transfer_url again", g.Path, err), http.StatusBadGateway)
		return n, err
	}
	w.Header().Set("Content-Type", "application/json")
	return n, json.NewEncoder(w).Encode(map[string]any{"path": g.Path, "bytes": n})
}

// download streams the sandbox file into the response. Once bytes have gone out, a failure
// can no longer change the status: the response is aborted, so the client sees a broken
// transfer instead of a complete-looking short file.
func (r *Registry) download(w http.ResponseWriter, req *http.Request, claim kube.Claim, g kube.TransferGrant) (int64, error) {
	if r.special(req.Context(), target(claim), g.Path) {
		http.Error(w, fmt.Sprintf("%s in the sandbox is not a regular file (a FIFO, socket or device), and a transfer URL "+
			"downloads regular files only; the URL is spent: copy the data into a regular file, then call create_transfer_url "+
			"again", g.Path), http.StatusUnprocessableEntity)
		return 0, errNotRegular
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(g.Path)}))
	h.Set("Cache-Control", "no-store")
	out := &startedWriter{w: w}
	n, err := r.streamer.Download(req.Context(), target(claim), g.Path, out, r.maxBytes)
	if err == nil {
		return n, nil
	}
	if out.started {
		r.log.Warn().Err(err).Int64("bytes", n).Str("path", g.Path).Msg("transfer download failed midway; aborting the response")
		panic(http.ErrAbortHandler)
	}
	h.Del("Content-Disposition")
	if errors.Is(err, conn.ErrTooLarge) {
		http.Error(w, fmt.Sprintf("%s in the sandbox is larger than this server's cap (K8S_SANDBOX_MAX_TRANSFER_BYTES, %d bytes); the URL is spent", g.Path, r.maxBytes),
			http.StatusRequestEntityTooLarge)
		return n, err
	}
	http.Error(w, fmt.Sprintf("reading %s in the sandbox: %v; the URL is spent: call create_transfer_url again", g.Path, err), http.StatusBadGateway)
	return n, err
}

// tooLarge says a body of size bytes (-1: it ran past the cap) is over the cap.
func (r *Registry) tooLarge(size int64) string {
	s := "the body is"
	if size >= 0 {
		s = fmt.Sprintf("the body (%d bytes) is", size)
	}
	return fmt.Sprintf("%s larger than this server's cap (K8S_SANDBOX_MAX_TRANSFER_BYTES, %d bytes)", s, r.maxBytes)
}

// cappedBody notes that the body ran past the cap, whether or not the Streamer's error keeps
// http.MaxBytesError in its chain.
type cappedBody struct {
	io.Reader
	over bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		b.over = true
	}
	return n, err
}

// startedWriter notes that the response has begun (its status and headers are sent).
type startedWriter struct {
	w       io.Writer
	started bool
}

func (s *startedWriter) Write(p []byte) (int, error) {
	s.started = true
	return s.w.Write(p)
}
