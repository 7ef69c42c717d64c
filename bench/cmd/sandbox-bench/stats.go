package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// series holds the values of one measured quantity, all in one unit.
type series []float64

func (s series) quantile(q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	v := slices.Clone(s)
	slices.Sort(v)
	// Nearest rank: with fewer than 100 values the p99 is the maximum, which is what a
	// reader of a small-sample p99 should assume anyway.
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

func (s series) median() float64 { return s.quantile(0.5) }
func (s series) p99() float64    { return s.quantile(0.99) }

func (s *series) addDuration(d time.Duration) { *s = append(*s, ms(d)) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mib(bytes float64) float64 { return bytes / (1 << 20) }

// comparison is a subject measured against a baseline in the same run.
type comparison struct {
	name       string
	unit       string
	base, subj series
}

func (c comparison) ratio(q float64) float64 { return c.subj.quantile(q) / c.base.quantile(q) }

// row renders the comparison as a table row: baseline and subject median and p99, and the
// subject/baseline ratio at both.
func (c comparison) row() []string {
	return []string{c.name, fmtNum(c.base.median(), c.unit), fmtNum(c.base.p99(), c.unit),
		fmtNum(c.subj.median(), c.unit), fmtNum(c.subj.p99(), c.unit),
		fmtRatio(c.ratio(0.5)), fmtRatio(c.ratio(0.99)), fmt.Sprint(len(c.subj))}
}

var comparisonHeader = []string{"measurement", "baseline median", "baseline p99", "server median", "server p99",
	"ratio median", "ratio p99", "n"}

func fmtNum(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}

func fmtRatio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}
