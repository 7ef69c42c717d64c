package serve

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// maxClientText bounds each string a client gets in a log message.
const maxClientText = 1024

const redacted = "[redacted]"

// secretPatterns find what looks like a credential in a log text. Log sites must not log
// secrets in the first place (logging.ForClients); this is the second line of defence, for
// what an error from a library may carry. In order: a later pattern sees the earlier ones'
// replacements.
var secretPatterns = []struct {
	re   *regexp.Regexp
	with string
}{
	// user info in URLs: https://user:password@host
	{regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@`), "${1}" + redacted + "@"},
	// an Authorization header's scheme and credentials, with or without the header's name
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`), "${1} " + redacted},
	// JWTs wherever they stand
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`), redacted},
	// name=value, name: value, "name":"value" where the name says it is a secret
	{regexp.MustCompile(`(?i)\b([a-z0-9_.-]*(?:token|secret|passw(?:or)?d|api[_-]?key|credential|authorization|cookie)[a-z0-9_.-]*)(["']?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&"']+)`),
		"${1}${2}" + redacted},
	// environment assignments, NAME=value: a sandbox's env values are the caller's to know
	{regexp.MustCompile(`\b([A-Z][A-Z0-9_]*)=("[^"]*"|'[^']*'|[^\s,;&"']+)`), "${1}=" + redacted},
}

// redact replaces what looks like a secret in s and bounds its length.
func redact(s string) string {
	for _, p := range secretPatterns {
		s = p.re.ReplaceAllString(s, p.with)
	}
	if len(s) > maxClientText {
		cut := maxClientText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
