package budget

import (
	"context"
	"errors"
	"testing"
)

type recorder struct{ got []int64 }

func (r *recorder) Reserve(_ context.Context, n int64) error {
	r.got = append(r.got, n)
	if n > 10 {
		return errors.New("no room")
	}
	return nil
}

// TestReserve: without a budget (stdio) nothing is taken; with one, what is asked for.
func TestReserve(t *testing.T) {
	if err := Reserve(context.Background(), 1<<30); err != nil {
		t.Errorf("no budget: %v", err)
	}
	r := &recorder{}
	ctx := With(context.Background(), r)
	if err := Reserve(ctx, 5); err != nil {
		t.Errorf("room: %v", err)
	}
	if err := Reserve(ctx, 0); err != nil {
		t.Errorf("nothing: %v", err)
	}
	if err := Reserve(ctx, 11); err == nil {
		t.Error("over the room: no error")
	}
	if len(r.got) != 2 || r.got[0] != 5 || r.got[1] != 11 {
		t.Errorf("reserved %v, want [5 11]", r.got)
	}
}
