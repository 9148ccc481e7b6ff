// Package cluster holds the harnesses that run gochare jobs the way a
// cluster does, on this one machine, and the tests that run them where
// they can (as root):
//
//   - netns.sh makes four hosts out of Linux network namespaces joined by a
//     bridge, starts the coordinator (gochare run APP --external) on one
//     and the PEs (gochare pe) on the other three, and runs each mini-app
//     with a PE SIGKILLed on another host, then a host whose link goes
//     down, checking the failure-free digest (TestNetnsHarness).
//   - slurm.sh configures and starts munge, slurmctld and slurmd for a
//     single-node Slurm cluster and runs a mini-app's PEs with srun as
//     README.md says, with one srun task's PE SIGKILLed (TestSlurm).
//
// docs/cluster.md says how to run a job on a real cluster. The package has
// no code of its own: only these scripts and their tests.
package cluster
