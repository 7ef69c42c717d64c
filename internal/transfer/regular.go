package transfer

import (
	"context"
	"strings"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// specialScript prints SPECIAL when $1 (a file tool's path: relative to the runtime's working
// directory, a leading / too) exists and is, after links, neither a directory nor a regular
// file: a FIFO, a socket or a device. The runtimes open such a file before they answer, and
// opening a FIFO blocks until something writes to it: the URL would never answer (the idle
// bound of a transfer is minutes). A missing path or a directory is left to Download, which
// answers them as it does for the tools.
const specialScript = `p=${1#/}; f=./${p:-.}
if [ -e "$f" ] && [ ! -d "$f" ] && [ ! -f "$f" ]; then echo SPECIAL; fi`

// special says whether path in the sandbox is a special file. It answers false when the check
// cannot run: Download then fails or times out as it would have.
func (r *Registry) special(ctx context.Context, t conn.Target, path string) bool {
	ctx, cancel := context.WithTimeout(ctx, consumeWithin)
	defer cancel()
	o, err := conn.RunScript(ctx, r.streamer.Exec, t, conn.Script{
		Argv: []string{"/bin/sh", "-c", specialScript, "sh", path}, Timeout: consumeWithin, MaxStdout: 64})
	if err != nil {
		r.log.Warn().Err(err).Str("path", path).Msg("could not check that a transfer download is a regular file")
		return false
	}
	return o.ExitCode == 0 && strings.TrimSpace(o.Stdout) == "SPECIAL"
}
