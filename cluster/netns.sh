#!/usr/bin/env bash
# netns.sh: gochare jobs across four hosts made of Linux network namespaces
# on this machine, with failures.
#
#   sudo cluster/netns.sh [--bin GOCHARE] [--only LIST] [--prefix P]
#                         [--subnet A.B.C] [--pes-per-host K] [--timeout S]
#                         [--keep]
#
# Hosts h0..h3 are network namespaces, each with one veth link ("eth0",
# address A.B.C.10+i/24) to a bridge in a fifth namespace (the switch).
# Nothing is added to the machine's own network namespace; the namespaces,
# links and addresses are removed on exit, whatever the outcome (and on
# SIGINT/SIGTERM). The coordinator (`gochare run APP --external`) runs on
# h0, the PEs (`gochare pe`) on h1..h3, K per host (ranks round-robin over
# the hosts). The scenarios (--only, comma separated; default all):
#
#   stencil3d, leanmd, lulesh
#       the app on 3*K PEs; one PE on another host is SIGKILLed by this
#       script at a fixed step (the PE first stops itself there with
#       --kill pe=R,at=step:S,signal=STOP, so that the step is the same on
#       every run, then this script sends it SIGKILL from outside its
#       namespace). The job must end with status 0, one recovery, the
#       digest of the failure-free run (same app, same flags, PEs spawned
#       on h0) and, for stencil3d and lulesh, "reference: match".
#   linkdown
#       stencil3d; once the job's second checkpoint is committed, the
#       link of host h1 goes down (its veth set down; its PEs are not
#       touched and keep running). The coordinator must declare h1's PEs
#       dead for missed heartbeats, recover their tasks on the other hosts
#       and end with the failure-free digest and "reference: match"; h1's
#       PEs, cut off, stop themselves.
#   tls
#       stencil3d as above with --tls: the PEs read the job's TLS files
#       from the coordinator's --secret-dir (this machine's file system
#       stands for a shared one), every connection is mutual TLS; before
#       the PEs start, a stranger on h2 that connects to the coordinator
#       without TLS must be refused, with a log line naming its address.
#   loopback
#       2 PEs, one on the coordinator's host h0 that dials it at
#       127.0.0.1 (so it listens for the other PE on loopback), one on h1.
#       With PE 0 on loopback the job runs (of two PEs the lower rank
#       dials: nobody dials PE 0); with PE 1 there, PE 0 on h1 would have
#       to dial it: the job must stop at once with an error naming both
#       (not stall).
#
# The namespaces are named P-h0..P-h3 and P-sw (--prefix P, default
# gcns followed by this script's pid); at the end every namespace named
# P-* is removed.
#
# Exit status: 0 when every scenario passed, 1 when one failed (its logs
# are kept and their directory printed, as with --keep), 2 on a usage
# error, 77 when the harness cannot run here (not root, no `ip netns`): a
# message says why.
# Every wait has a deadline (--timeout S per job, default 300).
set -euo pipefail

SKIP=77
me=netns.sh
bin=""
only="stencil3d,leanmd,lulesh,linkdown,loopback,tls"
job_tls=no
prefix="gcns$$"
subnet="10.231.7"
per_host=2
timeout_s=300
port=7070
keep=no

die() { echo "$me: FAIL: $*" >&2; exit 1; }
skip() { echo "$me: SKIP: $*" >&2; exit "$SKIP"; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }
log() { echo "$me: $*"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --prefix) prefix="$2"; shift 2
      [[ "$prefix" =~ ^[A-Za-z0-9_.]+$ ]] || { echo "$me: --prefix wants letters, digits, _ or ." >&2; exit 2; } ;;
    --subnet) subnet="$2"; shift 2 ;;
    --pes-per-host) per_host="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    --keep) keep=yes; shift ;;
    -h|--help) usage ;;
    *) echo "$me: unknown argument $1" >&2; usage ;;
  esac
done
[[ "$subnet" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "$me: --subnet wants three numbers A.B.C, got $subnet" >&2; exit 2; }
[[ "$per_host" =~ ^[1-9][0-9]*$ ]] || { echo "$me: --pes-per-host wants a positive number" >&2; exit 2; }
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || { echo "$me: --timeout wants seconds" >&2; exit 2; }
for s in ${only//,/ }; do
  case "$s" in stencil3d|leanmd|lulesh|linkdown|loopback|tls) ;; *) echo "$me: unknown scenario $s" >&2; exit 2 ;; esac
done

# --- can we run here? -------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "needs root to make network namespaces (run as root, e.g. with sudo)"
command -v ip >/dev/null || skip "needs the ip command (iproute2)"
command -v timeout >/dev/null || skip "needs the timeout command (coreutils)"
command -v unshare >/dev/null || skip "needs the unshare command (util-linux)"

hosts=4
npes=$(( (hosts - 1) * per_host ))
addr() { echo "$subnet.$((10 + $1))"; }
ns() { echo "$prefix-$1"; }
coordinator="$(addr 0):$port"

work=$(mktemp -d "${TMPDIR:-/tmp}/gochare-netns.XXXXXX")
pids=()
failed=1

cleanup() {
  local st=$?
  set +e
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  # Every namespace of this run: those made, and any a failure left half
  # made.
  for n in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    case "$n" in "$prefix"-*) ip netns del "$n" 2>/dev/null ;; esac
  done
  if [ "$st" = "$SKIP" ] || [ "$failed" = 0 ] && [ "$keep" = no ]; then
    rm -rf "$work"
  else
    echo "$me: logs kept in $work" >&2
  fi
  exit "$st"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# mkns makes a namespace with lo up (cleanup removes it: its name has the
# prefix).
mkns() {
  ip netns add "$1" || return 1
  ip -n "$1" link set lo up
}

if ! err=$(ip netns add "$prefix-probe" 2>&1); then
  skip "cannot make network namespaces here: $err"
fi
ip netns del "$prefix-probe"

if [ -z "$bin" ]; then
  command -v go >/dev/null || skip "needs go to build gochare (or pass --bin)"
  log "building gochare"
  (cd "$(dirname "$0")/.." && go build -o "$work/gochare" ./cmd/gochare) || die "go build failed"
  bin="$work/gochare"
fi
[ -x "$bin" ] || die "$bin is not an executable"

# --- the hosts --------------------------------------------------------------
sw=$(ns sw)
mkns "$sw" || skip "cannot make network namespaces here"
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
for i in $(seq 0 $((hosts - 1))); do
  h=$(ns h$i)
  mkns "$h"
  ip -n "$h" link add eth0 type veth peer name h$i netns "$sw"
  ip -n "$sw" link set h$i master br0
  ip -n "$sw" link set h$i up
  ip -n "$h" addr add "$(addr $i)/24" dev eth0
  ip -n "$h" link set eth0 up
done
log "hosts: $(for i in $(seq 0 $((hosts - 1))); do printf '%s=%s ' "$(ns h$i)" "$(addr $i)"; done)(bridge in $sw)"
log "coordinator on $(ns h0) at $coordinator; $npes PEs, $per_host on each of $(ns h1)..$(ns h$((hosts - 1)))"

# --- helpers ----------------------------------------------------------------
# on HOST CMD...: run CMD in host HOST's namespace, under the host's own
# name (a UTS namespace: the launcher's log lines name a PE's host). ip,
# unshare and sh exec what follows, so that CMD & leaves CMD's pid in $!.
on() { local h=$1; shift; ip netns exec "$(ns h$h)" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "$(ns h$h)" "$@"; }
# on_cmd HOST: the words of on HOST, for commands started with & whose pid
# is needed (a function started with & runs in a subshell of its own).
on_cmd() { on_words=(ip netns exec "$(ns h$1)" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "$(ns h$1)"); }

# host_of RANK: the host of a PE.
host_of() { echo $((1 + $1 % (hosts - 1))); }

# wait_line FILE REGEX SECONDS [PID]: wait until FILE has a line matching
# REGEX (grep -E); fail after SECONDS, or as soon as PID has ended without
# the line.
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
    sleep 0.02
  done
}

# wait_exit PID SECONDS: wait for a child to end; its exit status in st
# ("timeout" if it did not end within SECONDS).
wait_exit() {
  local pid=$1 end=$((SECONDS + $2))
  st=0
  while kill -0 "$pid" 2>/dev/null && [ "$(awk '{print $3}' /proc/"$pid"/stat 2>/dev/null)" != Z ]; do
    [ $SECONDS -lt $end ] || { st=timeout; return 0; }
    sleep 0.05
  done
  wait "$pid" || st=$?
}

# wait_comm PID NAME SECONDS: wait until process PID runs the program NAME
# (the first 15 bytes of it).
wait_comm() {
  local end=$((SECONDS + $3))
  until [ "$(cat /proc/"$1"/comm 2>/dev/null)" = "${2:0:15}" ]; do
    kill -0 "$1" 2>/dev/null || die "process $1 ended before it ran $2"
    [ $SECONDS -lt $end ] || die "process $1 does not run $2 after $3s"
    sleep 0.02
  done
}

# wait_stopped PID SECONDS: wait until process PID is stopped (SIGSTOP).
wait_stopped() {
  local pid=$1 end=$((SECONDS + $2))
  until [ "$(awk '{print $3}' /proc/"$pid"/stat 2>/dev/null)" = T ]; do
    kill -0 "$pid" 2>/dev/null || die "process $pid ended before it stopped"
    [ $SECONDS -lt $end ] || die "process $pid did not stop within $2s"
    sleep 0.02
  done
}

# digest_of FILE: the app's digest line's value.
digest_of() {
  sed -nE 's/^(job digest|digest:|Digest +=) ([0-9a-f]{16})$/\2/p' "$1" | tail -n 1
}

# clean_digest DIR APP ARGS...: the failure-free run's digest in want (its
# PEs spawned on h0).
clean_digest() {
  local dir=$1; shift
  # In the background, so that a signal to this script is handled at once.
  on_cmd 0
  "${on_words[@]}" timeout -k 5 "$timeout_s" "$bin" run "$@" --pes "$npes" >"$dir/clean.log" 2>&1 &
  pids+=("$!")
  wait_exit "$!" "$((timeout_s + 10))"
  [ "$st" = 0 ] || die "the failure-free run of $1 ended with status $st; its end:
$(tail -n 30 "$dir/clean.log")"
  want=$(digest_of "$dir/clean.log")
  [ -n "$want" ] || die "no digest in the failure-free run's output $dir/clean.log"
}

# start_job DIR ARGS...: start the coordinator on h0 (its pid in coord_pid)
# and the PEs on h1..h3 (pe_pids), once the secret file is written.
start_job() {
  local dir=$1 r secret=(--secret-file "$dir/job.secret"); shift
  rm -rf "$dir/job.secret" "$dir/secret"
  # With --tls (job_tls=yes) the PEs read the TLS files in $dir/secret.
  [ "$job_tls" = yes ] && secret=(--tls --secret-dir "$dir/secret")
  on_cmd 0
  "${on_words[@]}" timeout -k 5 "$timeout_s" "$bin" run "$@" --pes "$npes" --external \
    --listen "$coordinator" "${secret[@]}" \
    >"$dir/coord.log" 2>&1 &
  coord_pid=$!
  pids+=("$coord_pid")
  wait_line "$dir/coord.log" "waiting for $npes PEs" 60 "$coord_pid"
  if [ "$job_tls" = yes ]; then
    [ -s "$dir/secret/pe.key" ] || die "the coordinator did not write $dir/secret/pe.key"
    [ "$(stat -c %a "$dir/secret/pe.key")" = 600 ] || die "$dir/secret/pe.key is not mode 600"
    grep -q GOCHARE_JOB_SECRET "$dir/coord.log" && die "with --tls the coordinator printed a secret for the environment"
    stranger "$dir"
  else
    [ -s "$dir/job.secret" ] || die "the coordinator did not write $dir/job.secret"
  fi
  pe_pids=()
  for r in $(seq 0 $((npes - 1))); do
    on_cmd "$(host_of "$r")"
    "${on_words[@]}" "$bin" pe --coordinator "$coordinator" --rank "$r" --size "$npes" \
      "${secret[@]}" >"$dir/pe$r.log" 2>&1 &
    pe_pids+=("$!")
    pids+=("$!")
  done
}

# stranger DIR: from h2, a connection to the coordinator that speaks no
# TLS; the coordinator must refuse it and log its address.
stranger() {
  local dir=$1
  on_cmd 2
  "${on_words[@]}" timeout 30 bash -c 'exec 3<>"/dev/tcp/$0/$1" && printf "GCT1 no certificate" >&3 && cat <&3 >/dev/null' \
    "$(addr 0)" "$port" 2>/dev/null || true
  wait_line "$dir/coord.log" "refused connection\" peer=$(addr 2):[0-9]+ reason=\"TLS: .*first record does not look like a TLS handshake" 30 "$coord_pid"
}

# check_end DIR CLEAN_DIGEST NEED_REFERENCE: the coordinator ended with
# status 0 and the failure-free digest (and reference: match).
check_end() {
  local dir=$1 want=$2 ref=$3 got
  wait_exit "$coord_pid" "$timeout_s"
  [ "$st" = 0 ] || die "the job ended with status $st; its end:
$(tail -n 40 "$dir/coord.log")"
  got=$(digest_of "$dir/coord.log")
  [ "$got" = "$want" ] || die "digest $got after the failure, $want without: $dir/coord.log"
  if [ "$ref" = yes ]; then
    grep -q '^reference: match' "$dir/coord.log" || die "no 'reference: match' in $dir/coord.log"
  fi
  grep -Eq 'msg="recovery 1 of 1' "$dir/coord.log" || die "no recovery reported in $dir/coord.log"
}

# --- scenarios --------------------------------------------------------------
# kill_scenario APP RANK STEP REFERENCE ARGS...: RANK is SIGKILLed at STEP.
kill_scenario() {
  local app=$1 rank=$2 step=$3 ref=$4 dir="$work/${scenario:-$1}" pid r start
  shift 4
  mkdir -p "$dir"
  start=$SECONDS
  clean_digest "$dir" "$app" "$@"
  log "$app: failure-free digest $want"
  start_job "$dir" "$app" "$@" --kill "pe=$rank,at=step:$step,signal=STOP"
  pid=${pe_pids[$rank]}
  # $! was the PE itself: ip netns exec execs it.
  wait_comm "$pid" "$(basename "$bin")" 10
  wait_stopped "$pid" "$timeout_s"
  kill -KILL "$pid"
  { wait "$pid"; } 2>/dev/null || true
  log "$app: PE $rank (pid $pid, host $(ns h$(host_of "$rank")) $(addr "$(host_of "$rank")")) SIGKILLed at step $step"
  check_end "$dir" "$want" "$ref"
  grep -Eq "PE failed.*PE $rank " "$dir/coord.log" || die "the coordinator did not report PE $rank's failure: $dir/coord.log"
  for r in $(seq 0 $((npes - 1))); do
    [ "$r" = "$rank" ] && continue
    wait_exit "${pe_pids[$r]}" 60
    [ "$st" = 0 ] || die "PE $r ended with status $st: $(tail -n 20 "$dir/pe$r.log")"
  done
  if [ "$job_tls" = yes ]; then
    log "${scenario:-$app}: ok: $app with --tls, a stranger without a certificate refused, recovered across hosts, digest $want = failure-free$([ "$ref" = yes ] && echo ', reference: match') ($((SECONDS - start))s)"
  else
    log "$app: ok: recovered across hosts, digest $want = failure-free$([ "$ref" = yes ] && echo ', reference: match') ($((SECONDS - start))s)"
  fi
}

# linkdown_scenario: host h1's link goes down once the job's second
# checkpoint is committed (step 10 of 100); its PEs go on running.
linkdown_scenario() {
  local dir="$work/linkdown" host=1 r start at cut=()
  local args=(stencil3d --grid 48,32,32 --chunk 16,16,16 --iterations 100 --checkpoint-every 10)
  mkdir -p "$dir"
  start=$SECONDS
  clean_digest "$dir" "${args[@]}"
  log "linkdown: failure-free digest $want"
  start_job "$dir" "${args[@]}"
  wait_line "$dir/coord.log" 'msg="checkpoint committed" epoch=2 ' "$timeout_s" "$coord_pid"
  ip -n "$(ns h$host)" link set eth0 down
  at=$(sed -nE 's/.*msg="checkpoint committed" epoch=([0-9]+) .*/\1/p' "$dir/coord.log" | tail -n 1)
  # The job must not have ended before the link went down: the job's
  # report comes at its end.
  if [ -n "$(digest_of "$dir/coord.log")" ]; then
    die "the job ended before the link of $(ns h$host) went down (the harness reacts to its second checkpoint): make the job longer"
  fi
  for r in $(seq 0 $((npes - 1))); do
    if [ "$(host_of "$r")" = "$host" ]; then cut+=("$r"); fi
  done
  log "linkdown: link of $(ns h$host) ($(addr $host), PEs ${cut[*]}) down after checkpoint $at; its PEs keep running"
  for r in "${cut[@]}"; do
    wait_line "$dir/coord.log" "PE failed.*PE $r .*missed heartbeats" "$timeout_s" "$coord_pid"
  done
  check_end "$dir" "$want" yes
  for r in "${cut[@]}"; do
    wait_exit "${pe_pids[$r]}" 60
    [ "$st" != 0 ] && [ "$st" != timeout ] || die "PE $r, cut off, ended with status $st"
    grep -Eq "PE $r (heard nothing from|lost) the coordinator" "$dir/pe$r.log" || die "PE $r, cut off, did not say it lost the coordinator: $(tail -n 20 "$dir/pe$r.log")"
  done
  for r in $(seq 0 $((npes - 1))); do
    [ "$(host_of "$r")" = "$host" ] && continue
    wait_exit "${pe_pids[$r]}" 60
    [ "$st" = 0 ] || die "PE $r ended with status $st: $(tail -n 20 "$dir/pe$r.log")"
  done
  # The link comes back for the scenarios that follow.
  ip -n "$(ns h$host)" link set eth0 up
  log "linkdown: ok: PEs ${cut[*]} declared dead for missed heartbeats, recovered, digest $want = failure-free, reference: match ($((SECONDS - start))s)"
}

# loopback_job DIR LOOPRANK: a 2-PE job, PE LOOPRANK on h0 reaching the
# coordinator over loopback (so listening there), the other on h1.
loopback_job() {
  local dir=$1 lr=$2 r
  mkdir -p "$dir"
  on_cmd 0
  "${on_words[@]}" timeout -k 5 "$timeout_s" "$bin" run stencil3d --pes 2 --grid 16,16,16 --chunk 8,8,8 --iterations 10 \
    --external --listen "0.0.0.0:$port" --secret-file "$dir/job.secret" >"$dir/coord.log" 2>&1 &
  coord_pid=$!
  pids+=("$coord_pid")
  wait_line "$dir/coord.log" "waiting for 2 PEs" 60 "$coord_pid"
  pe_pids=()
  for r in 0 1; do
    if [ "$r" = "$lr" ]; then
      on_cmd 0
      "${on_words[@]}" "$bin" pe --coordinator "127.0.0.1:$port" --rank "$r" --size 2 --secret-file "$dir/job.secret" >"$dir/pe$r.log" 2>&1 &
    else
      on_cmd 1
      "${on_words[@]}" "$bin" pe --coordinator "$coordinator" --rank "$r" --size 2 --secret-file "$dir/job.secret" >"$dir/pe$r.log" 2>&1 &
    fi
    pe_pids+=("$!")
    pids+=("$!")
  done
  wait_exit "$coord_pid" "$timeout_s"
}

# loopback_scenario: PE 0 on loopback is only dialed by nobody (the lower
# rank of a pair dials): the job runs. PE 1 on loopback must be dialed by
# PE 0 on h1: the job stops at once, naming both.
loopback_scenario() {
  local start=$SECONDS p
  loopback_job "$work/loopback0" 0
  [ "$st" = 0 ] || die "loopback: PE 0 on loopback: the job ended with status $st; its end:
$(tail -n 20 "$work/loopback0/coord.log")"
  loopback_job "$work/loopback1" 1
  [ "$st" = 1 ] || die "loopback: PE 1 on loopback: the job ended with status $st, want 1; its end:
$(tail -n 20 "$work/loopback1/coord.log")"
  grep -q "PE 1 listens on 127.0.0.1:[0-9]*, a loopback address, and PE 0, which dials it, joined from $(addr 1):[0-9]*, another host" "$work/loopback1/coord.log" ||
    die "loopback: the coordinator did not name the PE on loopback: $(tail -n 20 "$work/loopback1/coord.log")"
  for p in "${pe_pids[@]}"; do
    wait_exit "$p" 60
    [ "$st" != timeout ] || die "loopback: a PE (pid $p) still runs 60 s after the job stopped"
  done
  log "loopback: ok: PE 0 on loopback runs (nobody dials it); PE 1 on loopback, to be dialed from $(ns h1), stops the job at once, naming both ($((SECONDS - start))s)"
}

for s in ${only//,/ }; do
  case "$s" in
    loopback) loopback_scenario ;;
    stencil3d) kill_scenario stencil3d 1 15 yes --grid 48,48,32 --chunk 16,8,4 --iterations 30 --checkpoint-every 10 ;;
    leanmd) kill_scenario leanmd 4 15 no --cells 3,3,3 --kaway 1,1,1 --atoms 10 --steps 30 --migrate-every 10 --checkpoint-every 10 ;;
    lulesh) kill_scenario lulesh 2 23 yes --size 10 --chunk 5,5,5 --iterations 50 --checkpoint-every 10 ;;
    linkdown) linkdown_scenario ;;
    tls) job_tls=yes scenario=tls kill_scenario stencil3d 1 15 yes --grid 48,48,32 --chunk 16,8,4 --iterations 30 --checkpoint-every 10 ;;
  esac
done
failed=0
log "PASS: $only"
