package main

import (
	"strings"
	"testing"
)

func TestReportRunToRun(t *testing.T) {
	run := func(ratio, rss float64) []*section {
		return []*section{
			{title: "1. Small", targets: []target{{goal: "ratio ≤ 1.2", measured: fmtRatio(ratio), met: ratio <= 1.2,
				figures: []figure{{name: "ratio median", value: ratio}}}}},
			{title: "2. Large", targets: []target{{goal: "RSS < 64 MB", measured: fmtNum(rss, "MiB"), met: rss < 61,
				figures: []figure{{name: "peak RSS max", value: rss, unit: "MiB"}}}}},
		}
	}
	last := append(run(1.15, 44), &section{title: "8. Load", targets: []target{{goal: "no errors", measured: "0", met: true,
		figures: []figure{{name: "errors", value: 0, unit: "calls"}}}}})
	r := &report{runs: [][]*section{run(1.1, 45), run(1.3, 47.5), last}, binary: "`x`, static", lastRunOnly: "item 8"}
	r.sections = r.runs[2]
	var b strings.Builder
	if err := r.write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"The items ran 3 times in a row (item 8 in the last only)",
		"| 8 | no errors | 0 | met in 1 of 1 runs |",
		"| 8 | no errors: errors | - | - | 0.00 calls | 0.00 calls / 0.00 calls / 0.00 calls |",
		"| 1 | ratio ≤ 1.2 | 1.15 | **missed** (met in 2 of 3 runs) |",
		"| 2 | RSS < 64 MB | 44.0 MiB | met in 3 of 3 runs |",
		"| # | figure | run 1 | run 2 | run 3 | min / median / max |\n|---|---|---|---|---|---|",
		"| 1 | ratio ≤ 1.2: ratio median | 1.10 | 1.30 | 1.15 | 1.10 / 1.15 / 1.30 |",
		"| 2 | RSS < 64 MB: peak RSS max | 45.0 MiB | 47.5 MiB | 44.0 MiB | 44.0 MiB / 45.0 MiB / 47.5 MiB |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q\n%s", want, out)
		}
	}

	// One run: the plain targets table, no run-to-run section.
	one := &report{runs: [][]*section{run(1.1, 45)}}
	one.sections = one.runs[0]
	b.Reset()
	if err := one.write(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "| 1 | ratio ≤ 1.2 | 1.10 | met |") || strings.Contains(out, "Run to run") {
		t.Errorf("single-run report:\n%s", out)
	}
}
