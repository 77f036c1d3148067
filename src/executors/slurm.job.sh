#!/bin/sh
# The batch script of every Slurm job of the media platform (docs/executors.md). The same file
# for every job: sbatch passes the job's argv as this script's arguments, and they run as they
# are, one literal argument each, never joined into a shell line. It runs in the job's directory
# (sbatch --chdir), gives the program the same environment as the local executor, and records
# the program's exit status in .job/exit (read by the worker; this needs no Slurm accounting).
HOME="$(pwd)"
TMPDIR="$HOME"
OUTPUT_DIR="$HOME/output"
export HOME TMPDIR OUTPUT_DIR

# The program is looked up as a file on PATH, never as a shell builtin: `eval` would read its
# arguments as code. A name with a slash is a file already.
program=
case "$1" in
  */*) program="$1" ;;
  ?*)
    set -f
    saved_ifs="$IFS"
    IFS=:
    for dir in $PATH; do
      if [ -f "${dir:-.}/$1" ] && [ -x "${dir:-.}/$1" ]; then
        program="${dir:-.}/$1"
        break
      fi
    done
    IFS="$saved_ifs"
    set +f
    ;;
esac
if [ -n "$program" ]; then
  shift
  "$program" "$@"
  status=$?
else
  printf 'cannot start "%s": no such program\n' "$1" >&2
  status=127
fi
printf '%s\n' "$status" > .job/exit.tmp && mv -f .job/exit.tmp .job/exit
exit "$status"
