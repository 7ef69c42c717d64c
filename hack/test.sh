#!/usr/bin/env bash
# Runs every test (the end-to-end packages are behind the e2e build tag, so plain `go test ./...`
# runs the unit tests only): installs what they need, builds the local stack's binaries and
# images (cached outside the clone) and brings the stack up, then go vet and go test over the
# whole module. The end-to-end packages run inside the stack's network namespace, where pod
# addresses exist, against agent-sandbox's default version; then the every-connection-type
# scenario runs once more against the older version still supported (the compatibility run).
# A stack this script started is stopped after; one that was up is left on the default version.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. hack/localstack/versions.sh
# Every go command here builds as the stack's binaries are built (its cgo setting and
# -trimpath), as the server image and the e2e harness's server are, so that go's build cache
# can compile each package they share with this module's tests once (the shared modules' versions
# agree: hack/localstack/versions_test.go).
export CGO_ENABLED=$STACK_CGO_ENABLED GOFLAGS="-trimpath${GOFLAGS:+ $GOFLAGS}"
# hack/deps.sh below installs every tool the tests use (helm, the Inspector, mcpb...): a test
# that skips for want of one elsewhere fails here (they read CI).
export CI=${CI:-true}
# The modules of everything built after the control plane download while it compiles, rather
# than leave the CPU idle between builds later on.
(cd "$STACK_MOD" && go list -deps -tags "$STACK_TAGS" tool ./... >/dev/null
  cd "$(sandbox_mod "$AGENT_SANDBOX_COMPAT_VERSION")" && go list -deps tool >/dev/null
  cd "$root" && go list -deps -test -tags e2e ./... >/dev/null) >/dev/null 2>&1 &
# The control plane's cold build (the longest step of a cold run, all CPU) goes on while
# hack/deps.sh waits on apt and npm; stack.sh up, after both, finds it built.
hack/localstack/build.sh &
build=$!
hack/deps.sh
wait "$build"
# go vet compiles this module's packages' dependencies, the tests' included, and analyses them:
# all CPU and nothing timed. At the lowest priority beside the stack's start it takes the CPU the
# start leaves idle, and what it compiles is in go's build cache for the unit tests after.
vet_log=$(mktemp "${TMPDIR:-/tmp}/k8s-sandbox-mcp-vet.XXXXXX.log")
nice -n 19 go vet -tags e2e ./... >"$vet_log" 2>&1 &
vet=$!
was_up=0
hack/localstack/stack.sh status >/dev/null 2>&1 && was_up=1
cleanup() {
  if [ "$was_up" = 1 ]; then
    LOCALSTACK_AGENT_SANDBOX=$AGENT_SANDBOX_DEFAULT_VERSION hack/localstack/stack.sh up >/dev/null 2>&1 || true
  else
    hack/localstack/stack.sh down >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
export LOCALSTACK_AGENT_SANDBOX=$AGENT_SANDBOX_DEFAULT_VERSION
hack/localstack/stack.sh up >/dev/null
# The compatibility run's agent-sandbox binaries and images are built meanwhile, at the lowest
# priority: the stack's tests leave about a fifth of the CPU idle, waiting on controllers.
compat_log=$(mktemp "${TMPDIR:-/tmp}/k8s-sandbox-mcp-compat-build.XXXXXX.log")
(export LOCALSTACK_AGENT_SANDBOX=$AGENT_SANDBOX_COMPAT_VERSION
  nice -n 19 hack/localstack/build.sh && nice -n 19 hack/localstack/images.sh sandbox >/dev/null) >"$compat_log" 2>&1 &
compat_build=$!
vet_rc=0
wait "$vet" || vet_rc=$?
cat "$vet_log" >&2
[ "$vet_rc" = 0 ] || { echo "test.sh: go vet -tags e2e ./... failed" >&2; exit 1; }
# Packages that share the one local stack run one at a time (one of them stops and restarts the
# API server), with go test's default -parallel (the cores): the stack's tests are CPU-bound,
# and six at once on two cores starved the API server (namespace deletions past 2 minutes)
# while saving 2 of 26 minutes. Everything else runs in parallel first, four tests at once in a
# package: conn's five conformance suites (one per connection type, against fakes on loopback)
# mostly wait on the processes they start, and two at a time took 80 s of 106.
stackpkgs=(./internal/localstack ./internal/e2e)
mapfile -t others < <(go list ./... | grep -v -e '/internal/localstack$' -e '/internal/e2e$')
go test -count=1 -parallel 4 -timeout 20m "$@" "${others[@]}"
# gotestsum (hack/deps.sh) prints what go test would, and keeps every test's events so that the
# run ends with its slowest tests: where a slow CI run spent its time.
events=$(mktemp "${TMPDIR:-/tmp}/k8s-sandbox-mcp-e2e.XXXXXX.json")
# sed, not head: head exits after its lines, and gotestsum, still writing, then dies of SIGPIPE,
# which pipefail made the run's exit status (141) after every test had passed.
slowest() { echo "test.sh: the slowest tests (events in $events):" >&2; "$GOTESTSUM" tool slowest --jsonfile "$events" --threshold 30s | sed -n 1,30p >&2; }
trap 'slowest || true; cleanup' EXIT # the stack is stopped whatever the report does
stacktest() { hack/localstack/stack.sh exec "$GOTESTSUM" --format standard-quiet --jsonfile "$1" -- -tags e2e -count=1 -timeout 45m "${@:2}"; }
# Tests that mostly wait run in a go test of their own beside the rest, from the start: in the
# package's run each would hold one of the two parallel slots while sleeping, and one started
# last left the CPU idle for minutes at the end. They are 5 minutes of use with a call every
# 20 s; a sandbox used until its 100 s lifetime cap, a call every 10 s; and a custom pool left
# unused past its 60 s TTL. The test that stops the API server (6 s) runs alone after both:
# within its package go test keeps it apart from the rest, but not from another go test beside
# it (a create_sandbox there was refused while it ran). Only for a plain run: arguments to this
# script (a -run of its own) keep the one run.
waiting='TestSandboxInUseOutlivesItsWindow|TestLifetimeHardCapAndExtend|TestCreateToOrder'
alone='TestReadyzFollowsTheAPIServer'
if [ $# -gt 0 ]; then
  stacktest "$events" -p 1 "$@" "${stackpkgs[@]}"
else
  stacktest "$events" ./internal/localstack # stops and restarts the API server when asked to
  stacktest "$events.waiting" -run "^($waiting)\$" ./internal/e2e &
  waiting_run=$!
  e2e_rc=0
  stacktest "$events.e2e" -skip "^($waiting|$alone)\$" ./internal/e2e || e2e_rc=$?
  waiting_rc=0
  wait "$waiting_run" || waiting_rc=$?
  alone_rc=0
  stacktest "$events.alone" -run "^($alone)\$" ./internal/e2e || alone_rc=$?
  cat "$events.e2e" "$events.waiting" "$events.alone" >>"$events"
  if [ "$e2e_rc" != 0 ] || [ "$waiting_rc" != 0 ] || [ "$alone_rc" != 0 ]; then exit 1; fi
fi
slowest
trap cleanup EXIT
# The compatibility run: the same stack restarted on the older agent-sandbox (its controller,
# router, CRDs, daemons and example pools), and every tool through every connection type, over
# stdio and HTTP.
wait "$compat_build" || echo "test.sh: building for the compatibility run failed early (log: $compat_log); stack.sh up tries again" >&2
export LOCALSTACK_AGENT_SANDBOX=$AGENT_SANDBOX_COMPAT_VERSION
echo "test.sh: compatibility run on agent-sandbox $LOCALSTACK_AGENT_SANDBOX" >&2
hack/localstack/stack.sh up >/dev/null
hack/localstack/stack.sh exec go test -tags e2e -count=1 -timeout 15m "$@" -run '^TestEveryToolEveryConnection$' ./internal/e2e
