package workspace

// The scripts run with /bin/sh -c through Exec, values as arguments, never spliced into
// script text. Paths are the file tools' paths: relative to the runtime's working directory
// (a leading / too, as upload_file and download_file read them), and must stay inside it
// once symbolic links are resolved. The first line of every answer is a status word.

// prelude is the one way every script reaches a path: never through a path string checked
// first and used later (a directory on it can be swapped for a link to / in between), but
// from a directory the script is in. enter cds into a directory and then asks the kernel
// where it landed (pwd -P is getcwd): the working directory of the process is the directory
// itself, which no later rename or link swap can move, and every name used after it is a
// single name relative to it. at does the same for a path's parent and sets N to its last
// name, which the operations act on without following it (rename, unlink, O_NOFOLLOW) or
// open first and check after (open3). mkenter creates and enters a directory one name at a
// time. A script that needs two directories holds the first as a descriptor (exec 4<.) and
// names into it through /proc/self/fd/4, which the kernel resolves to that directory, not
// to a path. A path that does not exist is still refused if it would lead out (gone), so
// that a model hears DENIED, not "not found", for ../../etc.
const prelude = `unset CDPATH
base=$(pwd -P)
inbase() { [ "$base" = / ] && return 0; case "$1" in "$base"|"$base"/*) return 0;; esac; return 1; }
inside() { inbase "$1" || { echo "DENIED"; exit 0; }; }
here() { H=$(pwd -P) || exit 1; inside "$H"; }
rel() { p=$1; while :; do case "$p" in /*) p=${p#/};; */) p=${p%/};; *) break;; esac; done; [ -n "$p" ] || p=.; }
enter() { rel "$1"; cd -P -- "$base" || exit 1; cd -P -- "$p" 2>/dev/null || { gone; return 1; }; here; }
gone() { L=$(realpath -m -- "$p" 2>/dev/null) && inside "$L"; }
at() { rel "$1"; case "$p" in */*) d=${p%/*}; N=${p##*/};; *) d=.; N=$p;; esac
  case "$N" in .|..) enter "$p" || { echo NOTFOUND; exit 0; }
    [ "$H" = "$base" ] && { N=.; return 0; }
    N=${H##*/}; cd -P .. || exit 1; here; return 0;; esac
  enter "$d" || { echo NOTFOUND; exit 0; }; }
mkenter() { rel "$1"; cd -P -- "$base" || exit 1; set -f; o=$IFS; IFS=/
  for s in $p; do IFS=$o; [ -n "$s" ] || continue
    [ -d "$s" ] || mkdir -- "$s" 2>/dev/null || [ -d "$s" ] || {
      [ -L "$s" ] && { L=$(realpath -m -- "$s"); inside "$L"; }; [ -e "$s" ] || [ -L "$s" ] && { echo EXISTS; exit 0; }; exit 1; }
    cd -P -- "$s" || exit 1; here
  done; IFS=$o; set +f; }
open3() { { command exec 3<"./$1"; } 2>/dev/null || { echo NOTFOUND; exit 0; }
  F=$(readlink /proc/self/fd/3) || { echo DENIED; exit 0; }; inside "$F"; }
`

// readScript: $1 path, $2 first line (1-based), $3 line count, $4 bytes kept of a line, $5
// bytes of text in all. Answers NOTFOUND, ISDIR, BINARY, or OK then "L <n> <bytes cut>"
// followed by the line, per line, and "E <total lines> <last line shown>".
//
// The file is opened once (open3) and read through /proc/self/fd/3, which reopens that file,
// wherever its name leads by then.
const readScript = prelude + `at "$1"
[ "$N" = . ] && { echo ISDIR; exit 0; }
[ -e "$N" ] || { echo NOTFOUND; exit 0; }
open3 "$N"; f=/proc/self/fd/3
[ -d "$f" ] && { echo ISDIR; exit 0; }
[ "$(head -c 8192 -- "$f" | tr -dc '\000' | wc -c)" -eq 0 ] || { echo BINARY; exit 0; }
echo OK
exec awk -v o="$2" -v l="$3" -v m="$4" -v b="$5" '
NR >= o && NR < o + l && !stop {
  s = $0; c = 0
  if (length(s) > m) { c = length(s) - m; s = substr(s, 1, m) }
  used += length(s) + 1
  if (used > b && NR > o) { stop = 1; next }
  printf "L %d %d\n%s\n", NR, c, s; last = NR
}
END { printf "E %d %d\n", NR, last }' "$f"`

// editScript: $1 path, $2 old text, $3 new text, $4 replace all (1/0), $5 context lines.
// Python reads and rewrites the file inside the sandbox (the server never holds it): the new
// content goes to a temporary file in the same directory, is synced, and renamed over the
// old one, so a failure leaves the file as it was. Answers one JSON object.
//
// The script is in the file's directory (at); a link as the last name is resolved and its
// target's directory entered the same way, and Python opens the name with O_NOFOLLOW and
// creates and renames through the directory's descriptor. Two edits of one file must not
// both succeed with one lost: each takes an exclusive flock on the file it read, and once it
// holds it checks that the name still leads to that file (else an edit that held the lock
// first has replaced it, and it starts again on the new one). A writer that takes no lock (a
// process in the sandbox) is caught by comparing the file's identity, size and times just
// before the rename: the edit then fails with "changed", to be retried.
const editScript = prelude + `at "$1"
if [ "$N" != . ] && [ -L "$N" ]; then
  L=$(realpath -e -- "$N") || { echo NOTFOUND; exit 0; }; inside "$L"; at "${L#"$base"}"
fi
[ "$N" = . ] && { echo ISDIR; exit 0; }
command -v python3 >/dev/null 2>&1 || { echo NOPYTHON; exit 0; }
exec python3 -c '
import errno, fcntl, json, os, stat, sys
name, old, new, every, ctx = sys.argv[1], os.fsencode(sys.argv[2]), os.fsencode(sys.argv[3]), sys.argv[4] == "1", int(sys.argv[5])
def answer(**kw):
    print("JSON"); print(json.dumps(kw)); sys.exit(0)
def refused():
    # A link where the script saw a file means the path changed under us.
    try: st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError: answer(error="notfound")
    answer(error="denied" if stat.S_ISLNK(st.st_mode) else "notfound")
def ident(st): return (st.st_dev, st.st_ino)
def same(a, b): return ident(a) == ident(b) and (a.st_size, a.st_mtime_ns, a.st_ctime_ns) == (b.st_size, b.st_mtime_ns, b.st_ctime_ns)
dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
for attempt in range(100):
    try: fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOENT): refused()
        raise
    if stat.S_ISDIR(os.fstat(fd).st_mode): answer(error="isdir")
    fcntl.flock(fd, fcntl.LOCK_EX)
    try: now = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError: refused()
    st = os.fstat(fd)
    if ident(now) == ident(st): break
    os.close(fd)
else: answer(error="changed")
with os.fdopen(fd, "rb", closefd=False) as f: data = f.read()
if b"\0" in data[:8192]: answer(error="binary")
starts, i = [], data.find(old)
while i >= 0:
    starts.append(i); i = data.find(old, i + max(len(old), 1))
line = lambda off: data.count(b"\n", 0, off) + 1
if not starts:
    first = old.split(b"\n")[0].strip()
    near = [n + 1 for n, l in enumerate(data.split(b"\n")) if first and first in l][:10]
    answer(error="nomatch", near=near)
if len(starts) > 1 and not every: answer(error="many", count=len(starts), lines=[line(s) for s in starts[:20]])
out = data.replace(old, new) if every else data.replace(old, new, 1)
while True:
    tmp = ".edit-" + os.urandom(6).hex()
    try: tfd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dfd); break
    except FileExistsError: pass
try:
    with os.fdopen(tfd, "wb") as f:
        f.write(out); f.flush(); os.fchmod(f.fileno(), st.st_mode & 0o7777); os.fsync(f.fileno())
    try: now = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError: now = None
    if now is None or not same(now, st):
        os.unlink(tmp, dir_fd=dfd); answer(error="changed")
    os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
except BaseException:
    try: os.unlink(tmp, dir_fd=dfd)
    except FileNotFoundError: pass
    raise
# Snippets come from offsets into the new content: the file is never split into lines.
snippets, delta = [], 0
for s in starts[:20]:
    a = s + delta
    delta += len(new) - len(old)
    lo = out.rfind(b"\n", 0, a) + 1
    for _ in range(ctx):
        if lo == 0: break
        lo = out.rfind(b"\n", 0, lo - 1) + 1
    hi = out.find(b"\n", max(a + len(new) - 1, a))
    for _ in range(ctx):
        if hi < 0: break
        hi = out.find(b"\n", hi + 1)
    if hi < 0: hi = len(out)
    chunk = out[lo:hi]
    if chunk.endswith(b"\n"): chunk = chunk[:-1]
    snippets.append({"first": out.count(b"\n", 0, lo) + 1, "lines": [l.decode("utf-8", "replace")[:500] for l in chunk.split(b"\n")]})
total = out.count(b"\n") + (1 if out and not out.endswith(b"\n") else 0)
answer(replacements=len(starts) if every else 1, lines=[line(s) for s in starts[:20]], snippets=snippets, total_lines=total)
' "$N" "$2" "$3" "$4" "$5"`

// searchScript: $1 directory (or file), $2 extended regular expression ("" finds files by $3
// alone), $3 file name glob ("" any), $4 most results, $5 bytes kept per result, $6 ignore
// case (1/0). Answers NOTFOUND, BADREGEX <grep's message>, or OK then results (path:line:text
// or path, relative to the working directory) and "T <total>".
//
// The search runs in the directory entered, on "." (GNU grep -r and find walk it with
// openat and O_NOFOLLOW, never through a path); a file is opened and checked first (open3).
// A glob holding a / filters grep's own output (-Z ends each path with a NUL) with a case
// pattern, as find -path would match it, rather than handing find's paths back to grep.
const searchScript = prelude + `if enter "$1"; then one=; else
  at "$1"; [ "$N" != . ] && [ -e "$N" ] || { echo NOTFOUND; exit 0; }; one=$N
fi
pre=${H#"$base"}; pre=${pre#/}; pre=${pre:+$pre/}
i=; [ "$6" = 1 ] && i=-i
if [ -n "$2" ]; then
  msg=$(grep -E $i -e "$2" </dev/null 2>&1); [ $? -eq 2 ] && { echo "BADREGEX $msg"; exit 0; }
fi
echo OK
emit() { PRE=$pre awk -v n="$4" -v m="$5" '{ if (substr($0, 1, 2) == "./") $0 = ENVIRON["PRE"] substr($0, 3)
  if (NR <= n) print substr($0, 1, m) } END { print "T " NR }'; }
pathglob() { while IFS= read -r f && IFS= read -r l; do case "$f" in */$3) printf '%s:%s\n' "$f" "$l";; esac; done; }
if [ -n "$one" ]; then
  open3 "$one"
  case "$3" in */*) case "/$pre$one" in */$3) ;; *) echo "T 0"; exit 0;; esac;; ?*) case "$one" in $3) ;; *) echo "T 0"; exit 0;; esac;; esac
  if [ -n "$2" ]; then grep -nIH -E $i --label="./$one" -e "$2" - <&3 2>/dev/null | emit "$@"
  else printf './%s\n' "$one" | emit "$@"; fi
  exit 0
fi
if [ -n "$2" ]; then
  case "$3" in
  */*) grep -rnIHZ -E $i --exclude-dir=.git --include="${3##*/}" -e "$2" -- . 2>/dev/null | tr '\0' '\n' | pathglob "$@" | emit "$@";;
  ?*) grep -rnIH -E $i --exclude-dir=.git --include="$3" -e "$2" -- . 2>/dev/null | emit "$@";;
  *) grep -rnIH -E $i --exclude-dir=.git -e "$2" -- . 2>/dev/null | emit "$@";;
  esac
else
  case "$3" in */*) m=-path; g="*/$3";; *) m=-name; g=${3:-*};; esac
  find . -name .git -prune -o -type f $m "$g" -print 2>/dev/null | emit "$@"
fi`

// mkdirScript: $1 path. Answers OK or EXISTS (a file is in the way). mkdir -p would follow
// a directory swapped for a link; mkenter enters each directory it creates or finds and
// checks where it landed before creating the next.
const mkdirScript = prelude + `mkenter "$1"; echo OK`

// moveScript: $1 from, $2 to, $3 overwrite (1/0). Links are moved, not followed. Answers OK,
// NOTFOUND or EXISTS.
//
// The destination's parent is created and entered first, and held as descriptor 4; the
// script then enters the source's parent, and renames one name in it to one name in
// /proc/self/fd/4. Without overwrite the rename must fail when the destination exists, also
// when another move makes it between a check and the rename: norepl asks the kernel for
// that (renameat2 with RENAME_NOREPLACE, through ctypes: Python's os has no renameat2), or
// where it cannot, claims the name atomically first, a hard link for a file or link, an
// empty directory for a directory (rename replaces an empty directory, and a second move
// finds the name taken). Without python3 the shell does the same claim with ln and mkdir.
const moveScript = prelude + norepl + `at "$1"; [ "$N" = . ] && { echo DENIED; exit 0; }
[ -e "$N" ] || [ -L "$N" ] || { echo NOTFOUND; exit 0; }
rel "$2"; case "$p" in */*) td=${p%/*}; T=${p##*/};; *) td=.; T=$p;; esac
mkenter "$td"; case "$T" in .|..) echo EXISTS; exit 0;; esac
exec 4<. || exit 1
at "$1"; S=$N; D=/proc/self/fd/4/$T
if [ "$3" = 1 ]; then mv -f -T -- "$S" "$D" || exit 1; echo OK; exit 0; fi
command -v python3 >/dev/null 2>&1 && exec python3 -c "$norepl" "$S" "$T"
if [ -d "$S" ] && [ ! -L "$S" ]; then
  mkdir -- "$D" 2>/dev/null || { [ -e "$D" ] || [ -L "$D" ] && { echo EXISTS; exit 0; }; exit 1; }
  mv -f -T -- "$S" "$D" || { rmdir -- "$D"; exit 1; }
else
  ln -P -T -- "$S" "$D" 2>/dev/null || { [ -e "$D" ] || [ -L "$D" ] && { echo EXISTS; exit 0; }; exit 1; }
  rm -f -- "$S" || exit 1
fi
echo OK`

// norepl: $1 a name in the working directory of the process, $2 a name in the directory of
// descriptor 4; renames the first to the second unless the second exists. Prints OK or EXISTS.
const norepl = `norepl='
import ctypes, errno, os, platform, stat, sys
src, dst, dfd = sys.argv[1], sys.argv[2], 4
def done(word):
    print(word); sys.exit(0)
def claim():
    # No renameat2: claim the name first. link and mkdir fail if it exists, atomically.
    if stat.S_ISDIR(os.stat(src, follow_symlinks=False).st_mode):
        try: os.mkdir(dst, 0o700, dir_fd=dfd)
        except FileExistsError: done("EXISTS")
        try: os.rename(src, dst, dst_dir_fd=dfd)
        except BaseException:
            os.rmdir(dst, dir_fd=dfd); raise
    else:
        try: os.link(src, dst, dst_dir_fd=dfd, follow_symlinks=False)
        except FileExistsError: done("EXISTS")
        os.unlink(src)
    done("OK")
# The number is that of the process ABI: a 32-bit python on a 64-bit kernel uses the 32-bit table.
wide = ctypes.sizeof(ctypes.c_void_p) == 8
nr = {"x86_64": 316 if wide else 353, "amd64": 316 if wide else 353, "i386": 353, "i686": 353,
      "aarch64": 276 if wide else 382, "arm64": 276 if wide else 382, "armv7l": 382, "armv8l": 382,
      "riscv64": 276, "loongarch64": 276, "ppc64le": 357, "ppc64": 357, "s390x": 347}.get(platform.machine())
if nr is None: claim()
libc = ctypes.CDLL(None, use_errno=True)
RENAME_NOREPLACE, AT_FDCWD = 1, -100
r = libc.syscall(ctypes.c_long(nr), ctypes.c_long(AT_FDCWD), ctypes.c_char_p(os.fsencode(src)),
                 ctypes.c_long(dfd), ctypes.c_char_p(os.fsencode(dst)), ctypes.c_long(RENAME_NOREPLACE))
if r == 0: done("OK")
e = ctypes.get_errno()
if e == errno.EEXIST: done("EXISTS")
if e in (errno.ENOSYS, errno.EINVAL): claim()
raise OSError(e, os.strerror(e))
'
`

// removeScript: $1 path, $2 recursive (1/0). A link is removed, never its target. Answers
// OK, NOTFOUND or NOTEMPTY. rm -rf walks with openat and O_NOFOLLOW from the entered parent.
const removeScript = prelude + `at "$1"; [ "$N" = . ] && { echo DENIED; exit 0; }
[ -e "$N" ] || [ -L "$N" ] || { echo NOTFOUND; exit 0; }
if [ -d "$N" ] && [ ! -L "$N" ]; then
  if [ "$2" = 1 ]; then rm -rf -- "$N" || exit 1; else rmdir -- "$N" 2>/dev/null || { echo NOTEMPTY; exit 0; }; fi
else rm -f -- "$N" || exit 1; fi
echo OK`
