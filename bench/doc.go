// Package bench is `gochare bench`: it dispatches to the benchmark drivers
// in its subdirectories, which live apart from the runtime so that no
// program built on the launcher links them.
//
//   - bench/evaluation: the evaluation of the three fault-tolerance
//     protocols on the three mini-apps (`gochare bench`, `gochare bench
//     evaluation`), the log quota's comparison (`gochare bench quota`)
//     and the event logger's (`gochare bench eventlog`); it runs jobs
//     with the gochare executable itself.
//   - bench/transportbench: latency and throughput of the PE-to-PE
//     transport against bare protoactor and bare TCP (`gochare bench
//     transport`); its echo side runs in a child process, the gochare
//     executable again (`gochare bench transport-peer`).
//
// Command and Usage are what cmd/gochare registers as a launcher.Command.
//
// # Imports
//
// The standard library, bench/evaluation and bench/transportbench. Only
// cmd/gochare imports it.
package bench
