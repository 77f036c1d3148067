#!/usr/bin/env bash
# Starts (or checks) a one-node Slurm cluster on this machine, as root, for development and the
# `npm run test:slurm` suite: munged, slurmctld and slurmd from Debian's `munge` and `slurm-wlm`
# packages, configured from scripts/slurm/slurm.conf.in with this host's name. Idempotent: a
# cluster that already runs with the same configuration is left alone.
#
#   scripts/slurm-cluster.sh [start]   start what is not running; wait until the node is idle
#   scripts/slurm-cluster.sh stop      stop slurmd, slurmctld and munged
#   scripts/slurm-cluster.sh status    show the node and the queue
#
# Install the packages first: apt-get update && apt-get install -y slurm-wlm munge
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
conf=/etc/slurm/slurm.conf
state=/var/lib/slurm-media-dev
host="$(hostname -s)"
cpus="${SLURM_DEV_CPUS:-16}"

die() { echo "slurm-cluster: $*" >&2; exit 1; }

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_daemons() {
  for d in slurmd slurmctld; do
    if pid_alive "$state/$d.pid"; then
      kill "$(cat "$state/$d.pid")"
      for _ in $(seq 1 50); do pid_alive "$state/$d.pid" || break; sleep 0.1; done
    fi
  done
}

start_munge() {
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then return; fi
  [ -s /etc/munge/munge.key ] || {
    mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null ||
      dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
  }
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 1 50); do
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then return; fi
    sleep 0.1
  done
  die "munged did not start"
}

write_config() {
  local memory wanted
  memory=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2))
  wanted="$(sed -e "s/@HOST@/$host/g" -e "s|@STATE@|$state|g" -e "s/@CPUS@/$cpus/g" \
    -e "s/@MEMORY@/$memory/g" "$here/slurm/slurm.conf.in")"
  install -d -m 0755 /etc/slurm "$state" "$state/slurmctld" "$state/slurmd"
  if [ -f "$conf" ] && [ "$(cat "$conf")" = "$wanted" ]; then return 1; fi
  printf '%s\n' "$wanted" > "$conf"
  return 0
}

wait_idle() {
  for _ in $(seq 1 100); do
    local s
    s="$(sinfo -h -n "$host" -o '%T' 2>/dev/null | head -1)"
    case "$s" in
      idle* | mixed* | allocated*) return ;;
      down* | drain* | fail*) scontrol update nodename="$host" state=resume 2>/dev/null || true ;;
    esac
    sleep 0.2
  done
  die "the node did not become idle; see $state/slurmctld.log and $state/slurmd.log"
}

start() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null ||
    die "slurm-wlm and munge are not installed: apt-get update && apt-get install -y slurm-wlm munge"
  [ "$(id -u)" = 0 ] || die "run as root"
  start_munge
  if write_config; then stop_daemons; fi
  pid_alive "$state/slurmctld.pid" || slurmctld
  pid_alive "$state/slurmd.pid" || slurmd
  wait_idle
  echo "slurm-cluster: node $host is up ($(sinfo -h -o '%P' | paste -sd' ') partitions)"
}

case "${1:-start}" in
  start) start ;;
  stop)
    stop_daemons
    if pid_alive /run/munge/munged.pid; then kill "$(cat /run/munge/munged.pid)"; fi
    ;;
  status)
    sinfo
    squeue
    ;;
  *) die "usage: $0 [start|stop|status]" ;;
esac
