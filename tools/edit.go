package tools

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/workspace"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/output"
)

// read_file and edit_file work on the file where it is (conn/workspace): only the lines asked
// for, or the edited lines, reach the server.
const (
	defaultReadLines = 1000
	maxReadLines     = 10000
	// maxLineBytes cuts a line that long (minified code, data on one line).
	maxLineBytes = 2000
	// maxReadBytes stops a read early; next_offset continues it.
	maxReadBytes = 256 << 10
	editContext  = 3
)

func (d Deps) files() workspace.FS { return workspace.FS{Exec: d.Conn} }

type readFileArgs struct {
	claimArgs
	Path    string `json:"path"`
	Offset  *int   `json:"offset"`
	Limit   *int   `json:"limit"`
	Timeout *int   `json:"timeout"`
}

// ReadFileResult is read_file's answer.
type ReadFileResult struct {
	Path       string `json:"path"`
	Content    string `json:"content" jsonschema:"the lines, each as its number, a tab and its text"`
	FirstLine  int    `json:"first_line"`
	LastLine   int    `json:"last_line"`
	TotalLines int    `json:"total_lines"`
	NextOffset int    `json:"next_offset,omitempty" jsonschema:"first line not shown; absent at the end of the file"`
	CutLines   int    `json:"cut_lines,omitempty" jsonschema:"lines longer than the line limit, cut with a marker"`
}

func filePathProp() prop {
	return pathProp("")
}

func readFileTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("read_file",
		mcp.WithToolTitle("Read lines of a text file"),
		mcp.WithDescription("Returns lines of a text file of any size as number, tab, text from offset, with total_lines and next_offset. Binary files are refused."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "path"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(), "path": filePathProp(),
			"offset":  intProp("First line (1-based)", 1, 1<<31-1, 1),
			"limit":   intProp("", 1, maxReadLines, defaultReadLines),
			"timeout": timeoutProp(),
		})),
		outputSchema[ReadFileResult](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "read the file"
		var a readFileArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		var lines workspace.Lines
		if res := d.onClaim(ctx, op, a.claimArgs, a.Timeout, func(ctx context.Context, t conn.Target) (err error) {
			lines, err = d.files().ReadLines(ctx, t, a.Path, intArg(a.Offset, 1), intArg(a.Limit, defaultReadLines), maxLineBytes, maxReadBytes)
			return err
		}); res != nil {
			return res, nil
		}
		return structured(readFileResult(a.Path, intArg(a.Offset, 1), lines)), nil
	}}
}

func readFileResult(path string, offset int, l workspace.Lines) ReadFileResult {
	r := ReadFileResult{Path: path, TotalLines: l.Total, NextOffset: l.Next, FirstLine: offset}
	var b strings.Builder
	for _, line := range l.Lines {
		b.WriteString(strconv.Itoa(line.N))
		b.WriteByte('\t')
		b.WriteString(output.Decode([]byte(line.Text)))
		if line.Cut > 0 {
			fmt.Fprintf(&b, " [... line cut: %d more bytes]", line.Cut)
			r.CutLines++
		}
		b.WriteByte('\n')
		r.LastLine = line.N
	}
	if len(l.Lines) == 0 {
		r.FirstLine = 0
	}
	r.Content = b.String()
	return r
}

type editFileArgs struct {
	claimArgs
	Path       string `json:"path"`
	OldText    string `json:"old_text"`
	NewText    string `json:"new_text"`
	ReplaceAll bool   `json:"replace_all"`
	Timeout    *int   `json:"timeout"`
}

// EditFileResult is edit_file's answer.
type EditFileResult struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	Lines        []int  `json:"lines" jsonschema:"lines where old_text started (at most 20)"`
	Changed      string `json:"changed" jsonschema:"the changed lines with a little context, numbered as in the new file"`
	TotalLines   int    `json:"total_lines"`
}

func editFileTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("edit_file",
		mcp.WithToolTitle("Edit a text file"),
		mcp.WithDescription("Replaces old_text with new_text in a file. old_text must match exactly once (whitespace included) unless replace_all, else nothing changes and the error lists the matches. Returns the changed lines; needs python3."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "path", "old_text", "new_text"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(), "path": filePathProp(),
			"old_text":    {"type": "string", "minLength": 1, "maxLength": maxCommandChars},
			"new_text":    {"type": "string", "maxLength": maxCommandChars},
			"replace_all": boolProp(""),
			"timeout":     timeoutProp(),
		})),
		outputSchema[EditFileResult](),
		hints(false, true, false),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "edit the file"
		var a editFileArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		if a.OldText == a.NewText {
			return failure(op, claimRef{}, badInput("old_text and new_text are the same: there is nothing to change")), nil
		}
		var ed workspace.Edit
		if res := d.onClaim(ctx, op, a.claimArgs, a.Timeout, func(ctx context.Context, t conn.Target) (err error) {
			ed, err = d.files().EditFile(ctx, t, a.Path, a.OldText, a.NewText, a.ReplaceAll, editContext)
			return err
		}); res != nil {
			return res, nil
		}
		r := EditFileResult{Path: a.Path, Replacements: ed.Replacements, Lines: ed.Lines, TotalLines: ed.TotalLines}
		var b strings.Builder
		for i, s := range ed.Snippets {
			if i > 0 {
				b.WriteString("...\n")
			}
			for j, line := range s.Lines {
				fmt.Fprintf(&b, "%d\t%s\n", s.First+j, line)
			}
		}
		r.Changed = b.String()
		return structured(r), nil
	}}
}

// workspaceAdvice explains the file tools' own errors; "" for any other error.
func workspaceAdvice(op string, err error) string {
	var me *workspace.MatchError
	switch {
	case errors.As(err, &me) && errors.Is(err, workspace.ErrNoMatch):
		near := ""
		if len(me.Lines) > 0 {
			near = " Lines holding its first line: " + joinInts(me.Lines) + "."
		}
		return fmt.Sprintf("Could not %s: old_text was not found, so nothing changed.%s Read the file with read_file and copy "+
			"old_text exactly (indentation, trailing spaces and line breaks count; leave out the line numbers; a file with "+
			"CRLF line ends shows \\r at the end of its lines, and old_text needs it too).", op, near)
	case errors.As(err, &me) && errors.Is(err, workspace.ErrManyMatches):
		return fmt.Sprintf("Could not %s: old_text matches %d times (starting on lines %s), so nothing changed. Include "+
			"more surrounding lines to make it unique, or pass replace_all: true to change every one.", op, me.Count, joinInts(me.Lines))
	case errors.Is(err, workspace.ErrBinary):
		return fmt.Sprintf("Could not %s: %v. Use download_file with binary=true for binary files.", op, err)
	case errors.Is(err, workspace.ErrBadRegex):
		return fmt.Sprintf("Could not %s: %v. pattern is a POSIX extended regular expression (grep -E): escape ( ) [ ] { } . * + ? | ^ $ \\ "+
			"with a backslash to match them literally; \\d and lookarounds are not supported (use [0-9]).", op, err)
	case errors.Is(err, workspace.ErrExists) && op == "create the directory":
		return fmt.Sprintf("Could not %s: %v: a file has that name. Remove it (remove_path) or choose another path.", op, err)
	case errors.Is(err, workspace.ErrExists):
		return fmt.Sprintf("Could not %s: %v. Pass overwrite: true to replace it, or choose another destination.", op, err)
	case errors.Is(err, conn.ErrNotDir) && strings.Contains(op, "archive"):
		return fmt.Sprintf("Could not %s: %v. path must be a directory.", op, err)
	case errors.Is(err, workspace.ErrNotEmpty):
		return fmt.Sprintf("Could not %s: %v. Pass recursive: true to remove it with everything in it.", op, err)
	case errors.Is(err, workspace.ErrChanged):
		return fmt.Sprintf("Could not %s: %v. Another edit or a process wrote the file at the same moment; read_file it and call edit_file again.", op, err)
	case errors.Is(err, workspace.ErrNoPython):
		return fmt.Sprintf("Could not %s: %v, which this sandbox's image lacks. Write the whole file with upload_file instead.", op, err)
	}
	return ""
}

func joinInts(n []int) string {
	s := make([]string, len(n))
	for i, v := range n {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}
