// Package apptest holds what the applications' tests share: Double, a
// one-goroutine double of the runtime that delivers a job's messages in a
// seeded random order and can pack and unpack every task along the way;
// Run, a whole job in this process on the real scheduler
// (inprocess.Run), with kills and protocols given as options;
// LastJSON, the --json report of a run; and Sum, the statistics recovery
// tests check (tasks restored, rolled back, determinants).
//
// It imports actor and scheduler, and is imported by tests only.
package apptest
