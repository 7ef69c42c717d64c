package workspace

// The scripts run with /bin/sh -c through Exec, values as arguments, never spliced into
// script text. Paths are the file tools' paths: relative to the runtime's working directory
// (a leading / too, as upload_file and download_file read them), and must stay inside it
// once symbolic links are resolved. The first line of every answer is a status word.

// prelude defines res (resolve $1, following every link) and resp (resolve all but the last
// component, for operations on a link itself); both set R or answer DENIED and exit.
const prelude = `base=$(pwd -P)
inside() { [ "$base" = / ] && return 0; case "$1" in "$base"|"$base"/*) return 0;; esac; echo "DENIED"; exit 0; }
res() { p=${1#/}; [ -n "$p" ] || p=.; R=$(realpath -m -- "$base/$p") || { echo DENIED; exit 0; }; inside "$R"; }
resp() { p=${1#/}; p=${p%/}; [ -n "$p" ] || p=.; case "$p" in */*) d=${p%/*};; *) d=.;; esac; n=${p##*/}
  case "$n" in .|..) res "$1"; return;; esac
  D=$(realpath -m -- "$base/$d") || { echo DENIED; exit 0; }; inside "$D"; R="$D/$n"; }
`

// readScript: $1 path, $2 first line (1-based), $3 line count, $4 bytes kept of a line, $5
// bytes of text in all. Answers NOTFOUND, ISDIR, BINARY, or OK then "L <n> <bytes cut>"
// followed by the line, per line, and "E <total lines> <last line shown>".
const readScript = prelude + `res "$1"; f=$R
[ -e "$f" ] || { echo NOTFOUND; exit 0; }
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
// res checks the path once, but a directory on it can be swapped for a link to anywhere
// before Python writes. So Python walks the resolved path again from the working directory
// one component at a time, following no link (O_NOFOLLOW), and reads, creates and renames
// through the descriptor of the last directory: what it writes stays in the directory the
// walk found inside the working directory, whatever the path names by then.
const editScript = prelude + `res "$1"
command -v python3 >/dev/null 2>&1 || { echo NOPYTHON; exit 0; }
exec python3 -c '
import errno, json, os, stat, sys
base, path, old, new, every, ctx = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode(), sys.argv[5] == "1", int(sys.argv[6])
def answer(**kw):
    print("JSON"); print(json.dumps(kw)); sys.exit(0)
rel = path.lstrip("/") if base == "/" else path[len(base) + 1:]
parts = rel.split("/") if rel else []
if not parts: answer(error="isdir")
def refused(dfd, name):
    # A link where the check saw a directory means the path changed under us.
    try: st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError: answer(error="notfound")
    answer(error="denied" if stat.S_ISLNK(st.st_mode) else "notfound")
dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
for name in parts[:-1]:
    try: nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
    except OSError as e:
        if e.errno in (errno.ENOTDIR, errno.ELOOP, errno.ENOENT): refused(dfd, name)
        raise
    os.close(dfd); dfd = nfd
name = parts[-1]
try: fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
except OSError as e:
    if e.errno in (errno.ELOOP, errno.ENOENT): refused(dfd, name)
    raise
st = os.fstat(fd)
if stat.S_ISDIR(st.st_mode): answer(error="isdir")
with os.fdopen(fd, "rb") as f: data = f.read()
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
    os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
except BaseException:
    os.unlink(tmp, dir_fd=dfd); raise
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
' "$base" "$R" "$2" "$3" "$4" "$5"`

// searchScript: $1 directory, $2 extended regular expression ("" finds files by $3 alone),
// $3 file name glob ("" any), $4 most results, $5 bytes kept per result, $6 ignore case
// (1/0). Answers NOTFOUND, BADREGEX <grep's message>, or OK then results (path:line:text or
// path, relative to the working directory) and "T <total>".
const searchScript = prelude + `res "$1"; d=$R
[ -e "$d" ] || { echo NOTFOUND; exit 0; }
i=; [ "$6" = 1 ] && i=-i
if [ -n "$2" ]; then
  msg=$(grep -E $i -e "$2" </dev/null 2>&1); [ $? -eq 2 ] && { echo "BADREGEX $msg"; exit 0; }
fi
echo OK
emit() { awk -v n="$4" -v m="$5" -v b="$base/" '{ if (index($0, b) == 1) $0 = substr($0, length(b) + 1)
  if (NR <= n) print substr($0, 1, m) } END { print "T " NR }'; }
if [ -n "$2" ]; then
  case "$3" in
  */*) find "$d" -name .git -prune -o -type f -path "*/$3" -exec grep -nIH -E $i -e "$2" -- {} + 2>/dev/null | emit "$@";;
  ?*) grep -rnIH -E $i --exclude-dir=.git --include="$3" -e "$2" -- "$d" 2>/dev/null | emit "$@";;
  *) grep -rnIH -E $i --exclude-dir=.git -e "$2" -- "$d" 2>/dev/null | emit "$@";;
  esac
else
  case "$3" in */*) m=-path; g="*/$3";; *) m=-name; g=${3:-*};; esac
  find "$d" -name .git -prune -o -type f $m "$g" -print 2>/dev/null | emit "$@"
fi`

// mkdirScript: $1 path. Answers OK or EXISTS (a file is in the way).
//
// mkdir -p would follow a directory swapped for a link after res's check, so the script
// creates the resolved path one directory at a time, entering each and checking where it
// physically is before creating the next: a link found on the way is refused, and every
// mkdir runs relative to a directory known to be inside.
const mkdirScript = prelude + `res "$1"
[ -e "$R" ] && [ ! -d "$R" ] && { echo EXISTS; exit 0; }
cd -P -- "$base" || exit 1
set -f; IFS=/
for seg in ${R#"$base"}; do
  [ -n "$seg" ] || continue
  [ -L "$seg" ] && { echo DENIED; exit 0; }
  [ -d "$seg" ] || mkdir -- "$seg" || [ -d "$seg" ] || { [ -e "$seg" ] && echo EXISTS && exit 0; exit 1; }
  cd -P -- "$seg" || exit 1
  inside "$(pwd -P)"
done
echo OK`

// moveScript: $1 from, $2 to, $3 overwrite (1/0). Links are moved, not followed. Answers OK,
// NOTFOUND or EXISTS.
const moveScript = prelude + `resp "$1"; s=$R; resp "$2"; t=$R
[ "$s" = "$base" ] && { echo DENIED; exit 0; }
[ -e "$s" ] || [ -L "$s" ] || { echo NOTFOUND; exit 0; }
if [ -e "$t" ] || [ -L "$t" ]; then [ "$3" = 1 ] || { echo EXISTS; exit 0; }; fi
mkdir -p -- "$(dirname -- "$t")" && mv -f -T -- "$s" "$t" && echo OK`

// removeScript: $1 path, $2 recursive (1/0). A link is removed, never its target. Answers
// OK, NOTFOUND or NOTEMPTY.
const removeScript = prelude + `resp "$1"
[ "$R" = "$base" ] && { echo DENIED; exit 0; }
[ -e "$R" ] || [ -L "$R" ] || { echo NOTFOUND; exit 0; }
if [ -d "$R" ] && [ ! -L "$R" ]; then
  if [ "$2" = 1 ]; then rm -rf -- "$R" || exit 1; else rmdir -- "$R" 2>/dev/null || { echo NOTEMPTY; exit 0; }; fi
else rm -f -- "$R" || exit 1; fi
echo OK`
