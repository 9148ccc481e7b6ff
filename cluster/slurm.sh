#!/usr/bin/env bash
# slurm.sh: a single-node Slurm cluster on this machine, and a gochare job
# whose PEs srun starts, with one of them SIGKILLed.
#
#   sudo cluster/slurm.sh [install] [start] [check] [stop] [--bin GOCHARE]
#                         [--dir DIR] [--ctld-port P] [--slurmd-port P]
#                         [--coordinator-port P] [--timeout S]
#
# Steps (in this order, default: all four):
#   install  apt-get install Debian's slurm-wlm and munge (Debian 12:
#            Slurm 22.05), if slurmctld, slurmd, srun or munged is missing.
#   start    configure and start a private Slurm instance in DIR (default
#            /var/tmp/gochare-slurm): its own munge key and munged socket,
#            slurm.conf declaring this machine as one node with 4 CPUs
#            (whatever it has: SlurmdParameters=config_overrides), a
#            partition "gochare", slurmctld and slurmd. Nothing in /etc is
#            changed; clients find the instance with
#                export SLURM_CONF=DIR/slurm.conf
#   check    run stencil3d as README.md says: the coordinator on this node
#            (gochare run ... --external --listen 0.0.0.0:PORT
#            --secret-file DIR/job.secret), its 4 PEs started by
#            srun -n 4 --kill-on-bad-exit=0 gochare pe ..., and the PE of
#            task 1 SIGKILLed at step 15 (it stops itself there with
#            --kill pe=1,at=step:15,signal=STOP, and this script SIGKILLs
#            it, as kill -9 would). The job must end with status 0, one
#            recovery, the failure-free digest and "reference: match";
#            the step's other tasks end with status 0 and srun reports
#            only task 1. Then the same with --tls: the coordinator writes
#            the job's TLS files in DIR/srun-tls.secret (--secret-dir),
#            the PEs (gochare pe --tls --secret-dir DIR/srun-tls.secret)
#            read them, and every connection is mutual TLS. Then the same
#            as the first with sbatch, submitting cluster/sbatch-example.sh.
#   stop     stop the instance's daemons and remove DIR.
#
# An instance this run started is stopped when a step fails (or on SIGINT
# or SIGTERM) if stop was asked for, or if start itself failed; without
# stop it stays up for srun and sbatch by hand. Exit status: 0 when the steps passed, 1 when one
# failed, 2 on a usage error, 77 when it cannot run here (not root, or
# Slurm not installed and install not asked for): a message says why.
# Every wait has a deadline (--timeout S per job, default 300).
set -euo pipefail

SKIP=77
me=slurm.sh
here=$(cd "$(dirname "$0")" && pwd)
bin=""
dir=/var/tmp/gochare-slurm
ctld_port=6817
slurmd_port=6818
coord_port=7070
timeout_s=300
steps=()

die() { echo "$me: FAIL: $*" >&2; exit 1; }
skip() { echo "$me: SKIP: $*" >&2; exit "$SKIP"; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }
log() { echo "$me: $*"; }
num() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "$me: $1 wants a positive number, got $2" >&2; exit 2; }; }

while [ $# -gt 0 ]; do
  case "$1" in
    install|start|check|stop) steps+=("$1"); shift ;;
    --bin) bin="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --ctld-port) num "$1" "$2"; ctld_port="$2"; shift 2 ;;
    --slurmd-port) num "$1" "$2"; slurmd_port="$2"; shift 2 ;;
    --coordinator-port) num "$1" "$2"; coord_port="$2"; shift 2 ;;
    --timeout) num "$1" "$2"; timeout_s="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "$me: unknown argument $1" >&2; usage ;;
  esac
done
[ ${#steps[@]} -gt 0 ] || steps=(install start check stop)
has() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
case "$dir" in /*) ;; *) echo "$me: --dir wants an absolute path" >&2; exit 2 ;; esac

[ "$(id -u)" = 0 ] || skip "needs root (it starts munged, slurmctld and slurmd; run as root, e.g. with sudo)"

export SLURM_CONF="$dir/slurm.conf"
node=$(hostname -s)
pids=()
stop_at_exit=no
failed=1

missing() {
  local c
  for c in munged mungekey slurmctld slurmd srun sbatch sinfo scontrol; do
    command -v "$c" >/dev/null || { echo "$c"; return 0; }
  done
}

# --- install ----------------------------------------------------------------
if has install; then
  if [ -n "$(missing)" ]; then
    command -v apt-get >/dev/null || die "no apt-get: install Slurm (slurmctld, slurmd, srun) and munge by hand"
    log "installing slurm-wlm and munge"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends slurm-wlm munge >"${TMPDIR:-/tmp}/gochare-slurm-apt.log" 2>&1 ||
      { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends slurm-wlm munge >"${TMPDIR:-/tmp}/gochare-slurm-apt.log" 2>&1; } ||
      die "apt-get install slurm-wlm munge failed: $(tail -n 5 "${TMPDIR:-/tmp}/gochare-slurm-apt.log")"
  fi
  log "installed: $(slurmctld -V)"
fi
m=$(missing)
[ -z "$m" ] || skip "Slurm is not installed here ($m is missing; cluster/slurm.sh install installs it)"

# --- the instance -----------------------------------------------------------
pid_of() { [ -s "$dir/$1.pid" ] && cat "$dir/$1.pid"; }
alive() { local p; p=$(pid_of "$1") && kill -0 "$p" 2>/dev/null; }

stop_instance() {
  local d p end
  for d in slurmd slurmctld munged; do
    p=$(pid_of "$d") || continue
    kill -TERM "$p" 2>/dev/null || continue
    end=$((SECONDS + 20))
    while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  rm -rf "$dir"
}

cleanup() {
  local st=$? p
  set +e
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  if [ "$stop_at_exit" = yes ]; then
    if [ "$failed" = 1 ] && [ -d "$dir" ]; then
      # Keep the logs of a failure, out of the instance's directory.
      keep=$(mktemp -d "${TMPDIR:-/tmp}/gochare-slurm-logs.XXXXXX")
      cp -r "$dir"/*.log "$dir"/job* "$keep" 2>/dev/null
      echo "$me: logs kept in $keep" >&2
    fi
    stop_instance
  fi
  exit "$st"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_for SECONDS WHAT CMD...: poll CMD until it succeeds.
wait_for() {
  local secs=$1 what=$2 end=$((SECONDS + $1))
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || die "$what not within ${secs}s"
    sleep 0.1
  done
}

node_idle() { sinfo -h -N -n "$node" -o '%T' | grep -qx idle; }

if has start; then
  if alive slurmctld; then die "an instance runs in $dir already (cluster/slurm.sh stop stops it)"; fi
  stop_at_exit=yes
  rm -rf "$dir"
  mkdir -p "$dir"/munge "$dir"/ctld "$dir"/slurmd
  chmod 755 "$dir"
  chown munge: "$dir/munge"
  chmod 755 "$dir/munge"
  runuser -u munge -- mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null
  runuser -u munge -- munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
  wait_for 30 "munged's pid file" test -s "$dir/munge/munged.pid"
  cp "$dir/munge/munged.pid" "$dir/munged.pid"
  cat >"$SLURM_CONF" <<EOF
# A single-node Slurm cluster for gochare's tests (cluster/slurm.sh).
ClusterName=gochare
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/slurmd
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
# 4 CPUs whatever the machine has: the PEs are oversubscribed on small
# machines.
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=gochare Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
  slurmctld -f "$SLURM_CONF" -i
  wait_for 60 "slurmctld" scontrol ping
  slurmd -f "$SLURM_CONF"
  wait_for 120 "node $node idle in sinfo" node_idle
  log "Slurm instance up in $dir: node $node, 4 CPUs, partition gochare (export SLURM_CONF=$SLURM_CONF)"
  # Asked to start and not to stop: it stays up for what comes next.
  has stop || stop_at_exit=no
fi

# --- check ------------------------------------------------------------------
# wait_line FILE REGEX SECONDS [PID]: wait until FILE has a line matching
# REGEX; fail after SECONDS, or once PID has ended without it.
wait_line() {
  local file=$1 re=$2 secs=$3 pid=${4:-} end=$((SECONDS + $3))
  while ! grep -Eq -- "$re" "$file" 2>/dev/null; do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      grep -Eq -- "$re" "$file" 2>/dev/null && return 0
      die "no line matching '$re' in $file: its process ended; its end:
$(tail -n 30 "$file")"
    fi
    [ $SECONDS -lt $end ] || die "no line matching '$re' in $file within ${secs}s; its end:
$(tail -n 30 "$file")"
    sleep 0.05
  done
}

# wait_exit PID SECONDS: wait for a child to end; its status in st.
wait_exit() {
  local pid=$1 end=$((SECONDS + $2))
  st=0
  while kill -0 "$pid" 2>/dev/null && [ "$(awk '{print $3}' /proc/"$pid"/stat 2>/dev/null)" != Z ]; do
    [ $SECONDS -lt $end ] || { st=timeout; return 0; }
    sleep 0.05
  done
  wait "$pid" || st=$?
}

# task_pid JOBID RANK: the pid of the gochare pe process of a job's task
# (scontrol listpids: PID JOBID STEPID LOCALID GLOBALID).
task_pid() {
  local p
  p=$(scontrol listpids "$1" 2>/dev/null | awk -v r="$2" '$3 ~ /^[0-9]+$/ && $5 == r { print $1; exit }')
  [ -n "$p" ] && [ "$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | sed -n 2p)" = pe ] && echo "$p"
}

# kill_task JOBID RANK LOG: wait until the task's PE stopped itself (its
# injected failure) and SIGKILL it.
kill_task() {
  local p end=$((SECONDS + timeout_s))
  until p=$(task_pid "$1" "$2") && [ "$(awk '{print $3}' /proc/"$p"/stat 2>/dev/null)" = T ]; do
    [ $SECONDS -lt $end ] || die "task $2 of job $1 did not stop at its step within ${timeout_s}s"
    sleep 0.05
  done
  kill -KILL "$p"
  log "task $2 of job $1: its PE (pid $p) SIGKILLed"
  # It must be the kill that the coordinator sees, not the heartbeats that
  # stopped when the PE did.
  if grep -Eq "missed heartbeats" "$3"; then
    die "PE $2 was declared dead for missed heartbeats before this script killed it: $3"
  fi
}

digest_of() { sed -nE 's/^job digest ([0-9a-f]{16})$/\1/p' "$1" | tail -n 1; }

# The job README.md shows, on 4 PEs, small.
app_args=(stencil3d --grid 48,32,32 --chunk 16,16,16 --iterations 100 --checkpoint-every 10)
kill_rank=1
kill_step=15

# secret_flags NAME: the flags of the coordinator and the PEs of job NAME
# for its secret (a file; with --tls, for job srun-tls, a directory).
secret_flags() {
  if [ "$1" = srun-tls ]; then
    secret=(--tls --secret-dir "$dir/$1.secret")
  else
    secret=(--secret-file "$dir/$1.secret")
  fi
}

# start_coordinator NAME: the coordinator as README says, for a job whose
# PEs srun starts.
start_coordinator() {
  rm -rf "$dir/$1.secret"
  secret_flags "$1"
  timeout -k 5 "$timeout_s" "$bin" run "${app_args[@]}" --pes 4 --external \
    --listen "0.0.0.0:$coord_port" "${secret[@]}" \
    --kill "pe=$kill_rank,at=step:$kill_step,signal=STOP" >"$dir/$1-coordinator.log" 2>&1 &
  coord_pid=$!
  pids+=("$coord_pid")
  wait_line "$dir/$1-coordinator.log" "waiting for 4 PEs" 60 "$coord_pid"
}

# check_output NAME FILE: the coordinator's output shows the recovery and
# the failure-free result.
check_output() {
  local got
  got=$(digest_of "$2")
  [ "$got" = "$want" ] || die "$1: digest $got after the failure, $want without: $2"
  grep -q '^reference: match$' "$2" || die "$1: no 'reference: match' in $2"
  grep -Eq 'msg="recovery 1 of 1' "$2" || die "$1: no recovery reported in $2"
  grep -Eq "PE failed.*PE $kill_rank .*(lost its connection|ended)" "$2" || die "$1: the coordinator did not report PE $kill_rank's failure (its connection lost) in $2"
}

if has check; then
  alive slurmctld || skip "no Slurm instance runs in $dir (cluster/slurm.sh start starts one)"
  if [ -z "$bin" ]; then
    command -v go >/dev/null || die "needs go to build gochare (or pass --bin)"
    log "building gochare"
    (cd "$here/.." && go build -o "$dir/gochare" ./cmd/gochare) || die "go build failed"
    bin="$dir/gochare"
  fi
  [ -x "$bin" ] || die "$bin is not an executable"

  st=0
  timeout -k 5 "$timeout_s" "$bin" run "${app_args[@]}" --pes 4 >"$dir/clean.log" 2>&1 || st=$?
  [ "$st" = 0 ] || die "the failure-free run ended with status $st: $(tail -n 20 "$dir/clean.log")"
  want=$(digest_of "$dir/clean.log")
  [ -n "$want" ] || die "no digest in the failure-free run's output"
  log "failure-free digest $want"

  # srun, as README.md says; then the same with --tls.
  for name in srun srun-tls; do
    start_coordinator "$name"
    timeout -k 5 "$timeout_s" srun -n 4 --kill-on-bad-exit=0 --job-name="gochare-$name" \
      "$bin" pe --coordinator "$node:$coord_port" "${secret[@]}" >"$dir/$name.log" 2>&1 &
    srun_pid=$!
    pids+=("$srun_pid")
    wait_for 60 "the $name job in squeue" sh -c "squeue -h -n gochare-$name -o %i | grep -q ."
    jobid=$(squeue -h -n "gochare-$name" -o %i | head -n 1)
    kill_task "$jobid" "$kill_rank" "$dir/$name-coordinator.log"
    wait_exit "$coord_pid" "$timeout_s"
    [ "$st" = 0 ] || die "$name: the job ended with status $st; its end:
$(tail -n 40 "$dir/$name-coordinator.log")"
    check_output "$name" "$dir/$name-coordinator.log"
    wait_exit "$srun_pid" 60
    [ "$st" = 137 ] || die "$name: srun ended with status $st (want 137: task $kill_rank was SIGKILLed); its output:
$(tail -n 20 "$dir/$name.log")"
    grep -Eq "task $kill_rank: Killed" "$dir/$name.log" || die "$name: srun did not report task $kill_rank killed: $(tail -n 20 "$dir/$name.log")"
    if grep -Ev "task $kill_rank: Killed" "$dir/$name.log" | grep -Eq '^srun: error: .*task [0-9]+'; then
      die "$name: srun reports another task failed: $(cat "$dir/$name.log")"
    fi
    if [ "$name" = srun-tls ]; then
      [ "$(stat -c %a "$dir/$name.secret/pe.key")" = 600 ] || die "$name: $dir/$name.secret/pe.key is not mode 600"
      grep -q GOCHARE_JOB_SECRET "$dir/$name-coordinator.log" && die "$name: with --tls the coordinator printed a secret for the environment"
      grep -q 'refused connection' "$dir/$name-coordinator.log" "$dir/$name.log" && die "$name: a connection of the job was refused"
      log "$name: ok: job $jobid with --tls (files in $dir/$name.secret), task $kill_rank's PE SIGKILLed, recovered, the other tasks ended with status 0, digest $want = failure-free, reference: match"
    else
      log "$name: ok: job $jobid, task $kill_rank's PE SIGKILLed, recovered, the other tasks ended with status 0, digest $want = failure-free, reference: match"
    fi
  done

  # sbatch, with the example script: the coordinator in the batch script,
  # the PEs its srun's tasks.
  mkdir -p "$dir/secrets"
  jobid=$(sbatch --parsable --ntasks=4 --job-name=gochare-sbatch --output="$dir/sbatch-%j.out" \
    --export=ALL,GOCHARE="$bin",GOCHARE_SECRET_DIR="$dir/secrets",GOCHARE_PORT="$coord_port" \
    "$here/sbatch-example.sh" "${app_args[@]}" --kill "pe=$kill_rank,at=step:$kill_step,signal=STOP")
  [[ "$jobid" =~ ^[0-9]+$ ]] || die "sbatch: $jobid"
  kill_task "$jobid" "$kill_rank" "$dir/sbatch-$jobid.out"
  end=$((SECONDS + timeout_s))
  while squeue -h -j "$jobid" -o %i 2>/dev/null | grep -q .; do
    [ $SECONDS -lt $end ] || die "sbatch job $jobid still in the queue after ${timeout_s}s"
    sleep 0.2
  done
  out="$dir/sbatch-$jobid.out"
  state=$(scontrol show job "$jobid" | grep -oE 'JobState=[A-Z]+|ExitCode=[0-9]+:[0-9]+' | tr '\n' ' ')
  [ "$state" = "JobState=COMPLETED ExitCode=0:0 " ] || die "sbatch job $jobid: $state; its output:
$(tail -n 40 "$out")"
  check_output sbatch "$out"
  [ -z "$(ls -A "$dir/secrets")" ] || die "the batch script left its secret file in $dir/secrets"
  log "sbatch: ok: job $jobid completed, task $kill_rank's PE SIGKILLed, recovered, digest $want = failure-free, reference: match"
  failed=0
fi

if has stop; then
  stop_at_exit=no
  stop_instance
  log "Slurm instance in $dir stopped"
fi
failed=0
log "PASS: ${steps[*]}"
