package conn

// Test hooks into unexported helpers.
var (
	ShJoin     = shJoin
	EscapePath = escapePath
)

// GRPCConnCount reports how many gRPC connections a sandboxd Conn caches.
func GRPCConnCount(c Conn) int {
	s := c.(*sandboxdConn)
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
