package conn

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// collector keeps at most max entries while counting all of them, so a directory with a
// hundred thousand entries costs the memory of max entries, not of the whole listing.
type collector struct {
	max     int
	links   bool // keep "symlink" entries (a link the listing could not follow)
	listing Listing
}

func newCollector(max int) *collector {
	if max < 0 {
		max = 0
	}
	return &collector{max: max, listing: Listing{Entries: make([]Entry, 0, min(max, 256))}}
}

func (c *collector) add(e Entry) {
	if e.Type != "file" && e.Type != "directory" && (!c.links || e.Type != "symlink") {
		return // sockets and other types are not part of the contract
	}
	c.listing.Total++
	if len(c.listing.Entries) < c.max {
		c.listing.Entries = append(c.listing.Entries, e)
	}
}

// decodeArray streams a JSON array, calling each for every element. JSON null counts as
// an empty array (the upstream SDK treats a falsy body that way).
func decodeArray[T any](dec *json.Decoder, each func(T)) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("expected a JSON array, got %v", tok)
	}
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return err
		}
		each(v)
	}
	_, err = dec.Token()
	return err
}

// decodeRuntimeListing reads a python-runtime /list body: [{name,size,type,mod_time}], or
// listScript's, which also has "symlink" for a link that leads nowhere.
func decodeRuntimeListing(op string, r io.Reader, maxEntries int) (Listing, error) {
	c := newCollector(maxEntries)
	c.links = true
	dec := json.NewDecoder(&capReader{r: r, n: maxListingBody})
	if err := decodeArray(dec, c.add); err != nil {
		return Listing{}, listingError(op, err)
	}
	return c.listing, nil
}

// sandboxdEntry is one entry of a sandboxd directory listing.
type sandboxdEntry struct {
	Name       string `json:"name"`
	Size       int64  `json:"size"`
	Type       string `json:"type"`
	ModifiedAt string `json:"modified_at"`
}

// decodeSandboxdListing reads {"path":..., "entries":[{name,size,type,modified_at,mode}]}.
func decodeSandboxdListing(op string, r io.Reader, maxEntries int) (Listing, error) {
	c := newCollector(maxEntries)
	dec := json.NewDecoder(&capReader{r: r, n: maxListingBody})
	err := func() error {
		if err := expectDelim(dec, '{'); err != nil {
			return err
		}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			if key != "entries" {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return err
				}
				continue
			}
			err = decodeArray(dec, func(e sandboxdEntry) {
				c.add(Entry{Name: e.Name, Size: e.Size, Type: e.Type, ModTime: rfc3339ToPOSIX(e.ModifiedAt)})
			})
			if err != nil {
				return err
			}
		}
		return expectDelim(dec, '}')
	}()
	if err != nil {
		return Listing{}, listingError(op, err)
	}
	return c.listing, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q in JSON listing, got %v", want, tok)
	}
	return nil
}

// rfc3339ToPOSIX converts sandboxd's modified_at to POSIX seconds; an unparsable time
// becomes 0 rather than hiding the entry.
func rfc3339ToPOSIX(s string) float64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func listingError(op string, err error) error {
	if errors.Is(err, errBodyTooLarge) {
		return fmt.Errorf("%s: %w: listing larger than %d bytes", op, ErrTooLarge, maxListingBody)
	}
	return fmt.Errorf("%s: decoding listing: %w", op, err)
}
