package conn

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
)

// execArgv validates a request and returns the argv to run: shell commands go through
// /bin/sh -c, Argv runs as given.
func execArgv(req ExecRequest) ([]string, error) {
	if req.Stdout == nil || req.Stderr == nil {
		return nil, errors.New("exec: Stdout and Stderr writers are required")
	}
	argv, err := plainArgv(req)
	if err != nil {
		return nil, err
	}
	if argv, err = withCwdEnv(req, argv); err != nil {
		return nil, err
	}
	return withSavedOutput(req, argv), nil
}

// teeScript runs the rest of its arguments with stdout and stderr copied to files in $1,
// keeping the exit code. It runs before any cd of cwdEnvScript, so $1 is relative to the
// runtime's working directory.
//
// $1 lies under the server's own state directory (.k8s-sandbox-mcp), which anything in the
// sandbox may replace with a link to anywhere. So no part of $1 may be a link; once
// created, the script enters $1 and checks where it physically is, then opens the fifos
// from inside it and unlinks them: from then on every write goes through that directory or
// those descriptors, whatever its path is swapped for.
const teeScript = `d=$1; shift; base=$(pwd -P) || exit 125
fail() { echo "cannot save the output in $d: $1; the command did not run" >&2; exit 125; }
set -f; IFS=/; cur=.
for seg in $d; do
  [ -n "$seg" ] || continue
  cur=$cur/$seg
  if [ -L "$cur" ]; then fail "${cur#./} is a symbolic link, which could lead outside the working directory (remove it: the directory is created anew)"
  elif [ -e "$cur" ]; then [ -d "$cur" ] || fail "${cur#./} is not a directory (remove it: the directory is created anew)"
  else mkdir -- "$cur" || fail "cannot create ${cur#./}"; fi
done
unset IFS; set +f
cd -P -- "$d" || fail "cannot enter it"
[ "$base" = / ] || case $(pwd -P) in "$base"/*) ;; *) fail "it leads outside the working directory" ;; esac
rm -f -- .o .e stdout stderr && mkfifo -- .o .e || exit 125
tee stdout < .o & a=$!
tee stderr < .e >&2 & b=$!
exec 3> .o 4> .e
rm -f -- .o .e
cd -- "$base" || exit 125
"$@" >&3 2>&4 3>&- 4>&-; c=$?
exec 3>&- 4>&-
wait $a $b; exit $c`

// withSavedOutput wraps argv to keep its output in req.SaveOutput; argv as is without it.
func withSavedOutput(req ExecRequest, argv []string) []string {
	if req.SaveOutput == "" {
		return argv
	}
	return append([]string{"/bin/sh", "-c", teeScript, "sh", req.SaveOutput}, argv...)
}

// stdinClosedByShell makes the outermost shell of argv, when this package wrote it (a shell
// command, or a cwd, env or saved-output wrapper), close its own stdin: a command that reads
// input then ends at once instead of waiting for its timeout, without a separate request to
// the runtime. On the script's first line, so the shell's error messages keep their line
// numbers. False for a program run as argv alone, which the caller must give an EOF itself.
func stdinClosedByShell(req ExecRequest, argv []string) ([]string, bool) {
	ours := req.Command != "" || req.Cwd != "" || len(req.Env) > 0 || req.SaveOutput != ""
	if !ours || len(argv) < 3 || argv[0] != "/bin/sh" || argv[1] != "-c" {
		return argv, false
	}
	out := slices.Clone(argv)
	out[2] = "exec </dev/null; " + out[2]
	return out, true
}

// plainArgv is the argv of a request without its Cwd and Env.
func plainArgv(req ExecRequest) ([]string, error) {
	switch {
	case req.Command != "" && len(req.Argv) > 0:
		return nil, errors.New("exec: set either Command or Argv, not both")
	case len(req.Argv) > 0:
		if req.Argv[0] == "" {
			return nil, errors.New("exec: Argv[0] (the program) is empty")
		}
		return req.Argv, nil
	case req.Command != "":
		return []string{"/bin/sh", "-c", req.Command}, nil
	}
	return nil, errors.New("exec: command is empty")
}

// cwdEnvScript enters $1 (unless empty), exports the NAME=VALUE arguments up to "--", and
// execs the rest: the same on every runtime, whatever its own notion of cwd and environment.
const cwdEnvScript = `if [ -n "$1" ]; then cd -- "$1" 2>/dev/null || ` +
	`{ echo "cannot run in $1: no such directory (or not allowed)" >&2; exit 126; }; fi; shift; ` +
	`while [ "$1" != -- ]; do export "$1"; shift; done; shift; exec "$@"`

// withCwdEnv wraps argv to run in req's Cwd with req's Env; argv as is when neither is set.
func withCwdEnv(req ExecRequest, argv []string) ([]string, error) {
	if req.Cwd == "" && len(req.Env) == 0 {
		return argv, nil
	}
	out := []string{"/bin/sh", "-c", cwdEnvScript, "sh", req.Cwd}
	for _, k := range slices.Sorted(maps.Keys(req.Env)) {
		if !ValidEnvName(k) {
			return nil, fmt.Errorf("exec: %q is not an environment variable name", k)
		}
		out = append(out, k+"="+req.Env[k])
	}
	return append(append(out, "--"), argv...), nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidEnvName reports whether name can be an environment variable's name.
func ValidEnvName(name string) bool { return envName.MatchString(name) }
