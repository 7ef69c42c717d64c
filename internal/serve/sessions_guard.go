package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// handshake are the messages that do not make a session "used": a session that sends only
// these ends after UnusedSessionTTL.
var handshake = map[string]bool{"initialize": true, "notifications/initialized": true, "ping": true}

// bodyCap is the body limit for r: an initialize is the only request of the session era
// without a session ID, and it gets the initialize cap before anything is read.
func (s *Sessions) bodyCap(max int64) func(r *http.Request) (int64, string) {
	return func(r *http.Request) (int64, string) {
		if r.Method == http.MethodPost && r.Header.Get(server.HeaderKeySessionID) == "" && !isModern(r) {
			return min(max, s.set.MaxInitializeBytes), initializeHint
		}
		return max, ""
	}
}

const initializeHint = " for initialize (send a shorter clientInfo)"

func isModern(r *http.Request) bool {
	return mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
}

// guard admits requests to /mcp by session. GET and DELETE naming a session the caller does
// not own get 404 (mcp-go would otherwise let a GET create a session under a client-chosen
// ID); POSTs are checked by Validate, since an initialize carries no or a stale ID. An
// initialize is held to its size cap and needs a place under the session bounds; every other
// request is counted as activity of its session.
func (s *Sessions) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(server.HeaderKeySessionID)
		principal := principalOf(r.Context())
		switch r.Method {
		case http.MethodGet, http.MethodDelete:
			if id == "" && r.Method == http.MethodGet && !isModern(r) {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "a GET stream needs the Mcp-Session-Id of your session: send initialize first"})
				return
			}
			if id != "" && r.Method == http.MethodDelete && !s.belongsTo(id, principal) {
				writeJSON(w, http.StatusNotFound, map[string]string{"error": "session not found"})
				return
			}
			if r.Method == http.MethodGet && id != "" {
				ctx, done, no := s.stream(r.Context(), id, principal)
				if no != nil {
					no.writePlain(w)
					return
				}
				defer done()
				r = r.WithContext(ctx)
			}
		case http.MethodPost:
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			body := bodyOf(r)
			_ = json.Unmarshal(body, &msg) // mcp-go answers a malformed body
			// 2026-07-28: no sessions; a subscriptions/listen request is a stream.
			if isModern(r) {
				if msg.Method == string(mcp.MethodSubscriptionsListen) {
					done, no := s.listen(principal)
					if no != nil {
						no.write(w, msg.ID)
						return
					}
					defer done()
				}
				break
			}
			if msg.Method == "initialize" {
				if int64(len(body)) > s.set.MaxInitializeBytes {
					writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": tooLarge(s.set.MaxInitializeBytes, initializeHint)})
					return
				}
				res, no := s.reserve(principal)
				if no != nil {
					no.write(w, msg.ID)
					return
				}
				defer s.unreserve(res)
				r = r.WithContext(context.WithValue(r.Context(), reservationKey{}, res))
				break
			}
			if id != "" {
				leave, ok := s.enter(id, principal, !handshake[msg.Method])
				if ok {
					defer leave()
				} else if !s.isLive(id) {
					unknownSession().write(w, msg.ID)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// refusal is a session that cannot be opened: the HTTP status and what the client should do.
type refusal struct {
	status     int
	message    string
	retryAfter float64 // seconds; 0 omits the header
}

func (s *Sessions) refusePerPrincipal() *refusal {
	return &refusal{status: http.StatusTooManyRequests, retryAfter: s.unusedTTL().Seconds(), message: fmt.Sprintf(
		"too many open MCP sessions for this principal: the limit is %d (%s). End sessions you no longer use "+
			"(HTTP DELETE with their Mcp-Session-Id) or wait until one expires (%s), then retry.",
		s.set.MaxSessionsPerPrincipal, VarMaxSessionsPerPrincipal, s.expiryRule())}
}

func (s *Sessions) refuseTotal() *refusal {
	return &refusal{status: http.StatusServiceUnavailable, retryAfter: s.unusedTTL().Seconds(), message: fmt.Sprintf(
		"the server holds the most MCP sessions it allows: the limit is %d (%s). Retry later (%s).",
		s.set.MaxSessions, VarMaxSessions, s.expiryRule())}
}

// unknownSession answers a session ID this process does not hold: the protocol has the client
// start a new session on 404, and the message says why it may have happened.
func unknownSession() *refusal {
	return &refusal{status: http.StatusNotFound, message: "unknown MCP session: it ended, or the server process that held it " +
		"stopped (with several replicas, also: this request reached another replica than the one that opened it, so the " +
		"Service needs session affinity). Start a new session with initialize. The old session's sandboxes were deleted " +
		"when it ended, or are deleted at their shutdown time."}
}

func refuseShutdown() *refusal {
	return &refusal{status: http.StatusServiceUnavailable, retryAfter: 5, message: "the server is shutting down; reconnect in a moment."}
}

// expiryRule states when sessions end on their own, for the refusals.
func (s *Sessions) expiryRule() string {
	rule := fmt.Sprintf("a session that makes no call ends %s after initialize", s.unusedTTL())
	if s.idleTTL > 0 {
		rule += fmt.Sprintf(", an idle one after %s", s.idleTTL)
	}
	return rule
}

// write answers with a JSON-RPC error, so an MCP client can show the message as it is.
func (no *refusal) write(w http.ResponseWriter, id json.RawMessage) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	no.header(w)
	writeJSON(w, no.status, map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": sessionRefused, "message": no.message}})
}

func (no *refusal) header(w http.ResponseWriter) {
	if no.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(no.retryAfter))))
	}
}

// sessionRefused is the JSON-RPC error code of a refused session (implementation-defined range).
const sessionRefused = -32000
