package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
)

// The server's icon is in initialize's serverInfo: a small, well-formed SVG data: URI. No
// tool carries one (tools/list stays small).
func TestServerIcon(t *testing.T) {
	d := Deps{Claims: newFakeClaims(), Conn: &fakeConn{}, DefaultNamespace: "default", Log: zerolog.Nop(),
		Owner: func(context.Context) (string, error) { return testOwner, nil }}
	c, err := client.NewInProcessClient(NewServer(d, "test"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: "2025-11-25"}})
	if err != nil {
		t.Fatal(err)
	}
	icons := init.ServerInfo.Icons
	if len(icons) != 1 || icons[0].MIMEType != "image/svg+xml" {
		t.Fatalf("serverInfo icons %+v", icons)
	}
	const prefix = "data:image/svg+xml;base64,"
	src := icons[0].Src
	if !strings.HasPrefix(src, prefix) || len(src) > 600 {
		t.Fatalf("icon src (%d bytes) %.60q", len(src), src)
	}
	svg, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(src, prefix))
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("icon is not well-formed XML: %v", err)
		}
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(list.Tools)
	if bytes.Contains(b, []byte(`"icons"`)) {
		t.Error("a tool carries an icon")
	}
}
