package kube

import (
	"testing"
	"time"
)

func TestDeadlineAfterUse(t *testing.T) {
	created := testNow.Add(-time.Hour).Truncate(time.Second)
	for _, tc := range []struct {
		name     string
		lifetime Lifetime
		claim    Claim
		want     Deadline
	}{
		{name: "no shutdown time", lifetime: DefaultLifetime(), claim: Claim{Created: created}, want: Deadline{Cap: created.Add(DefaultMaxLifetime)}},
		{name: "more than half the window left: unchanged", lifetime: DefaultLifetime(),
			claim: Claim{Created: created, ShutdownAt: testNow.Add(4 * time.Minute), ShutdownAfter: 5 * time.Minute},
			want:  Deadline{At: testNow.Add(4 * time.Minute), Cap: created.Add(DefaultMaxLifetime)}},
		{name: "less than half left: renewed by this use", lifetime: DefaultLifetime(),
			claim: Claim{Created: created, ShutdownAt: testNow.Add(time.Minute), ShutdownAfter: 5 * time.Minute},
			want:  Deadline{At: testNow.Add(5 * time.Minute).UTC().Truncate(time.Second), Cap: created.Add(DefaultMaxLifetime)}},
		{name: "renewal stops at the cap", lifetime: Lifetime{RenewOnUse: true, MaxLifetime: time.Hour + 3*time.Minute},
			claim: Claim{Created: created, ShutdownAt: testNow.Add(time.Minute), ShutdownAfter: 5 * time.Minute},
			want:  Deadline{At: created.Add(time.Hour + 3*time.Minute), Cap: created.Add(time.Hour + 3*time.Minute)}},
		{name: "fixed lifetime: never renewed", lifetime: Lifetime{MaxLifetime: DefaultMaxLifetime},
			claim: Claim{Created: created, ShutdownAt: testNow.Add(time.Minute), ShutdownAfter: 5 * time.Minute},
			want:  Deadline{At: testNow.Add(time.Minute), Cap: created.Add(DefaultMaxLifetime)}},
		{name: "no cap", lifetime: Lifetime{RenewOnUse: true},
			claim: Claim{Created: created, ShutdownAt: testNow.Add(time.Minute), ShutdownAfter: 5 * time.Minute},
			want:  Deadline{At: testNow.Add(5 * time.Minute).UTC().Truncate(time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakes(t)
			f.c.lifetime = tc.lifetime
			if got := f.c.deadlineAfterUse(tc.claim); !got.At.Equal(tc.want.At) || !got.Cap.Equal(tc.want.Cap) {
				t.Errorf("deadlineAfterUse = %+v, want %+v", got, tc.want)
			}
		})
	}
}
