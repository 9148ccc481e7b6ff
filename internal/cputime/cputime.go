// Package cputime reads the CPU time this process has used. On a loaded
// machine a benchmark's or a job's CPU time says what the code costs,
// where its wall time mostly says how long it waited for a core.
package cputime
