package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// workflow is a prompt for a common piece of work, written in terms of the real tools; it is
// offered only when every tool it names is listed, like the instructions' sentences.
type workflow struct {
	name, title, description string
	args                     []workflowArg
	tools                    []string
	text                     func(args map[string]string) string
}

type workflowArg struct {
	name, description string
	required          bool
}

// or is v, or def when v is empty.
func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// workflows are the prompts. pinnedPool: the operator pinned the warm pool (K8S_SANDBOX_PIN__WARMPOOL);
// as create_sandbox's schema withholds warmpool then, no prompt offers, reads or names it.
func workflows(pinnedPool bool) []workflow {
	pool := []workflowArg{{name: "warmpool", description: "Warm pool to create the sandbox from (list_sandbox_templates shows them)"}}
	pick := func(a map[string]string) string {
		if a["warmpool"] != "" {
			return fmt.Sprintf("create_sandbox with warmpool %q", a["warmpool"])
		}
		return "create_sandbox (list_sandbox_templates first if you do not know a warm pool)"
	}
	if pinnedPool {
		pool, pick = nil, func(map[string]string) string { return "create_sandbox (this server fixes the pool it comes from)" }
	}
	return []workflow{
		{name: "run_tests", title: "Run a project's tests in a fresh sandbox",
			description: "Creates a sandbox, brings the project in, runs its tests as a process and reports what failed.",
			args: append([]workflowArg{{name: "test_command", description: "How the project runs its tests, e.g. \"go test ./...\" or \"pytest -q\"", required: true},
				{name: "source", description: "Where the project comes from: a git URL to clone, or \"upload\" to send a local directory as a tar archive"}}, pool...),
			tools: []string{"list_sandbox_templates", "create_sandbox", "execute_command", "upload_archive", "start_process", "read_process_output", "delete_sandbox"},
			text: func(a map[string]string) string {
				src := "clone " + or(a["source"], "the repository") + " with execute_command (git clone --depth 1 ...)"
				if a["source"] == "upload" {
					src = "send the project directory with upload_archive (a tar.gz of it, base64)"
				}
				return fmt.Sprintf("Run this project's tests in a fresh sandbox.\n1. %s.\n2. In the sandbox, %s.\n"+
					"3. Start the tests with start_process: %s. Poll read_process_output with since = the previous next and "+
					"wait_seconds 30 until running is false.\n4. Report the exit code and, for each failure, the test's name and "+
					"the lines that explain it (read_process_output's head and tail keep long logs bounded).\n"+
					"5. delete_sandbox when done, unless asked to keep it.", pick(a), src, a["test_command"])
			}},
		{name: "preview_web_app", title: "Serve a web app from a sandbox and preview it",
			description: "Starts a server in a sandbox as a process and gives you a URL for its port.",
			args: append([]workflowArg{{name: "start_command", description: "Command that starts the server on 0.0.0.0, e.g. \"python3 -m http.server 8000\"", required: true},
				{name: "port", description: "The TCP port it listens on, e.g. 8000", required: true}}, pool...),
			tools: []string{"list_sandbox_templates", "create_sandbox", "start_process", "read_process_output", "expose_port", "unexpose_port", "signal_process", "delete_sandbox"},
			text: func(a map[string]string) string {
				return fmt.Sprintf("Serve a web app from a sandbox.\n1. %s (or use the sandbox you already have).\n"+
					"2. start_process: %s. It must listen on 0.0.0.0, not 127.0.0.1.\n3. read_process_output with wait_seconds "+
					"until the server says it is listening (or shows an error to fix).\n4. expose_port with port %s and give the "+
					"URL it returns.\n5. When done: unexpose_port, then signal_process or delete_sandbox.", pick(a), a["start_command"], a["port"])
			}},
		{name: "explore_repository", title: "Explore a repository in a sandbox",
			description: "Maps a codebase already in a sandbox with the bounded workspace tools instead of shell pipelines.",
			args: []workflowArg{{name: "sandbox_claim_name", description: "The sandbox that holds the repository", required: true},
				{name: "path", description: "The repository's directory in the sandbox (default: its working directory)"},
				{name: "question", description: "What you want to find out"}},
			tools: []string{"list_files", "search_files", "read_file"},
			text: func(a map[string]string) string {
				return fmt.Sprintf("Explore the repository in sandbox %q at %q%s.\n1. list_files on it, then on the directories that "+
					"look central (src, cmd, pkg, lib...).\n2. search_files with glob for build and entry files (go.mod, package.json, "+
					"pyproject.toml, main.*), and with pattern for the names the question is about.\n3. read_file the parts that "+
					"matter, in ranges (offset, limit), not whole large files.\n4. Answer with the paths and line numbers you relied on.",
					a["sandbox_claim_name"], or(a["path"], "."), question(a["question"]))
			}},
	}
}

func question(q string) string {
	if q == "" {
		return ""
	}
	return ", to answer: " + q
}

// prompts are the workflows whose tools are all listed.
func (d Deps) prompts(listed []server.ServerTool) []server.ServerPrompt {
	names := toolNames(listed)
	var out []server.ServerPrompt
	for _, w := range workflows(d.Pinned.Warmpool != "") {
		if !containsAll(names, w.tools) {
			continue
		}
		opts := []mcp.PromptOption{mcp.WithPromptTitle(w.title), mcp.WithPromptDescription(w.description)}
		for _, a := range w.args {
			ao := []mcp.ArgumentOption{mcp.ArgumentDescription(a.description)}
			if a.required {
				ao = append(ao, mcp.RequiredArgument())
			}
			opts = append(opts, mcp.WithArgument(a.name, ao...))
		}
		w := w
		out = append(out, server.ServerPrompt{Prompt: mcp.NewPrompt(w.name, opts...),
			Handler: func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				for _, a := range w.args {
					if a.required && strings.TrimSpace(req.Params.Arguments[a.name]) == "" {
						return nil, fmt.Errorf("prompt %s needs %s: %s", w.name, a.name, a.description)
					}
				}
				return mcp.NewGetPromptResult(w.description, []mcp.PromptMessage{
					mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(w.text(req.Params.Arguments))),
				}), nil
			}})
	}
	return out
}

// completer offers values for prompt arguments and the sandboxes://{namespace} template:
// namespaces from the allowlist (or the default one), warm pools from the namespace's catalog.
type completer struct{ d Deps }

// maxCompletions is the spec's bound on the values of one completion answer.
const maxCompletions = 100

func (c completer) CompletePromptArgument(ctx context.Context, _ string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	switch arg.Name {
	case "warmpool":
		if c.d.Pinned.Warmpool != "" {
			return &mcp.Completion{}, nil // pinned: no prompt takes it
		}
		ns, err := c.d.namespace(cc.Arguments["namespace"])
		if err != nil {
			return &mcp.Completion{}, nil
		}
		pools, _, err := c.d.Claims.Catalog(ctx, ns)
		if err != nil {
			return &mcp.Completion{}, nil // a completion is a hint: an unreachable API offers none
		}
		var names []string
		for _, p := range pools {
			names = append(names, p.Name)
		}
		return matching(names, arg.Value), nil
	case "namespace":
		return matching(c.namespaces(), arg.Value), nil
	}
	return &mcp.Completion{}, nil
}

func (c completer) CompleteResourceArgument(_ context.Context, _ string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if arg.Name != "namespace" {
		return &mcp.Completion{}, nil
	}
	return matching(c.namespaces(), arg.Value), nil
}

func (c completer) namespaces() []string {
	if len(c.d.AllowedNamespaces) > 0 {
		return c.d.AllowedNamespaces
	}
	ns, _ := c.d.namespace("")
	return []string{ns}
}

// matching are the values that start with prefix, sorted, at most maxCompletions of them.
func matching(values []string, prefix string) *mcp.Completion {
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	c := &mcp.Completion{Values: out, Total: len(out)}
	if len(out) > maxCompletions {
		c.Values, c.HasMore = out[:maxCompletions], true
	}
	return c
}
