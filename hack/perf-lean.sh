#!/usr/bin/env bash
# Splits what the server adds over the leanest execute_command (bench/cmd/lean-exec-mcp) by
# where the CPU goes: perf samples both processes, kernel included, during item 1's lean
# comparison and sums them per library, in µs per call. Go's own profiler cannot do this: it
# sees one process and not the kernel's share (context switches, pipes, sockets), which is most
# of a small call's CPU on this kind of VM.
#
#   hack/perf-lean.sh             3,000 calls per side
#   hack/perf-lean.sh 6000        more calls: finer figures
#
# Needs root and perf (linux-perf); leaves the local stack up. Both binaries are built with
# symbols for the occasion. The lean server runs two series of N calls (against Execute, then
# against the server), the server one, so each process's samples are divided by its own number
# of calls.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
calls=${1:-3000}
lean_calls=$((2 * calls)) # see above
freq=1999
[ "$(id -u)" = 0 ] || { echo "perf-lean: needs root" >&2; exit 1; }
command -v perf >/dev/null || { echo "perf-lean: needs perf (apt-get install linux-perf)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
hack/localstack/stack.sh up >/dev/null
mkdir -p bin
sym() { CGO_ENABLED=0 go build -trimpath "$@"; }
sym -o bin/k8s-sandbox-mcp .
sym -o bin/minimal-mcp ./bench/cmd/minimal-mcp
sym -o bin/lean-exec-mcp ./bench/cmd/lean-exec-mcp
go build -o bin/sandbox-bench ./bench/cmd/sandbox-bench

record() {
  local lean server
  until lean=$(pgrep -x lean-exec-mcp); do sleep 0.2; done
  server=$(pgrep -x k8s-sandbox-mcp | paste -sd,)
  perf record -q -F "$freq" -o "$out/perf.data" -p "$lean,$server" >/dev/null 2>&1 &
  local p=$!
  perf stat -x, --per-thread -e task-clock,context-switches,raw_syscalls:sys_enter -p "$lean,$server" -o "$out/stat.csv" &
  local q=$!
  while kill -0 "$lean" 2>/dev/null; do sleep 0.2; done
  kill -INT "$p" "$q"
  wait "$p" "$q" || true
}
record &
recorder=$!
hack/localstack/stack.sh exec bin/sandbox-bench -server bin/k8s-sandbox-mcp -minimal bin/minimal-mcp -lean bin/lean-exec-mcp \
  -out "$out/report.md" -items 1 -small-runs 50 -lean-runs "$calls" >"$out/bench.log" 2>&1 || { cat "$out/bench.log" >&2; exit 1; }
wait "$recorder"
grep -F 'vs the server' "$out/report.md" | head -1

# Per call and process: CPU, context switches and system calls, summed over its threads.
awk -F, -v calls="$calls" -v lean_calls="$lean_calls" '
$1 ~ /^(lean-exec-mcp|k8s-sandbox-mc)/ && $2 != "" {
  comm = $1; sub(/-[0-9]+$/, "", comm); sum[comm "," $4] += $2
}
END {
  for (k in sum) {
    split(k, f, ","); n = (f[1] == "lean-exec-mcp") ? lean_calls : calls
    v = sum[k] / n; if (f[2] == "task-clock") v = v * 1000
    printf "%-16s %-26s %10.1f per call%s\n", f[1], f[2], v, (f[2] == "task-clock") ? " (µs)" : ""
  }
}' "$out/stat.csv" | sort

# Group: the kernel by DSO; Go symbols by package (the path up to the first dot after its last
# slash), with the runtime's packages together and modules cut to their repository.
perf script -i "$out/perf.data" -F comm,ip,sym,dso 2>/dev/null | awk -v freq="$freq" -v calls="$calls" -v lean_calls="$lean_calls" '
function abs(x) { return x < 0 ? -x : x }
function group(sym, dso,   pkg, n, parts, rest) {
  if (dso ~ /kernel/) return "kernel"
  pkg = sym
  n = match(pkg, /\/[^\/]*$/)
  if (n) { rest = substr(pkg, n); pkg = substr(pkg, 1, n - 1) substr(rest, 1, index(rest, ".") - 1) }
  else if (index(pkg, ".")) pkg = substr(pkg, 1, index(pkg, ".") - 1)
  if (pkg ~ /k8s-sandbox-mcp\//) return "this project"
  if (pkg == "runtime" || pkg ~ /^internal\/runtime/ || pkg ~ /^runtime\// || pkg == "gcWriteBarrier" || pkg ~ /^(aeshashbody|memeqbody|indexbytebody|cmpbody)$/) {
    if (sym ~ /gcDrain|[sS]canobject|[sS]canObject|greyobject|markBits|gcBgMarkWorker|tryDeferToSpanScan|scanblock|scanstack|scanframe|markroot|wbBuf|gcWriteBarrier|findObject|[sS]weep|gcmarknewobject|ScanSpan|spanSet|bulkBarrier|typePointers|gcAssist/) return "Go runtime: GC marking, sweeping"
    return "Go runtime: the rest"
  }
  n = split(pkg, parts, "/")
  if (parts[1] == "github.com" || pkg ~ /^golang\.org\/x\//) return parts[1] "/" parts[2] "/" parts[3]
  if (parts[1] ~ /\./ && n > 1) return parts[1] "/" parts[2]
  return pkg
}
{
  comm = $1; dso = $NF; sym = $3
  if (comm == "lean-exec-mcp") { lean[group(sym, dso)]++; nl++ }
  else if (comm == "k8s-sandbox-mc" || comm == "k8s-sandbox-mcp") { srv[group(sym, dso)]++; ns++ }
}
END {
  us = 1e6 / freq
  for (g in lean) all[g] = 1
  for (g in srv) all[g] = 1
  printf "%-40s %10s %10s %10s\n", "where (µs per call)", "lean", "server", "server-lean"
  for (g in all) {
    l = lean[g] * us / lean_calls; s = srv[g] * us / calls
    rows[g] = sprintf("%-40s %10.1f %10.1f %+10.1f", g, l, s, s - l); d[g] = s - l
  }
  n = 0
  for (g in d) keys[++n] = g
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (abs(d[keys[j]]) > abs(d[keys[i]])) { t = keys[i]; keys[i] = keys[j]; keys[j] = t }
  for (i = 1; i <= n && i <= 24; i++) print rows[keys[i]]
  printf "%-40s %10.1f %10.1f %+10.1f\n", "all", nl * us / lean_calls, ns * us / calls, ns * us / calls - nl * us / lean_calls
}'
