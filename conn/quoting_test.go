package conn_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

var trickyArgv = [][]string{
	{"echo", "plain"},
	{"it's", `"double"`, `back\slash`, `\\`, `\'`, "$HOME", "`id`", "$(id)"},
	{"", " ", "\t", "line1\nline2", "\r\n"},
	{"héllo wörld", "☃", "日本語", "emoji 🙂"},
	{"a && b | c > f", ";", "#comment", "*", "~", "!"},
	{"'", "''", "'''", `'\''`},
}

// What the runtime splits must be exactly what was quoted.
func TestShJoinRoundTripsThroughShlex(t *testing.T) {
	for _, argv := range trickyArgv {
		got, err := shlexSplit(conn.ShJoin(argv))
		if err != nil || !slices.Equal(got, argv) {
			t.Errorf("shlexSplit(ShJoin(%q)) = %q, %v", argv, got, err)
		}
	}
}

// The fake runtime's shlex and our quoting both agree with Python's own shlex.split.
func TestShlexAgreesWithPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: cannot compare with the real shlex.split")
	}
	inputs := []string{`a "b c" 'd e' f\ g`, `"a\"b" "c\\d" "e\f" 'g\h'`, `x''y "" ''`, "tab\tsep\nnl", `a\`, `"open`}
	for _, argv := range trickyArgv {
		inputs = append(inputs, conn.ShJoin(argv))
	}
	script := `import json, shlex, sys
out = []
for s in json.load(sys.stdin):
    try:
        out.append(shlex.split(s))
    except ValueError as e:
        out.append(None)
json.dump(out, sys.stdout)`
	cmd := exec.Command(python, "-c", script)
	in, _ := json.Marshal(inputs)
	cmd.Stdin = strings.NewReader(string(in))
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var want [][]string
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	for i, s := range inputs {
		got, err := shlexSplit(s)
		if want[i] == nil {
			if err == nil {
				t.Errorf("%q: Python refuses it, the fake split it into %q", s, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, want[i]) {
			t.Errorf("%q: fake %q (%v), Python %q", s, got, err, want[i])
		}
	}
}
