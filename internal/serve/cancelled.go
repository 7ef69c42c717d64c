package serve

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// cancelAck answers a sessionless (2026-07-28) notifications/cancelled that carries no
// _meta protocol version with 202. mcp-go rejects such a notification with 400, and the
// go-sdk client (v1.8) sends exactly that when a call's context ends, then treats the 400 as
// fatal and closes its whole connection. Nothing is lost by accepting it: over HTTP the
// cancelled call's request is already closed, which cancels the handler's context.
//
// Every other request passes without a JSON parse: one that names its method in Mcp-Method
// is not read here at all, and a body that does not contain the method's name is not
// decoded (parsing every tools/call's body, uploads included, for this was 6% of the HTTP
// path's CPU in BenchmarkHTTPToolCall). A body that spells the name with JSON escapes goes
// on to mcp-go, as before this filter existed.
func cancelAck(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		if m := r.Header.Get(mcp.HeaderMethod); m != "" && m != cancelledMethod {
			next.ServeHTTP(w, r)
			return
		}
		body := bodyOf(r) // read once by bodyLimit, which runs before this in NewHandler
		if bytes.Contains(body, []byte(cancelledMethod)) && isBareCancel(body) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		next.ServeHTTP(w, r)
	})
}

const cancelledMethod = "notifications/cancelled"

func isBareCancel(body []byte) bool {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.ID != nil || msg.Method != cancelledMethod {
		return false
	}
	_, versioned := msg.Params.Meta[mcp.MetaKeyProtocolVersion]
	return !versioned
}
