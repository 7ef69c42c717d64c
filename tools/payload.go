package tools

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/budget"
)

// Bounds of the results that carry a file's bytes (download_file, download_archive).
const (
	// resultSlack is what a payload's result holds besides the payload: the JSON around it
	// and the call's own request, which share the call's budget.
	resultSlack = 64 << 10
	// textFallbackMax is the largest payload whose result repeats its JSON as text content,
	// as the MCP spec advises (SHOULD) for clients that predate structuredContent. A larger one
	// gets a one-line summary there instead: the repeat doubled the bytes held and sent, and
	// no model reads megabytes of base64 from its context (clients cut tool output far sooner).
	textFallbackMax = 1 << 20
	// growStep is the least a payload of unannounced size takes from the budget at a time.
	growStep = 64 << 10
)

// MaxResultBytes is the most a result of the payload tools holds for a download bound of
// maxDownload bytes: the base64 of a file at the bound, and the slack. The HTTP layer gives
// one principal at least this much room, so that a file at the bound can always be returned.
func MaxResultBytes(maxDownload int64) int64 {
	return int64(base64.StdEncoding.EncodedLen(int(maxDownload))) + resultSlack
}

// payload builds a result's one string as the bytes arrive from the sandbox, base64-encoding
// binary on the way, so that neither the raw bytes nor a second copy are held beside it. The
// room for it is taken from the call's budget (budget.Reserve) before the bytes are read: all
// of it when the sandbox says the size first (Expect), else in doubling steps.
type payload struct {
	ctx      context.Context
	d        Deps
	binary   bool
	limit    int64 // the most bytes the download may bring
	b        strings.Builder
	enc      io.WriteCloser // base64 into b; nil for text
	read     int64          // bytes received
	reserved int64          // bytes of b taken from the budget
	refused  error          // why the budget had no room, for the result
}

func newPayload(ctx context.Context, d Deps, binary bool, limit int64) *payload {
	p := &payload{ctx: ctx, d: d, binary: binary, limit: limit}
	if binary {
		p.enc = base64.NewEncoder(base64.StdEncoding, &p.b)
	}
	return p
}

// size is what n received bytes take in the result.
func (p *payload) size(n int64) int64 {
	if p.binary {
		return int64(base64.StdEncoding.EncodedLen(int(n)))
	}
	return n
}

// Expect takes room for a download of n bytes before any of it is read (conn.Expecter).
func (p *payload) Expect(n int64) error { return p.room(p.size(n)) }

func (p *payload) Write(b []byte) (int, error) {
	if need := p.size(p.read + int64(len(b))); need > p.reserved {
		// Size unannounced, or the file grew since: take room ahead, in doubling steps.
		if err := p.room(min(max(need, 2*p.reserved, growStep), p.size(p.limit))); err != nil {
			return 0, err
		}
	}
	p.read += int64(len(b))
	if p.enc != nil {
		return p.enc.Write(b)
	}
	return p.b.Write(b)
}

// room makes b hold need bytes, taking them from the budget first.
func (p *payload) room(need int64) error {
	if need <= p.reserved {
		return nil
	}
	if err := budget.Reserve(p.ctx, need-p.reserved); err != nil {
		p.refused = &inputError{msg: p.d.noRoom(err)}
		return p.refused
	}
	p.reserved = need
	p.b.Grow(int(need) - p.b.Len())
	return nil
}

// text finishes the payload: the base64, or the text as it will be in the result, whose
// JSON escapes (encoding/json writes <, > and & as \u003c...) are taken from the budget too.
func (p *payload) text() (string, error) {
	if p.enc != nil {
		if err := p.enc.Close(); err != nil {
			return "", err
		}
		return p.b.String(), nil
	}
	s := p.b.String()
	if utf8.ValidString(s) {
		if err := budget.Reserve(p.ctx, jsonEscapes(s)); err != nil {
			return "", &inputError{msg: p.d.noRoom(err)}
		}
	}
	return s, nil
}

// jsonEscapes is how many bytes longer s is as a JSON string than as itself.
func jsonEscapes(s string) int64 {
	var n int64
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 5
		case c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9):
			n += 3 // U+2028, U+2029 as \u2028: 6 bytes for 3
		}
	}
	return n
}

// noRoom tells the model why its result was not built and what to do instead.
func (d Deps) noRoom(err error) string {
	var other []string
	if d.Transfers != nil {
		other = append(other, "create_transfer_url (a download URL, streamed)")
	}
	if d.HostFS.Enabled() {
		other = append(other, "copy_from_sandbox (to the server's host)")
	}
	instead := "split or compress the file first (execute_command)"
	if len(other) > 0 {
		instead = "use " + strings.Join(other, " or ") + ", which do not hold the file in the server's memory"
	}
	return fmt.Sprintf("The result was not built: %v. Retry in a moment, with fewer large downloads at once; for large files %s.", err, instead)
}

// payloadResult is the result carrying a payload: structuredContent always; the text content
// repeats its JSON only up to textFallbackMax, else summary says what is where.
func payloadResult(v any, payloadLen int, summary string) *mcp.CallToolResult {
	if payloadLen <= textFallbackMax {
		return structured(v)
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{mcp.NewTextContent(summary + fmt.Sprintf(" The content (%d characters) is in structuredContent.content; "+
			"this text does not repeat it above %d characters.", payloadLen, textFallbackMax))},
		StructuredContent: v,
	}
}
