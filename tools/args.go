package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Each tool's input schema is the one owner of its arguments' rules: the model reads it in
// tools/list, and every call is checked against it here before the handler runs. mcp-go's own
// input validation stays off because its messages ("/max_output_chars: &{Got:127/1 Want:128/1}")
// would answer first and give the model nothing to act on; these sentences take the bound, the
// default and the rule's wording from the same schema.

// argSchema is the part of a tool's input schema the messages are written from.
type argSchema struct {
	Tool       string
	Required   []string        `json:"required"`
	Properties map[string]prop `json:"properties"`
	compiled   *jsonschema.Schema
	withheld   withheld
}

func newArgSchema(t mcp.Tool) (*argSchema, error) {
	raw := t.RawInputSchema
	if raw == nil {
		var err error
		if raw, err = json.Marshal(t.InputSchema); err != nil {
			return nil, err
		}
	}
	s := &argSchema{Tool: t.Name}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: formatNamespace, Validate: k8sRule(validation.IsDNS1123Label)})
	c.RegisterFormat(&jsonschema.Format{Name: formatObjectName, Validate: k8sRule(validation.IsDNS1123Subdomain)})
	c.RegisterFormat(&jsonschema.Format{Name: formatPath, Validate: k8sRule(validPath)})
	c.RegisterFormat(&jsonschema.Format{Name: formatNamespaceOrAll, Validate: k8sRule(func(s string) []string {
		if s == allNamespaces {
			return nil
		}
		return validation.IsDNS1123Label(s)
	})})
	url := "mem:///tools/" + t.Name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	if s.compiled, err = c.Compile(url); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	return s, nil
}

// validPath is formatPath's check, in apimachinery's shape.
func validPath(s string) []string {
	switch {
	case s == "":
		return []string{"must not be empty"}
	case utf8.RuneCountInString(s) > maxPathChars:
		return []string{fmt.Sprintf("must be no more than %d characters", maxPathChars)}
	case !noControlRE.MatchString(s):
		return []string{"must not contain control characters"}
	}
	return nil
}

var noControlRE = regexp.MustCompile(noControl)

// k8sRule adapts an apimachinery validation to a schema format.
func k8sRule(valid func(string) []string) func(any) error {
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil // the type keyword reports non-strings
		}
		if errs := valid(s); len(errs) > 0 {
			return errors.New(strings.Join(errs, "; "))
		}
		return nil
	}
}

// validated makes st check every call against its input schema before its handler runs.
//
// The schema is compiled on the tool's first call, not when the server is built: compiling all
// of them was about a third of building the tools and a sixth of the server's start-up, paid
// before the first answer even by a session that calls two tools. The schemas are static, so
// TestEveryInputSchemaCompiles stands in for the check at start.
//
// A withheld argument (withhold.go) is refused with its reason rather than as unknown.
func validated(st server.ServerTool, w withheld) server.ServerTool {
	schema := sync.OnceValues(func() (*argSchema, error) {
		s, err := newArgSchema(st.Tool)
		if s != nil {
			s.withheld = w
		}
		return s, err
	})
	next := st.Handler
	st.Handler = func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s, err := schema()
		if err != nil {
			return nil, err
		}
		raw, err := s.check(req.GetRawArguments(), req.Params.Arguments)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		// The handler decodes the bytes just checked (bind) rather than encode them again.
		req.Params.Arguments = raw
		return next(withProgress(ctx, req), req)
	}
	return st
}

// check validates raw arguments (a map or raw JSON; absent means {}) and returns them as JSON.
// decoded is mcp-go's decoding of the same arguments, or nil. When its numbers are exact it is
// what gets validated: decoding raw again would copy every string, and an upload's content is
// megabytes, held twice more (decoder buffer and string) by every concurrent call.
func (s *argSchema) check(raw, decoded any) (json.RawMessage, error) {
	b, ok := raw.(json.RawMessage)
	if !ok {
		if raw == nil {
			raw = map[string]any{}
		}
		var err error
		if b, err = json.Marshal(raw); err != nil {
			return nil, badInput("arguments are not JSON: %v", err)
		}
	}
	if len(bytes.TrimSpace(b)) == 0 || string(bytes.TrimSpace(b)) == "null" {
		b = []byte("{}")
	}
	v := decoded
	if _, isMap := decoded.(map[string]any); !isMap || !exactNumbers(decoded) {
		var err error
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(b)); err != nil {
			return nil, badInput("arguments are not valid JSON: %v", err)
		}
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return b, nil
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return nil, badInput("invalid arguments: %v", err)
	}
	return nil, badInput("%s", s.sentence(firstLeaf(verr)))
}

// maxExactInt is where float64 stops holding every integer.
const maxExactInt = 1 << 53

// exactNumbers reports whether every number in a JSON value decoded with encoding/json's
// defaults (float64) is an integer float64 holds exactly, so the schema's bounds judge the
// number the client sent. Fractions, and integers past 2^53 (the reason raw arguments are kept
// at all), may have been rounded; their arguments are decoded again with json.Number. Only a
// literal of 17 or more significant digits that rounds to such an integer is judged rounded,
// and binding it to an integer field fails anyway.
func exactNumbers(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			if !exactNumbers(e) {
				return false
			}
		}
	case []any:
		for _, e := range v {
			if !exactNumbers(e) {
				return false
			}
		}
	case float64:
		return v == math.Trunc(v) && math.Abs(v) < maxExactInt
	case string, bool, nil:
	default:
		return false // not encoding/json's: decode raw instead
	}
	return true
}

// firstLeaf picks the violation the model should fix first; one clear sentence beats a list.
// An empty value also breaks the format or pattern rules, but "must not be empty" says it best.
func firstLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	best, bestRank := e, len(leafOrder)+1
	var walk func(*jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			if r := rank(v.ErrorKind); r < bestRank {
				best, bestRank = v, r
			}
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(e)
	return best
}

var leafOrder = []string{"type", "required", "additionalProperties", "minLength", "maxLength", "maxItems", "enum", "minimum", "maximum"}

func rank(k jsonschema.ErrorKind) int {
	path := k.KeywordPath()
	if len(path) > 0 {
		if i := slices.Index(leafOrder, path[len(path)-1]); i >= 0 {
			return i
		}
	}
	return len(leafOrder)
}

// sentence says what is wrong with which argument, and what to pass instead.
func (s *argSchema) sentence(e *jsonschema.ValidationError) string {
	if len(e.InstanceLocation) == 0 {
		return s.objectSentence(e)
	}
	name := strings.Join(e.InstanceLocation, ".")
	p := s.Properties[e.InstanceLocation[0]]
	rule := argRule(e.InstanceLocation[0], p)
	if len(e.InstanceLocation) > 1 {
		p = nested(p, e.InstanceLocation[1])
		rule = desc(p)
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		return fmt.Sprintf("%s must be %s, got %s. %s", name, typeNames(k.Want), article(k.Got), rule)
	case *kind.Minimum:
		return rangeSentence(name, p, k.Got)
	case *kind.Maximum:
		return rangeSentence(name, p, k.Got)
	case *kind.MinLength:
		if k.Want == 1 {
			return fmt.Sprintf("%s must not be empty. %s", name, rule)
		}
		return fmt.Sprintf("%s must be at least %d characters long, got %d.", name, k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("%s is %d characters long; at most %d are allowed. %s", name, k.Got, k.Want, rule)
	case *kind.MaxItems:
		return fmt.Sprintf("%s has %d items; at most %d are allowed.", name, k.Got, k.Want)
	case *kind.Enum:
		if why, ok := s.withheld[withheldValue(name, fmt.Sprint(k.Got))]; ok {
			return why
		}
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		return fmt.Sprintf("%s must be one of %s; got %s.", name, strings.Join(want, ", "), display(k.Got))
	case *kind.Format:
		if r, ok := formatRules[k.Want]; ok && (desc(p) != "" || rule == "") {
			rule = r // the argument's own description says what it is for, not this
		}
		if k.Got == "" { // the validator reports the format before minLength
			return fmt.Sprintf("%s must not be empty. %s", name, rule)
		}
		// The description states the rule in words; apimachinery's own text adds only its regex.
		return fmt.Sprintf("%s %s is not valid. %s", name, display(k.Got), rule)
	case *kind.Pattern:
		if r, ok := patternRules[k.Want]; ok {
			rule = r + " " + rule
		}
		return fmt.Sprintf("%s %s is not valid. %s", name, display(k.Got), strings.TrimSpace(rule))
	}
	return fmt.Sprintf("%s is invalid: %v. %s", name, e.ErrorKind, rule)
}

func (s *argSchema) objectSentence(e *jsonschema.ValidationError) string {
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		name := k.Missing[0]
		return fmt.Sprintf("%s is required. %s", name, argRule(name, s.Properties[name]))
	case *kind.AdditionalProperties:
		if why, ok := s.withheld[k.Properties[0]]; ok {
			return why
		}
		return fmt.Sprintf("unknown argument %q: %s takes %s.", k.Properties[0], s.Tool, strings.Join(s.names(), ", "))
	case *kind.Type:
		return fmt.Sprintf("arguments must be a JSON object, got %s.", article(k.Got))
	}
	return fmt.Sprintf("invalid arguments: %v", e.ErrorKind)
}

// names lists the arguments, required ones first.
func (s *argSchema) names() []string {
	var opt []string
	for n := range s.Properties {
		if !slices.Contains(s.Required, n) {
			opt = append(opt, n)
		}
	}
	slices.Sort(opt)
	return append(slices.Clone(s.Required), opt...)
}

// rangeSentence names the bounds and the default, all read from the schema.
func rangeSentence(name string, p prop, got *big.Rat) string {
	u := unit(name)
	min, hasMin := number(p["minimum"])
	max, hasMax := number(p["maximum"])
	var b strings.Builder
	switch {
	case hasMin && hasMax:
		fmt.Fprintf(&b, "%s must be between %s and %s%s, got %s.", name, min, max, u, ratString(got))
	case hasMin:
		fmt.Fprintf(&b, "%s must be at least %s%s, got %s.", name, min, u, ratString(got))
	default:
		fmt.Fprintf(&b, "%s must be at most %s%s, got %s.", name, max, u, ratString(got))
	}
	if def, ok := p["default"]; ok {
		fmt.Fprintf(&b, " Pass a value in that range, or leave %s out for the default (%v).", name, def)
	}
	return b.String()
}

// unit follows the spec's naming: *timeout and *_seconds arguments are seconds.
func unit(name string) string {
	if strings.HasSuffix(name, "timeout") || strings.HasSuffix(name, "_seconds") {
		return " seconds"
	}
	return ""
}

func number(v any) (string, bool) {
	switch n := v.(type) {
	case float64:
		return fmt.Sprint(int64(n)), true
	case int:
		return fmt.Sprint(n), true
	case int64:
		return fmt.Sprint(n), true
	}
	return "", false
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	return r.FloatString(3)
}

// nested is the schema of a member of p: a named property, an array item or a map value.
func nested(p prop, member string) prop {
	if props, ok := p["properties"].(map[string]any); ok {
		if m, ok := props[member].(map[string]any); ok {
			return m
		}
	}
	if items, ok := p["items"].(map[string]any); ok {
		return items
	}
	if ap, ok := p["additionalProperties"].(map[string]any); ok {
		return ap
	}
	return prop{}
}

// argRule is what a message says of an argument: its schema's description, or, for one
// without (its schema gives only type and bounds), argRules' rule.
func argRule(name string, p prop) string {
	if d := desc(p); d != "" {
		return d
	}
	if p["format"] == formatNamespaceOrAll { // a listing tool's namespace
		return namespaceRule(true)
	}
	return argRules[name]
}

func desc(p prop) string {
	d, _ := p["description"].(string)
	return d
}

func typeNames(want []string) string {
	out := make([]string, len(want))
	for i, w := range want {
		out[i] = article(w)
	}
	return strings.Join(out, " or ")
}

func article(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

// display quotes a value for a message; control characters come out escaped.
func display(v any) string {
	if s, ok := v.(string); ok {
		if len(s) > 80 {
			s = s[:80] + "..."
		}
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}
