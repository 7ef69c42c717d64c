// Package budget carries a tool call's share of the server's in-flight byte budgets from the
// HTTP layer, which owns the budgets and holds the share until the call's response has been
// written (internal/serve), to the tools that build large results (tools), without either
// importing the other.
package budget

import "context"

// Budget is one call's share of the bytes the server holds in memory for requests and results.
type Budget interface {
	// Reserve takes n more bytes for the call, waiting a short while for room. Its error
	// says what the caller can do when there is none. The bytes come back with the call.
	Reserve(ctx context.Context, n int64) error
}

type key struct{}

// With gives ctx's calls the budget b.
func With(ctx context.Context, b Budget) context.Context { return context.WithValue(ctx, key{}, b) }

// Reserve takes n bytes from ctx's budget. Without one (stdio: a single caller, whose results
// are bounded by their size alone) there is nothing to take.
func Reserve(ctx context.Context, n int64) error {
	if b, ok := ctx.Value(key{}).(Budget); ok && n > 0 {
		return b.Reserve(ctx, n)
	}
	return nil
}

// The server's worst-case resident memory over HTTP is BaselineBytes + Expansion × the bytes
// of requests and results it holds at once (K8S_SANDBOX_HTTP__MAX_BODY_BYTES_IN_FLIGHT): the
// README states it, and the real-node test at that worst case holds the server to it.
const (
	// BaselineBytes is the server idle with its caches warm (it idles near 50 MB).
	BaselineBytes = 64 << 20
	// Expansion is what one admitted byte costs at most until its response is written: a
	// result's payload, the JSON encoder's doubling buffer, the copies mcp-go makes to write
	// it as a server-sent event, and the fragmentation they leave (measured: up to 6).
	Expansion = 7
)

// WorstCase is the resident memory the server stays under when inFlight bytes of requests
// and results are held at once.
func WorstCase(inFlight int64) int64 { return BaselineBytes + Expansion*inFlight }
