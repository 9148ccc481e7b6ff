// Package scale models the fault-tolerance protocols at job sizes the
// machine cannot run (docs/scaling.md, "Simulated"): the mini-apps'
// communication patterns (Pattern: stencil3d, leanmd, lulesh, weak
// scaling, a fixed block of work per PE) run on the real protocol cores,
// one logging.Protocol per PE in rounds (Engine), and the real
// job.Coordinator is driven through a failure by N PEs that answer at
// once (Coordinator). Nothing of the protocols or the coordinator is
// re-implemented here: the counts are theirs.
//
// Run, for a pattern at N PEs, gives per PE per step the determinants
// created, the bytes piggybacked and the bytes logged, and, for one
// failure at the end of the measured steps, the recovery envelopes and
// resent messages with their bytes; CoordinatorFailure the coordinator's
// messages for a failure. The model is checked against the whole-job
// simulator (package sim) on small jobs (scale_test.go).
//
// Imports: actor, commutative, job, logging, migrate and the mini-apps'
// message types.
package scale
