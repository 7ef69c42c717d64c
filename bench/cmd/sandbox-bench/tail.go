package main

import "fmt"

// tailRatio is the paced p99 of the server's handler (its own log line) over the paced p99 of
// the request it makes, sent directly: above 1, the server's own code adds to the tail.
func tailRatio(r smallRuntime) float64 { return r.pacedHandler.p99() / r.transport.subj.p99() }

// tailText reads a missed paced p99 goal against the runtime's own tail. The plain request is
// sent directly in two paced series (the baseline the ratio divides by, and the request-form
// series after it), so their p99s show how much the runtime's tail moves by itself; the
// handler's p99 against that of the server's request sent directly shows whether the server
// added to it. Empty when the paced p99 goal was met.
func tailText(r smallRuntime) string {
	if r.paced.ratio(0.99) <= smallP99Goal {
		return ""
	}
	s := fmt.Sprintf("Paced, the p99 ratio (%s) rests on the slowest calls of %d per side: the same plain request sent "+
		"directly has a p99 of %s in the series the ratio divides by and %s in the request-form series right after it",
		fmtRatio(r.paced.ratio(0.99)), len(r.paced.base), fmtNum(r.paced.base.p99(), "ms"), fmtNum(r.transport.base.p99(), "ms"))
	h, d := fmtNum(r.pacedHandler.p99(), "ms"), fmtNum(r.transport.subj.p99(), "ms")
	if tailRatio(r) <= 1 {
		return s + fmt.Sprintf(", and the server's handler p99 (%s, its own log) is no higher than that of its request sent "+
			"directly (%s): the handler does not add to the runtime's tail, and the stdio round trip around it adds %s at "+
			"the p99.", h, d, fmtNum(r.paced.subj.p99()-r.pacedHandler.p99(), "ms"))
	}
	return s + fmt.Sprintf("; the server's handler p99 (%s, its own log) is %s that of its request sent directly (%s), "+
		"so the server adds to the tail.", h, fmtRatio(tailRatio(r))+"×", d)
}
