package conn

import (
	"path"
	"regexp"
)

// absPath matches an absolute path of two or more segments inside a runtime's error text.
var absPath = regexp.MustCompile(`(?:/[^/\s:'"()\[\]]+){2,}/?`)

// scrubPaths shortens absolute paths in a runtime's error text to their last segment: the
// runtime's own directories (on some nodes the host's) are none of the model's business, and
// the operation around the message already names the path the model asked for.
func scrubPaths(msg string) string {
	return absPath.ReplaceAllStringFunc(msg, func(p string) string {
		return ".../" + path.Base(p)
	})
}
