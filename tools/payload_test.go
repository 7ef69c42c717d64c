package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/budget"
)

// fakeBudget records what is reserved and refuses past its room.
type fakeBudget struct {
	room  int64
	taken []int64
}

func (b *fakeBudget) Reserve(_ context.Context, n int64) error {
	var sum int64
	for _, t := range b.taken {
		sum += t
	}
	if sum+n > b.room {
		return errors.New("no room (TEST_BOUND)")
	}
	b.taken = append(b.taken, n)
	return nil
}

// TestPayloadTakesRoomBeforeTheBytes: a told size takes the whole result's room at once
// (base64 for binary); an untold one takes it in steps ahead of the bytes; no room is the
// model's advice, and the bytes are never held twice.
func TestPayloadTakesRoomBeforeTheBytes(t *testing.T) {
	data := []byte(strings.Repeat("ab<\n", 50_000)) // 200000 bytes, with JSON escapes
	tests := []struct {
		name      string
		binary    bool
		expect    bool
		room      int64
		wantTaken []int64
		wantErr   string
	}{
		{name: "binary, size told", binary: true, expect: true, room: 1 << 20, wantTaken: []int64{266_668}},
		{name: "text, size told", expect: true, room: 1 << 20, wantTaken: []int64{200_000, 50_000*5 + 50_000}},
		{name: "binary, size untold", binary: true, room: 1 << 20, wantTaken: []int64{65536, 65536, 131072, 262144}},
		{name: "no room for the told size", binary: true, expect: true, room: 100_000, wantErr: "no room (TEST_BOUND). Retry in a moment"},
		{name: "no room on the way", room: 100_000, wantErr: "no room (TEST_BOUND). Retry in a moment"},
		{name: "no room for the escapes", expect: true, room: 300_000, wantErr: "no room (TEST_BOUND). Retry in a moment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBudget{room: tc.room}
			p := newPayload(budget.With(context.Background(), b), Deps{Transfers: noTransfers{}}, tc.binary, 1<<20)
			err := func() error {
				if tc.expect {
					if err := p.Expect(int64(len(data))); err != nil {
						return err
					}
				}
				for rest := data; len(rest) > 0; rest = rest[min(len(rest), 32<<10):] {
					if _, err := p.Write(rest[:min(len(rest), 32<<10)]); err != nil {
						return err
					}
				}
				_, err := p.text()
				return err
			}()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "create_transfer_url") {
					t.Fatalf("error %v, want %q and the advice to use create_transfer_url", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(b.taken, tc.wantTaken) {
				t.Errorf("reserved %v, want %v", b.taken, tc.wantTaken)
			}
			got, _ := p.text()
			want := string(data)
			if tc.binary {
				want = base64.StdEncoding.EncodeToString(data)
			}
			if got != want {
				t.Errorf("payload differs from the file's bytes")
			}
			if tc.expect && (p.b.Cap() < len(want) || p.b.Cap()-len(want) >= 8<<10) {
				t.Errorf("the result's buffer has room for %d bytes, want the %d it holds (up to a page more)", p.b.Cap(), len(want))
			}
		})
	}
}

func TestJSONEscapes(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\`, "a<b>&c", "\x00\x1f\n\t\r", "line\u2028para\u2029", "héllo ✓"} {
		b, _ := json.Marshal(s)
		if got, want := jsonEscapes(s), int64(len(b)-2-len(s)); got != want {
			t.Errorf("jsonEscapes(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestPayloadResultRepeatsSmallOnly: the text content repeats the JSON (the spec's SHOULD)
// up to textFallbackMax, beyond which it is a summary and the payload is sent once.
func TestPayloadResultRepeatsSmallOnly(t *testing.T) {
	for _, n := range []int{10, textFallbackMax, textFallbackMax + 1} {
		v := DownloadResult{Content: strings.Repeat("x", n), BytesRead: n}
		res := payloadResult(v, n, "Read it.")
		text := res.Content[0].(mcp.TextContent).Text
		js, _ := json.Marshal(v)
		if repeats := text == string(js); repeats != (n <= textFallbackMax) {
			t.Errorf("%d bytes: text repeats the JSON %v", n, repeats)
		}
		if n > textFallbackMax && (!strings.HasPrefix(text, "Read it.") || len(text) > 300) {
			t.Errorf("%d bytes: summary %q", n, text)
		}
		if res.StructuredContent.(DownloadResult).Content != v.Content {
			t.Errorf("%d bytes: structuredContent lost the content", n)
		}
	}
}
