package conn

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// execResponse is the /execute answer as encoding/json reads it, the reference for the decoder.
type execResponse struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode *int   `json:"exit_code"`
}

// decodeBoth feeds one byte at a time, to cross every chunk boundary.
func decodeBoth(t *testing.T, body string) (string, string, *int, error) {
	t.Helper()
	var out, errb bytes.Buffer
	code, err := decodeExecStream(iotest.OneByteReader(strings.NewReader(body)), &out, &errb)
	return out.String(), errb.String(), code, err
}

func TestDecodeExecStreamMatchesEncodingJSON(t *testing.T) {
	bodies := []string{
		`{"stdout":"hi\n","stderr":"","exit_code":0}`,
		`{ "exit_code" : -1 , "stderr" : "e\u00e9\ud83d\ude00 \"q\" \\ \/ \b\f\r\t", "stdout" : null }`,
		`{"stdout":"ünïcode ✓ raw","stderr":"x","exit_code":127,"extra":"ignored"}`,
		`{"stdout":"lone \ud800 high","stderr":"lone \udc00 low \ud800\u0041","exit_code":null}`,
		`{}`,
	}
	for _, body := range bodies {
		var want execResponse
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		out, errs, code, err := decodeBoth(t, body)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if out != want.Stdout || errs != want.Stderr || (code == nil) != (want.ExitCode == nil) || (code != nil && *code != *want.ExitCode) {
			t.Errorf("%s:\n got %q %q %v\nwant %q %q %v", body, out, errs, code, want.Stdout, want.Stderr, want.ExitCode)
		}
	}
}

func TestDecodeExecStreamRejectsMalformed(t *testing.T) {
	for _, body := range []string{``, `[]`, `{"stdout":"unterminated`, `{"stdout":1}`, `{"stdout":"\x"}`, `{"exit_code":"1"}`, `{"stdout":"a" "stderr":""}`, "{\"stdout\":\"\x01\"}"} {
		if _, _, _, err := decodeBoth(t, body); !errors.Is(err, errExecJSON) {
			t.Errorf("%q: err %v", body, err)
		}
	}
}

func FuzzDecodeExecStream(f *testing.F) {
	f.Add("hi\n", "err", 3)
	f.Add("\u00e9\U0001F600\x00\"\\", "\xed\xa0\x80", -1)
	f.Fuzz(func(t *testing.T, stdout, stderr string, code int) {
		body, err := json.Marshal(map[string]any{"stdout": stdout, "stderr": stderr, "exit_code": code})
		if err != nil {
			t.Skip()
		}
		var want execResponse
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		got, err := decodeExecStream(bytes.NewReader(body), &out, &errb)
		if err != nil || out.String() != want.Stdout || errb.String() != want.Stderr || got == nil || *got != code {
			t.Fatalf("%s: got %q %q %v %v", body, out.String(), errb.String(), got, err)
		}
	})
}

// TestDecodeExecStreamBoundedMemory: 64 MB of output pass through a counting writer while the
// decoder holds only its buffers.
func TestDecodeExecStreamBoundedMemory(t *testing.T) {
	const n = 64 << 20
	body := io.MultiReader(strings.NewReader(`{"stdout":"`), io.LimitReader(repeatReader('a'), n), strings.NewReader(`","stderr":"","exit_code":0}`))
	var count countWriter
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := decodeExecStream(body, &count, io.Discard); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if count != n {
		t.Errorf("decoded %d bytes, want %d", count, n)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("decoding %d MiB allocated %d MiB: the output is being held", n>>20, alloc>>20)
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
