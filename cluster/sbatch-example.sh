#!/bin/bash
# sbatch-example.sh: a gochare job as one Slurm batch job. The batch script
# (on the job's first node) runs the coordinator; the job's tasks are the
# PEs, one per task, started by srun.
#
#   sbatch --ntasks=8 cluster/sbatch-example.sh stencil3d --checkpoint-every 20
#
# The arguments are those of `gochare run` after --pes (the app, its flags,
# launcher flags); --pes is the job's task count. Environment:
#   GOCHARE              the gochare binary (default: gochare on PATH)
#   GOCHARE_SECRET_DIR   a directory on a file system every node sees, for
#                        the job's secret file (default: $HOME/.gochare)
#   GOCHARE_PORT         the coordinator's TCP port (default 7070); the
#                        PEs' nodes must reach it on the batch node
#SBATCH --job-name=gochare
#SBATCH --ntasks=4
#SBATCH --output=gochare-%j.out
set -euo pipefail

gochare=${GOCHARE:-gochare}
port=${GOCHARE_PORT:-7070}
secret_dir=${GOCHARE_SECRET_DIR:-$HOME/.gochare}
[ $# -gt 0 ] || set -- stencil3d
mkdir -p "$secret_dir"
chmod 700 "$secret_dir"
secret="$secret_dir/job-$SLURM_JOB_ID.secret"
rm -f "$secret"
trap 'rm -f "$secret"' EXIT

# The coordinator, on this node, waits for $SLURM_NTASKS PEs.
"$gochare" run "$@" --pes "$SLURM_NTASKS" --external --listen "0.0.0.0:$port" --secret-file "$secret" &
coordinator=$!
# It writes the secret once it listens.
for _ in $(seq 600); do
  [ -s "$secret" ] && break
  kill -0 "$coordinator" 2>/dev/null || { wait "$coordinator"; exit; }
  sleep 0.1
done
[ -s "$secret" ] || { echo "sbatch-example.sh: the coordinator did not start within 60 s" >&2; kill "$coordinator"; exit 1; }

# The PEs. --kill-on-bad-exit=0: a PE that dies (the failures gochare
# recovers from) must not make Slurm end the others.
srun --kill-on-bad-exit=0 "$gochare" pe --coordinator "$(hostname):$port" --secret-file "$secret" &
pes=$!

status=0
wait "$coordinator" || status=$?
# srun ends when every PE has; its status is non-zero when a PE failed,
# which the coordinator's status already accounts for.
wait "$pes" || true
exit "$status"
