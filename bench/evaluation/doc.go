// Package evaluation is `gochare bench`: it measures the three mini-apps
// under the three fault-tolerance protocols (none = checkpoint/restart,
// fulldet, partialdet) by running real jobs with the gochare binary itself
// (`gochare run APP ...`) and parsing what they print: forward-path time
// per step and its overhead against none, determinants, piggybacked and
// logged bytes, checkpoint time and size, recovery after one PE killed in
// the middle of a checkpoint period (with the restored tasks spread over
// 1, 2 or all survivors), and Daly's optimal checkpoint period. Results are
// written as JSON, CSV, a Markdown table and PNG plots. QuotaMain
// (`gochare bench quota`) compares the log quota with the unbounded log,
// EventLoggerMain (`gochare bench eventlog`) the protocols with and
// without the event logger, the same way.
//
// Main is the command (Preset, Config and Cases describe the jobs; Results
// holds what they measured and Check verifies it). cmd/gochare reaches it
// through the bench package; no program built on the launcher alone links
// it or its plotting library.
//
// # Imports
//
// The standard library and gonum.org/v1/plot. It imports nothing of
// gochare: it runs the gochare executable it is given and reads its
// output.
package evaluation
