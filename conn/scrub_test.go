package conn

import "testing"

func TestScrubPaths(t *testing.T) {
	tests := []struct{ in, want string }{
		{"open /var/lib/k8s-sandbox/pods/abc/workspace/dir/f.txt: not a directory", "open .../f.txt: not a directory"},
		{`stat "/srv/root/a\x00b": invalid argument`, `stat ".../a\x00b": invalid argument`},
		{"permission denied", "permission denied"},
		{"path does not exist within the sandbox", "path does not exist within the sandbox"},
		{"mkdir /tmp: file exists", "mkdir /tmp: file exists"},
		{"HTTP 500: rename /a/b /c/d: cross-device link", "HTTP 500: rename .../b .../d: cross-device link"},
	}
	for _, tt := range tests {
		if got := scrubPaths(tt.in); got != tt.want {
			t.Errorf("scrubPaths(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
