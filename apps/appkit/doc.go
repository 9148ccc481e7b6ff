// Package appkit is the scaffolding the gochare applications share, so that
// an app's own files hold what is particular to it: its configuration, its
// tasks and handlers, its kernel and its report.
//
//   - Spec turns a configuration parser and a declaration function into an
//     actor.App: Define parses the arguments and declares the job, LastStep
//     parses them and tells the last sync-point step.
//   - Main declares the job's main element: it receives actor.Start, calls
//     Begin to send the first messages, waits for the job's reduction
//     results, and calls Finish with them, the PE count and the elapsed
//     time, then prints the report Finish returns and ends the job with its
//     status. It packs its own state (start time, results so far) for
//     checkpoints and restarts.
//   - Flags is a flag.FlagSet that returns errors instead of printing or
//     exiting, refuses positional arguments and answers -h with a usage
//     text; Triple and TripleOrOne are X,Y,Z flag values.
//   - ConcatBytes is the combining function of reducers that gather
//     per-task records, and FormatExact writes a float64 so that it reads
//     back bit for bit.
//
// Package appkit/apptest has the matching test helpers: a one-goroutine
// double of the runtime (Double), in-process runs (Run) and the totals that
// recovery tests check.
//
// Like an app, appkit imports only actor of gochare (and the standard
// library and protobuf); apptest imports the scheduler, for tests only.
package appkit
