// Package output applies the spec's output budget to command output: head and tail excerpts
// around an omission marker, counted in Unicode code points, with totals and truncation flags.
// Capture does the same while output streams in, holding only what the budget can show.
package output
