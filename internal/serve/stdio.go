package serve

import (
	"context"
	"errors"
	"io"
	stdlog "log"

	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

// Stdio serves s over stdin/stdout until EOF or ctx ends.
func Stdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, log zerolog.Logger) error {
	ss := server.NewStdioServer(s)
	ss.SetErrorLogger(stdlog.New(log, "", 0))
	// Long commands occupy a worker each; the default pool of 5 would queue a sixth call.
	server.WithWorkerPoolSize(32)(ss)
	err := ss.Listen(ctx, in, out)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
