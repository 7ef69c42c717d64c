package proc

// The scripts run with /bin/sh -c through conn.Conn.Exec, arguments after the script: no
// value is ever spliced into script text. They need only POSIX sh, coreutils (split, sleep,
// base64, timeout, wc) and util-linux's setsid, which every image with a shell has, so both
// runtimes (sandboxd and the python runtime) get processes without a daemon of their own.
//
// One process is a directory <root>/<id>:
//
//	meta          base64 JSON of what was started (name, command, cwd, start time)
//	seg           segment size in bytes
//	pid           the process's pid, also its process group and session (setsid)
//	exit          its exit status (128+N for signal N), written once its output is flushed
//	stdin         a FIFO; "holder" is a sleep keeping it open, so the process sees EOF
//	              only when stdin is closed (holder killed; "stdin.closed" marks it)
//	out/o.NNNNNN  stdout in segments of seg bytes, numbered from the stream's start;
//	err/e.NNNNNN  stderr; the oldest segments are deleted past the cap (KEEP segments),
//	              so a stream's first byte kept is (first segment number) * seg
//
// A supervisor in its own session (setsid -f, detached from the request) starts the process
// in another session and waits for it, so signals to the process group never reach it.

// startScript: $0 root, $1 id, $2 seg, $3 keep, $4 cwd, $5 meta, $6 supervisor script, then
// the argv to run. Prints "OK <pid>", "EXISTS", "NOCWD" or "MISSING <tools>".
const startScript = `r=$0 id=$1 seg=$2 keep=$3 cwd=$4 meta=$5 sup=$6; shift 6
m=; for c in setsid split mkfifo timeout base64; do command -v $c >/dev/null 2>&1 || m="$m $c"; done
[ -z "$m" ] || { echo "MISSING$m"; exit 0; }
d="$r/$id"
um=$(umask); umask 077
mkdir -p "$r" || exit 3
mkdir "$d" 2>/dev/null || { echo EXISTS; exit 0; }
mkdir "$d/out" "$d/err" && mkfifo "$d/stdin" "$d/out.pipe" "$d/err.pipe" || exit 3
printf '%s\n' "$meta" > "$d/meta" && echo "$seg" > "$d/seg" || exit 3
d=$(cd "$d" && pwd) || exit 3
umask "$um"
if [ -n "$cwd" ]; then cd -- "$cwd" 2>/dev/null || { rm -rf "$d"; echo NOCWD; exit 0; }; fi
setsid -f env -u K8S_SANDBOX_MCP_RUN sh -c "$sup" "$d" "$seg" "$keep" "$@" </dev/null >/dev/null 2>&1
i=0; while [ ! -e "$d/pid" ] && [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done
[ -e "$d/pid" ] || exit 5
echo "OK $(cat "$d/pid")"`

// superviseScript: $0 dir, $1 seg, $2 keep, then the argv.
// KEEP and SHELL (split runs the filter with $SHELL) are given to split alone, so the
// process inherits neither.
const superviseScript = `d=$0 seg=$1 keep=$2; shift 2
f='n=${FILE##*.}; while [ ${#n} -gt 1 ] && [ "${n#0}" != "$n" ]; do n=${n#0}; done; o=$((n - KEEP)); ` +
	`[ $o -lt 0 ] || rm -f "${FILE%.*}.$(printf %06d $o)"; exec cat > "$FILE"'
KEEP=$keep SHELL=/bin/sh split -a 6 -d -b "$seg" --filter="$f" - "$d/out/o." < "$d/out.pipe" & so=$!
KEEP=$keep SHELL=/bin/sh split -a 6 -d -b "$seg" --filter="$f" - "$d/err/e." < "$d/err.pipe" & se=$!
sleep infinity 3<>"$d/stdin" & h=$!; echo $h > "$d/holder"
setsid -- "$@" < "$d/stdin" > "$d/out.pipe" 2> "$d/err.pipe" & p=$!
echo $p > "$d/pid.tmp" && mv "$d/pid.tmp" "$d/pid"
wait $p; c=$?
kill $h 2>/dev/null
i=0; while [ $i -lt 100 ] && { kill -0 $so || kill -0 $se; } 2>/dev/null; do sleep 0.05; i=$((i+1)); done
echo $c > "$d/exit.tmp" && mv "$d/exit.tmp" "$d/exit"`

// readScript: $0 root, $1 id, $2 stdout since, $3 stderr since, $4 seconds to wait for news, $5 head bytes, $6 tail bytes (0: read a page from since, no tail). Prints
// "NOPROC", or "S <exit|-> <stdin closed 0|1> <out first> <out end> <err first> <err end>"
// then, per stream with new bytes, "H|T out|err <start> <base64>" lines.
const readScript = `d="$0/$1" so=$2 se=$3 w=$4 H=$5 T=$6
[ -d "$d" ] || { echo NOPROC; exit 0; }
seg=$(cat "$d/seg")
IFS='
'
num() { n=$1; while [ ${#n} -gt 1 ] && [ "${n#0}" != "$n" ]; do n=${n#0}; done; }
# span sets A and Z to a stream's first kept offset and its end; a segment dropped while it
# looks (the writer rotates fast) makes it look again.
span() { for t in 1 2 3 4 5 6 7 8; do f=; l=; for y in "$d/$1"/*; do [ -e "$y" ] || break; [ -n "$f" ] || f=$y; l=$y; done
  A=0 Z=0; [ -n "$f" ] || return 0
  z=$({ wc -c < "$l"; } 2>/dev/null) || continue
  num "${f##*.}"; A=$((n * seg)); num "${l##*.}"; Z=$((n * seg + z)); return 0; done; exit 6; }
end=$(( $(date +%s) + w ))
while :; do
  x=-; [ -e "$d/exit" ] && x=$(cat "$d/exit")
  span out; oa=$A oz=$Z; span err; ea=$A ez=$Z
  [ "$x" = - ] && [ $oz -le $so ] && [ $ez -le $se ] && [ $(date +%s) -lt $end ] || break
  sleep 0.25
done
c=0; [ -e "$d/stdin.closed" ] && c=1
echo "S $x $c $oa $oz $ea $ez"
# rd prints "<tag> <stream> <start> <base64>" for up to $4 bytes from offset $3. The first
# segment is opened before reading, so the writer dropping it meanwhile cannot shift the bytes
# under the offset printed; one already gone is looked for again.
rd() { for t in 1 2 3 4 5 6 7 8; do k=$(($3 / seg)); s=$3; l=; b=; f1=
  for y in "$d/$2"/*; do [ -e "$y" ] || break; num "${y##*.}"; [ $n -ge $k ] || continue
    if [ -z "$b" ]; then b=$n; f1=$y; [ $n -eq $k ] || s=$((n * seg)); else l="$l$y
"; fi; done
  [ -n "$b" ] || return 0
  [ -e "$f1" ] || continue
  exec 4<"$f1"
  printf '%s %s %s ' "$1" "$2" "$s"; set -f
  { cat <&4; cat $l 2>/dev/null; } | tail -c +$((s - b * seg + 1)) | head -c $4 | base64 -w0; set +f; echo
  exec 4<&-; return 0; done; exit 6; }
pick() { s=$2; [ $s -ge $3 ] || s=$3; n=$(($4 - s)); [ $n -gt 0 ] || return 0
  if [ $T -eq 0 ]; then rd H $1 $s $((n < H ? n : H)); return 0; fi
  if [ $n -le $((H + T)) ]; then rd H $1 $s $n; return 0; fi
  rd H $1 $s $H; rd T $1 $(($4 - T)) $T; }
pick out $so $oa $oz
pick err $se $ea $ez`

// writeScript: $0 root, $1 id, $2 base64 data (may be empty), $3 close (1 or 0). Prints OK,
// NOPROC, ENDED <exit>, CLOSED or BLOCKED (the process did not take the data within 10 s).
const writeScript = `d="$0/$1"
[ -d "$d" ] || { echo NOPROC; exit 0; }
[ -e "$d/exit" ] && { echo "ENDED $(cat "$d/exit")"; exit 0; }
[ -e "$d/stdin.closed" ] && { echo CLOSED; exit 0; }
if [ -n "$2" ]; then printf '%s' "$2" | base64 -d | timeout 10 sh -c 'exec cat > "$0"' "$d/stdin" || { echo BLOCKED; exit 0; }; fi
if [ "$3" = 1 ]; then : > "$d/stdin.closed"; kill "$(cat "$d/holder")" 2>/dev/null; fi
echo OK`

// signalScript: $0 root, $1 id, $2 signal name. Prints OK, NOPROC or ENDED <exit>. Once the
// process has ended, what it left running in its group (a background job) is still signalled;
// ENDED means nothing of the group is left alive: zombies do not count, as a container's
// first process (the runtime) may never reap the orphans it inherits.
const signalScript = `d="$0/$1"
[ -d "$d" ] || { echo NOPROC; exit 0; }
p=$(cat "$d/pid")
live() { for s in /proc/[0-9]*/stat; do l=; { read -r l < "$s"; } 2>/dev/null; r=${l##*) }; set -- $r
  [ "${3:-}" = "$p" ] && [ "$1" != Z ] && return 0; done; return 1; }
if [ -e "$d/exit" ]; then live || { echo "ENDED $(cat "$d/exit")"; exit 0; }; fi
kill -s "$2" -- "-$p" 2>/dev/null
echo OK`

// listScript: $0 root. Prints "P <id> <exit|-> <stdin closed 0|1> <meta>" per process.
const listScript = `for d in "$0"/*; do [ -f "$d/meta" ] || continue
  x=-; [ -e "$d/exit" ] && x=$(cat "$d/exit"); c=0; [ -e "$d/stdin.closed" ] && c=1
  echo "P ${d##*/} $x $c $(cat "$d/meta")"; done; exit 0`
