// Package chaos is `gochare chaos`: a seeded reliability campaign that runs
// real jobs (the gochare executable itself, `gochare run APP ...`, one job
// at a time) and kills, stops or pauses their PEs (and loggers) at chosen
// moments, then checks that every job still ends with the digest of its
// failure-free run, or with an error the runtime documents.
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
// Loggers are a dimension of their own (Config.Loggers, LoggerSetup): no
// logger, plain loggers (--loggers K, K 1 or 2), the event logger
// (--event-logger), a log quota (--log-quota Q) or both, the event logger
// and the quota only under fulldet and partialdet. Q is a fraction (10 to
// 100 %) of the largest sender log's high-water mark of the same
// configuration without the quota (Run.Unbounded): the campaign runs that
// failure-free job first and reads largest_log_peak_bytes from its job
// stats line (so a replay measures it again; the record's command has the
// bytes). Kinds for loggers: a logger SIGKILLed at a random moment, alone
// or followed by a PE (at once or up to a second after the launcher
// announced the logger's failure), a logger SIGSTOPped for good (half of
// these runs with --heartbeat-timeout 1s, a tuned flag, so that the stop
// is caught while the job runs: Run.HeartbeatTimeout), and two
// or three PEs killed at once (with the event logger where the protocol
// has one; no two of them buddies unless the run writes its checkpoints
// to disk). The loggers' pids come from the launcher's "started loggers"
// line. The logger setup and the loggers' failures are drawn from a
// stream of their own, so the dimension leaves every other choice of a
// run as it was; the full preset has no logger, the ci preset loggers in
// some runs and one logger killed, the loggers preset (full's jobs made
// longer) loggers in every run.
//
// Each run is classified (Classify) against the digest of the same
// configuration without a failure, which the campaign computes once and
// caches: right digest, wrong digest, error (non-zero exit or no digest)
// or hang (no end before a deadline derived from the failure-free time;
// the job's processes are then asked for goroutine dumps and killed). An
// error is a designed one (DesignedError, Record.Designed) when it is a
// case README documents the runtime cannot handle and the run's failures
// (planned, or announced by the launcher) can lead to it: both copies of
// a checkpoint lost without a disk checkpoint, a full log with no logger
// left, log entries or event log records lost with a logger before a PE
// failure, a message larger than the quota. The tables count the errors
// that are not.
//
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
