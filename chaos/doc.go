// Package chaos is `gochare chaos`: a seeded reliability campaign that runs
// real jobs (the gochare executable itself, `gochare run APP ...`, one job
// at a time) and kills, stops or pauses their PEs at chosen moments, then
// checks that every job still ends with the digest of its failure-free run.
//
// A campaign is a list of runs drawn from a seed (Config.Plan): an
// application (stencil3d, leanmd, lulesh) × a protocol (--ft none, fulldet,
// partialdet) × a PE count × a checkpoint period (the default, none, or one
// of the application's periods) × a failure kind (Kind): one PE killed at a
// sync-point step, two PEs killed, a second PE killed while the first
// failure is being recovered, a PE killed at a checkpoint step, a PE killed
// from outside at a random moment (as `kill -9` would), a PE stopped for
// good (SIGSTOP, a hung PE) or paused for a while. Run i depends only on the
// seed, i and the configuration's filters, so a run is replayed alone with
// `--only i`.
//
// Each run is classified (Classify) against the digest of the same
// configuration without a failure, which the campaign computes once and
// caches: right digest, wrong digest, error (non-zero exit or no digest)
// or hang (no end before a deadline derived from the failure-free time;
// the job's processes are then asked for goroutine dumps and killed).
// Failures the launcher can trigger itself are passed to it as --kill
// flags (LauncherKills says which); the others are injected by the
// campaign, which watches the launcher's log lines for the PEs' process
// ids and for the start of a recovery.
//
// Pure parts, tested without processes: the plan (plan.go), the parsing
// and classification of a job's output (classify.go), the tables and
// records (report.go). The processes are run by job.go; campaign.go ties
// them together; main.go is the command line.
//
// Imports: the standard library only. Only cmd/gochare imports this
// package (Command and Summary, registered as a launcher.Command for
// `gochare chaos`); no program built on the launcher alone links it.
package chaos
