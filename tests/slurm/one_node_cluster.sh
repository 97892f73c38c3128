#!/usr/bin/env bash
# A throwaway one-node Slurm cluster on this machine, for the tests: its own munge key and
# munged (own socket, key, pid, seed and log files), a slurm.conf for one node `localhost` with
# one partition `debug`, and slurmctld and slurmd started with -f on that file. Everything lives
# in one directory; nothing under /etc, /run or /var is touched and no systemd is needed.
#
#   one_node_cluster.sh start DIR   start the cluster in DIR (created if missing), wait for the
#                                   node to be idle; then `export SLURM_CONF=DIR/slurm.conf`
#                                   (or `. DIR/env`) for sbatch, sinfo, squeue...
#   one_node_cluster.sh stop DIR    cancel its jobs, stop its daemons (by their pid files)
#
# Or source it and call slurm_cluster_start DIR / slurm_cluster_stop DIR.
# Needs root (slurmd launches jobs as their users) and the slurm-wlm and munge packages
# (scripts/setup); without them, start fails with a message that says which is missing.
# STICKLER_SLURM_CLUSTER_TIMEOUT (seconds, default 60) bounds the wait for each daemon.

_slurm_cluster_log() { echo "slurm-cluster: $*" >&2; }

# Free TCP port on 127.0.0.1 (bound and released: good enough for a test).
_slurm_cluster_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Last lines of the daemons' logs, for a failure message.
_slurm_cluster_dump_logs() {
  local dir=$1 f
  for f in "$dir"/munged.log "$dir"/slurmctld.log "$dir"/slurmd.log; do
    [[ -s "$f" ]] || continue
    echo "---- last lines of $f" >&2
    tail -n 20 "$f" >&2
  done
}

# Starts a daemon in the foreground mode of its own, detached from the caller's terminal and
# output (so a test runner does not wait on its pipes), and records its pid in DIR/NAME.pid.
_slurm_cluster_spawn() {
  local dir=$1 name=$2
  shift 2
  setsid "$@" </dev/null >>"$dir/$name.out" 2>&1 &
  echo $! >"$dir/$name.pid"
}

_slurm_cluster_alive() { [[ -f "$1/$2.pid" ]] && kill -0 "$(cat "$1/$2.pid")" 2>/dev/null; }

slurm_cluster_start() {
  local dir=${1:?usage: slurm_cluster_start DIR}
  local timeout=${STICKLER_SLURM_CLUSTER_TIMEOUT:-60}
  local missing=() cmd

  if [[ $(id -u) -ne 0 ]]; then
    _slurm_cluster_log "cannot start Slurm: must run as root (slurmd starts jobs as their user; SlurmUser=root)"
    return 1
  fi
  for cmd in munged munge unmunge slurmctld slurmd sbatch sinfo squeue scontrol scancel python3; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
  done
  if ((${#missing[@]})); then
    _slurm_cluster_log "cannot start Slurm: not installed: ${missing[*]} (install slurm-wlm and munge: scripts/setup)"
    return 1
  fi

  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  chmod 0700 "$dir"
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
  chmod 0700 "$dir/munge" "$dir/state" "$dir/spool"

  # munge: a fresh key and a daemon of our own on our own socket.
  local socket=$dir/munge/munge.socket
  if ((${#socket} > 100)); then
    _slurm_cluster_log "cannot start Slurm: the munge socket path $socket is too long for a Unix socket; use a shorter DIR (or TMPDIR)"
    return 1
  fi
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/munge/munge.key"
  # --force: munged refuses a few things it considers unsafe for a system daemon (running as
  # root among them); this one is private to the test.
  _slurm_cluster_spawn "$dir" munged munged --foreground --force \
    --socket="$socket" --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
    --seed-file="$dir/munge/munged.seed" --log-file="$dir/munged.log"
  local waited=0
  until munge -n -S "$socket" 2>/dev/null | unmunge -S "$socket" >/dev/null 2>&1; do
    if ! _slurm_cluster_alive "$dir" munged; then
      _slurm_cluster_log "cannot start Slurm: munged exited:"
      cat "$dir/munged.out" >&2
      _slurm_cluster_dump_logs "$dir"
      return 1
    fi
    if ((waited++ >= timeout * 5)); then
      _slurm_cluster_log "cannot start Slurm: munged did not answer on $socket within ${timeout}s"
      _slurm_cluster_dump_logs "$dir"
      return 1
    fi
    sleep 0.2
  done

  # slurm.conf: one node, as many CPUs as this machine and its memory less a margin.
  local cpus mem_total mem ctld_port slurmd_port
  cpus=$(nproc)
  mem_total=$(free -m | awk '/^Mem:/ {print $2}')
  mem=$((mem_total - mem_total / 10 - 256))
  ((mem > 256)) || mem=256
  ctld_port=$(_slurm_cluster_free_port)
  slurmd_port=$(_slurm_cluster_free_port)
  while [[ $slurmd_port == "$ctld_port" ]]; do slurmd_port=$(_slurm_cluster_free_port); done
  cat >"$dir/slurm.conf" <<EOF
# A one-node test cluster written by tests/slurm/one_node_cluster.sh.
ClusterName=stickler-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.daemon.pid
SlurmdPidFile=$dir/slurmd.daemon.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
NodeName=localhost CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  echo "export SLURM_CONF=$dir/slurm.conf" >"$dir/env"
  export SLURM_CONF=$dir/slurm.conf

  # -D: stay in the foreground (we keep the pid), -i: ignore state left by an earlier run.
  _slurm_cluster_spawn "$dir" slurmctld slurmctld -D -i -f "$dir/slurm.conf"
  _slurm_cluster_spawn "$dir" slurmd slurmd -D -N localhost -f "$dir/slurm.conf"

  # Ready when the node reports idle.
  local state="" reason=""
  waited=0
  while :; do
    state=$(sinfo -h -N -n localhost -o %T 2>/dev/null | head -n 1)
    [[ $state == idle ]] && break
    for cmd in slurmctld slurmd; do
      if ! _slurm_cluster_alive "$dir" "$cmd"; then
        _slurm_cluster_log "cannot start Slurm: $cmd exited:"
        cat "$dir/$cmd.out" >&2
        _slurm_cluster_dump_logs "$dir"
        return 1
      fi
    done
    if ((waited++ >= timeout * 2)); then
      reason=$(sinfo -h -N -n localhost -o '%T %E' 2>&1 | head -n 3)
      _slurm_cluster_log "cannot start Slurm: node localhost not idle within ${timeout}s (sinfo: ${reason:-no answer})"
      _slurm_cluster_dump_logs "$dir"
      return 1
    fi
    sleep 0.5
  done
  _slurm_cluster_log "up in $dir: node localhost idle, CPUs=$cpus RealMemory=${mem}M, slurmctld port $ctld_port (SLURM_CONF=$dir/slurm.conf)"
}

# Stops what slurm_cluster_start started in DIR; safe to call more than once or after a
# partial start.
slurm_cluster_stop() {
  local dir=${1:?usage: slurm_cluster_stop DIR}
  [[ -d "$dir" ]] || return 0
  dir=$(cd "$dir" && pwd)
  local name pid i
  if [[ -f "$dir/slurm.conf" ]] && _slurm_cluster_alive "$dir" slurmctld; then
    # Cancel whatever is still queued or running, and give the steps a moment to end.
    SLURM_CONF=$dir/slurm.conf scancel --quiet --full --partition=debug 2>/dev/null || true
    for ((i = 0; i < 20; i++)); do
      [[ -z $(SLURM_CONF=$dir/slurm.conf squeue -h -o %i 2>/dev/null) ]] && break
      sleep 0.5
    done
  fi
  for name in slurmd slurmctld munged; do
    [[ -f "$dir/$name.pid" ]] || continue
    pid=$(cat "$dir/$name.pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for ((i = 0; i < 40; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
      done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$dir/$name.pid"
  done
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -uo pipefail
  case ${1:-} in
    start)
      [[ $# -eq 2 ]] || { echo "usage: $0 start DIR" >&2; exit 2; }
      if ! slurm_cluster_start "$2"; then
        slurm_cluster_stop "$2"
        exit 1
      fi
      ;;
    stop)
      [[ $# -eq 2 ]] || { echo "usage: $0 stop DIR" >&2; exit 2; }
      slurm_cluster_stop "$2"
      ;;
    *)
      echo "usage: $0 start DIR | stop DIR" >&2
      exit 2
      ;;
  esac
fi
