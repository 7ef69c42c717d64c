package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// Errors of Unpack (besides conn.ErrNotDir and those of CheckArchive).
var (
	// ErrBadArchive is an upload tar cannot read.
	ErrBadArchive = errors.New("the archive cannot be read")
	// ErrDirInTheWay is an archive's file where the destination has a directory with files.
	ErrDirInTheWay = errors.New("the archive has a file where the destination has a directory that is not empty")
)

// Archives travel as files: the tools upload or download a temporary file in the working
// directory with conn.Conn's Upload and Download (capped like upload_file and download_file),
// and these scripts pack or unpack it there with tar.

// packScript: $1 directory, $2 temporary file name. Answers "OK <bytes>", NOTFOUND or NOTDIR.
// tar packs "." of the directory entered (GNU tar opens what it packs with openat and
// O_NOFOLLOW), never the directory's path.
const packScript = prelude + `tmp="$base/$2"
enter "$1" || { at "$1"; [ "$N" != . ] && [ -e "$N" ] && { echo NOTDIR; exit 0; }; echo NOTFOUND; exit 0; }
# Exit 1 is "file changed as we read it" (a log being written): the archive is still whole.
tar -czf "$tmp" --exclude="$2" .; [ $? -le 1 ] || { rm -f "$tmp"; exit 1; }
echo "OK $(wc -c < "$tmp")"`

// partialDir enters the destination $2 if it exists, else its nearest existing ancestor
// (NOTDIR if a file is in the way), and sets D ($2 relative to the working directory), P
// (the directory entered, its real path), rest (what of D is still to be made) and w (the
// partial directory's name in P), so that moving it into place is a rename on one file
// system and never leaves the working directory.
const partialDir = `rel "$2"; D=$p; q=$p; rest=
until enter "$q"; do
  { [ -e "$q" ] || [ -L "$q" ]; } && { echo NOTDIR; exit 0; }
  rest=${q##*/}${rest:+/$rest}; case "$q" in */*) q=${q%/*};; *) q=.;; esac
done
w=$1.partial
`

// unpackScript: $1 temporary file name, $2 destination directory (created). Removes the
// archive. Answers "OK <entries>", NOTDIR, EMPTY, BADARCHIVE <tar's message> when tar cannot
// list it, or DIRINWAY <name> when a file would replace a directory holding files; a failure
// while extracting (disk full, permissions, an entry tar refuses) fails with tar's own
// message. The archive unpacks into a partial directory first, which the trap removes: what
// fails leaves nothing of the archive behind, what succeeds is renamed into place.
//
// As every script, it works from directories it entered (the prelude): the partial
// directory's parent is held as descriptor 4 (the trap cleans up through it), tar extracts
// in the partial directory once the script is in it and has checked where it is,
// and the merge into an existing destination enters each target directory and reads each
// source directory through a descriptor it checked (5), renaming single names.
const unpackScript = prelude + `a="$base/$1"; trap 'rm -f "$a"' EXIT
` + partialDir + `exec 4<. || exit 1
trap 'cd -P /proc/self/fd/4 && { chmod -R u+w -- "$w" 2>/dev/null; rm -rf -- "$w"; }; rm -f -- "$a"' EXIT
msg=$(tar -tf "$a" 2>&1 >/dev/null) || { echo "BADARCHIVE $(printf '%s' "$msg" | head -c 500 | tr '\n' ' ')"; exit 0; }
n=$(tar -tf "$a" | wc -l)
[ "$n" -gt 0 ] || { echo EMPTY; exit 0; }
mkdir -- "$w" || exit 3
inw() { cd -P -- "$w" && inbase "$(pwd -P)"; }
(inw && tar -xf "$a" --no-same-owner) || exit 1
# tar gives directories their modes last: one without write permission could not be emptied
# by the merge nor renamed to another parent, so they are writable until they are in place.
ro=$(inw && find . -type d ! -perm -u+w -print) || exit 1
[ -z "$ro" ] || (inw && find . -type d ! -perm -u+w -execdir chmod u+w {} +) || exit 1
lock() { [ -z "$ro" ] || printf '%s\n' "$ro" | while IFS= read -r r; do
  (cd -P -- "$r" && inbase "$(pwd -P)" && chmod u-w .) || exit 1; done; }
if [ -n "$rest" ]; then
  case "$D" in */*) mkenter "${D%/*}";; *) mkenter .;; esac
  mv -T -- "/proc/self/fd/4/$w" "${D##*/}" && cd -P -- "${D##*/}" && here && lock || exit 1
  echo "OK $n"; exit 0
fi
# Checked before anything moves, so that the merge below cannot stop half way on it.
c=$(find "./$w" ! -type d -exec sh -c 'for e; do t="${e#./$0/}"
  [ -d "$t" ] && [ ! -L "$t" ] && [ -n "$(ls -A -- "$t")" ] && { printf "%s" "$t" | head -c 300; exit 1; }; done; exit 0' "$w" {} +) ||
  { echo "DIRINWAY $c"; exit 0; }
# merge moves each entry of the source directory (descriptor 5) into the directory it is in,
# into the directories both have, so the files there the archive does not name stay. Names
# are renamed one by one, never copied.
merge() {
  for s in /proc/self/fd/5/* /proc/self/fd/5/.[!.]* /proc/self/fd/5/..?*; do
    [ -e "$s" ] || [ -L "$s" ] || continue
    t=${s##*/}
    if [ -d "$s" ] && [ ! -L "$s" ]; then
      if [ -d "$t" ] && [ ! -L "$t" ]; then
        ( { command exec 5<"$s"; } 2>/dev/null && inbase "$(readlink /proc/self/fd/5)" &&
          cd -P -- "$t" && inbase "$(pwd -P)" && merge ) || return 1
        continue
      fi
      if [ -e "$t" ] || [ -L "$t" ]; then rm -f -- "$t" || return 1; fi
    elif [ -d "$t" ] && [ ! -L "$t" ]; then rmdir -- "$t" || return 1
    fi
    mv -f -T -- "$s" "$t" || return 1
  done
}
{ command exec 5<"./$w"; } 2>/dev/null && inbase "$(readlink /proc/self/fd/5)" || exit 1
merge && lock || exit 1
echo "OK $n"`

// TempName is a fresh name for an archive in transit.
func TempName() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return ".k8s-sandbox-mcp-archive-" + hex.EncodeToString(b[:]), nil
}

// Pack writes dir as a gzip-compressed tar to tmp (a name in the working directory) and
// returns its size.
func (f FS) Pack(ctx context.Context, t conn.Target, dir, tmp string) (int64, error) {
	out, err := f.run(ctx, t, packScript, dir, tmp)
	if err != nil {
		return 0, fmt.Errorf("packing %q: %w", dir, err)
	}
	word, detail, _ := status(out)
	if word != "OK" {
		return 0, archiveStatus(word, detail, dir)
	}
	return strconv.ParseInt(detail, 10, 64)
}

// Unpack extracts the tar (gzip-compressed or not) at tmp into dir and removes tmp. On a
// failure nothing of the archive is left in dir: an existing dir keeps what it held.
func (f FS) Unpack(ctx context.Context, t conn.Target, tmp, dir string) (int, error) {
	out, err := f.run(ctx, t, unpackScript, tmp, dir)
	if err != nil {
		// A script killed at its timeout had no time for its trap.
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = f.run(cleanup, t, prelude+partialDir+`chmod -R u+w -- "$w" 2>/dev/null; rm -rf -- "$w"`, tmp, dir)
		return 0, fmt.Errorf("unpacking into %q: %w", dir, err)
	}
	word, detail, _ := status(out)
	if word != "OK" {
		return 0, archiveStatus(word, detail, dir)
	}
	return strconv.Atoi(detail)
}

// RemoveTemp deletes an archive left in the working directory, best effort.
func (f FS) RemoveTemp(ctx context.Context, t conn.Target, tmp string) {
	_, _ = f.run(ctx, t, prelude+`rm -f -- "$base/$1"`, tmp)
}

func archiveStatus(word, detail, path string) error {
	switch word {
	case "NOTDIR":
		return fmt.Errorf("%q: %w", path, conn.ErrNotDir)
	case "BADARCHIVE":
		return fmt.Errorf("%w: %s", ErrBadArchive, detail)
	case "EMPTY":
		return fmt.Errorf("%w (an empty tar)", ErrEmptyArchive)
	case "DIRINWAY":
		return fmt.Errorf("%q in %q: %w", detail, path, ErrDirInTheWay)
	}
	return common(word, detail, path)
}

// Uploader is the upload half of conn.Conn.
type Uploader interface {
	Upload(ctx context.Context, t conn.Target, path string, r io.Reader) (int64, error)
}

// PlaceUpload streams r into a temporary file of the working directory and moves it to path
// once whole, so that an upload cut short (a dropped connection, a size cap passed, a
// timeout) leaves nothing where the caller looks, and a replaced file is never half new.
func (f FS) PlaceUpload(ctx context.Context, t conn.Target, up Uploader, path string, r io.Reader) (int64, error) {
	tmp, err := TempName()
	if err != nil {
		return 0, err
	}
	defer f.RemoveTemp(context.WithoutCancel(ctx), t, tmp) // nothing once moved
	n, err := up.Upload(ctx, t, tmp, r)
	if err != nil {
		return n, err
	}
	return n, f.Move(ctx, t, tmp, path, true)
}
