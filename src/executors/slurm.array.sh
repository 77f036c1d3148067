#!/bin/sh
# The batch script of every Slurm job array of the media platform (docs/executors.md, "Job
# arrays"): each task of the array is one job. It starts in the array's directory, where the entry
# named after the task id links to the task's job directory; there, `.job/env` and `.job/argv`
# (written by the worker, one single-quoted word each) hold the job's environment and argv, so
# that no job's arguments or environment are on sbatch's command line. The job then runs through
# the same batch script as a job of its own (its path is this script's argument).
job_script="$1"
cd -P -- "$SLURM_ARRAY_TASK_ID" || exit 1
set -a
. ./.job/env
set +a
eval "set -- $(cat .job/argv)"
exec /bin/sh "$job_script" "$@"
