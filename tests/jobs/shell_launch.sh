#!/usr/bin/env bash
# Start JOB_WORLD ranks of train_job.py the way a plain shell script does: no torchrun, no exit codes
# reported, each rank's output straight to the terminal. Usage: shell_launch.sh PORT
set -u
here=$(cd "$(dirname "$0")" && pwd)
world=${JOB_WORLD:-3}
pids=()
for ((r = 0; r < world; r++)); do
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 MASTER_PORT=$1 \
    "${PYTHON:-python3}" "$here/train_job.py" &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=$?; done
exit "$status"
