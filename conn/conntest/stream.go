package conntest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// streamSize is large enough to need many reads and writes on every path (the transports'
// buffers are 4 to 64 KiB) and small enough for every strategy's suite to stay quick.
const streamSize = 6<<20 + 12345

// stream is a reproducible stream of n pseudo-random bytes that is no in-memory reader, so
// an upload of it has no size known up front.
func stream(n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{7}), n)
}

// testStreaming: a file of a few MB that never sits whole in memory on this side goes up and
// comes back byte for byte, and a limit below its size stops it with no more than the limit
// written.
func testStreaming(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	want := sha256.New()
	if _, err := io.Copy(want, stream(streamSize)); err != nil {
		t.Fatal(err)
	}
	n, err := e.c.Upload(e.ctx(), e.tg, "stream/big.bin", stream(streamSize))
	if err != nil || n != streamSize {
		t.Fatalf("Upload: %d bytes, %v; want %d", n, err, streamSize)
	}
	got := sha256.New()
	n, err = e.c.Download(e.ctx(), e.tg, "stream/big.bin", got, streamSize)
	if err != nil || n != streamSize {
		t.Fatalf("Download: %d bytes, %v; want %d", n, err, streamSize)
	}
	if string(got.Sum(nil)) != string(want.Sum(nil)) {
		t.Fatalf("the %d bytes downloaded differ from those uploaded", n)
	}
	if out := e.mustSh("wc -c < stream/big.bin"); out != fmt.Sprintf("%d\n", streamSize) && out != fmt.Sprintf("%7d\n", streamSize) {
		t.Fatalf("wc -c: %q, want %d", out, streamSize)
	}
	var w countWriter
	n, err = e.c.Download(e.ctx(), e.tg, "stream/big.bin", &w, streamSize-1)
	if !errors.Is(err, conn.ErrTooLarge) || n != int64(w) || n > streamSize-1 {
		t.Fatalf("Download with a limit 1 byte short: %d bytes returned, %d written, %v; want ErrTooLarge and at most the limit", n, w, err)
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
