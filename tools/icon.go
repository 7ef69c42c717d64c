package tools

import (
	"encoding/base64"

	"github.com/mark3labs/mcp-go/mcp"
)

// iconSVG is the server's icon: a shell prompt in a dashed box (a sandbox), in Kubernetes
// blue. It goes on the server (serverInfo) only, not on every tool: tools/list is what a
// model reads, and is kept small. From 2026-07-28 mcp-go repeats serverInfo in every result's
// _meta, so each byte here is paid on every answer of that protocol: keep it small.
const iconSVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">` +
	`<rect width="32" height="32" rx="7" fill="#326ce5"/>` +
	`<rect x="4.5" y="4.5" width="23" height="23" rx="3" fill="none" stroke="#fff" stroke-dasharray="3 2"/>` +
	`<path d="M10 12l4 4-4 4M16 21h6" fill="none" stroke="#fff" stroke-width="2.5" stroke-linecap="round" stroke-linejoin="round"/>` +
	`</svg>`

// serverIcon is iconSVG as a data: URI, so no client fetches anything to show it.
func serverIcon() mcp.Icon {
	return mcp.Icon{
		Src:      "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(iconSVG)),
		MIMEType: "image/svg+xml",
		Sizes:    []string{"any"},
	}
}
