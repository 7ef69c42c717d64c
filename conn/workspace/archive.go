package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// ErrBadArchive is an upload tar cannot read.
var ErrBadArchive = errors.New("the archive cannot be read")

// Archives travel as files: the tools upload or download a temporary file in the working
// directory with conn.Conn's Upload and Download (capped like upload_file and download_file),
// and these scripts pack or unpack it there with tar.

// packScript: $1 directory, $2 temporary file name. Answers "OK <bytes>", NOTFOUND or NOTDIR.
const packScript = prelude + `res "$1"; d=$R; tmp="$base/$2"
[ -e "$d" ] || { echo NOTFOUND; exit 0; }
[ -d "$d" ] || { echo NOTDIR; exit 0; }
# Exit 1 is "file changed as we read it" (a log being written): the archive is still whole.
tar -czf "$tmp" --exclude="$2" -C "$d" .; [ $? -le 1 ] || { rm -f "$tmp"; exit 1; }
echo "OK $(wc -c < "$tmp")"`

// unpackScript: $1 temporary file name, $2 destination directory (created). Removes the
// archive. Answers "OK <entries>", NOTDIR or BADARCHIVE <tar's message> when tar cannot list
// it; a failure while extracting (disk full, permissions) fails with tar's own message.
const unpackScript = prelude + `a="$base/$1"; trap 'rm -f "$a"' EXIT
res "$2"; d=$R
[ -e "$d" ] && [ ! -d "$d" ] && { echo NOTDIR; exit 0; }
msg=$(tar -tf "$a" 2>&1 >/dev/null) || { echo "BADARCHIVE $(printf '%s' "$msg" | head -c 500 | tr '\n' ' ')"; exit 0; }
n=$(tar -tf "$a" | wc -l)
mkdir -p -- "$d" || exit 3
tar -xf "$a" -C "$d" --no-same-owner || exit 1
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

// Unpack extracts the tar (gzip-compressed or not) at tmp into dir and removes tmp.
func (f FS) Unpack(ctx context.Context, t conn.Target, tmp, dir string) (int, error) {
	out, err := f.run(ctx, t, unpackScript, tmp, dir)
	if err != nil {
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
	}
	return common(word, detail, path)
}
