#!/usr/bin/env bash
# Captures the bundled real runs on a host with 2 GPUs: the DDP job of tests/jobs/train_job.py
# (8 x Linear(2048), batch 64, like the corpus workload) under `ncclscope run`, healthy, with rank 1
# stuck, with rank 1 straggling, and with rank 1 crashing; then the hook's overhead and a perf sweep.
# Usage: bash benchmarks/gpu_capture.sh OUTDIR [runs|overhead|perf]...
set -u
OUT=${1:?outdir}; shift
PARTS=${*:-"runs overhead perf"}
mkdir -p "$OUT" samples
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=${PY:-python3}
W="JOB_BACKEND=nccl JOB_DIM=2048 JOB_LAYERS=8 JOB_BATCH=64"

run() {
  local name=$1; shift
  rm -rf "samples/$name"
  local t0=$(date +%s.%N)
  env $W "$@" timeout 240 $PY -m ncclscope run --run-dir "samples/$name" -- \
    $PY -m torch.distributed.run --standalone --nproc_per_node=2 tests/jobs/train_job.py >"$OUT/$name.out" 2>&1
  echo "$name exit=$? took $($PY -c "import time; print(round(time.time() - $t0, 1))") s"
}

for part in $PARTS; do
  case $part in
    runs)
      { nvidia-smi; nvidia-smi topo -m; $PY -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'; } >"$OUT/system.txt" 2>&1
      run gpu_healthy JOB_STEPS=60 JOB_SUBGROUP=1
      run gpu_hang JOB_STEPS=60 JOB_HANG_RANK=1 JOB_HANG_STEP=20 JOB_PG_TIMEOUT=60
      run gpu_straggler JOB_STEPS=40 JOB_STRAGGLER_RANK=1 JOB_STRAGGLER_S=0.25 JOB_STRAGGLER_FROM=10
      run gpu_crash JOB_STEPS=60 JOB_CRASH_RANK=1 JOB_CRASH_STEP=20
      for d in samples/gpu_healthy samples/gpu_hang samples/gpu_straggler samples/gpu_crash; do
        $PY -m ncclscope analyze "$d" --json --no-cache >"$OUT/$(basename $d).json" 2>>"$OUT/analyze.err"
      done
      tar czf "$OUT/samples_runs.tgz" samples/gpu_healthy samples/gpu_hang samples/gpu_straggler samples/gpu_crash
      ;;
    overhead)
      $PY benchmarks/hook_overhead.py --backend nccl --nproc 2 --steps 300 --repeats 3 --bare >"$OUT/overhead.txt" 2>&1
      echo "overhead exit=$?"
      ;;
    perf)
      rm -rf samples/gpu_perf
      $PY -m ncclscope doctor --json >"$OUT/doctor.json" 2>&1
      $PY -m ncclscope perf --backend nccl --nproc 2 --ops all --min-bytes 8 --max-bytes 256M --factor 2 \
        --iters 20 --warmup 5 --out samples/gpu_perf >"$OUT/perf.txt" 2>&1
      echo "perf exit=$?"
      tar czf "$OUT/samples_perf.tgz" samples/gpu_perf
      ;;
  esac
done
# Two more, run separately: bash benchmarks/gpu_capture.sh OUTDIR extra
if [[ " $PARTS " == *" extra "* ]]; then
  rm -rf samples/gpu_desync samples/gpu_pause
  env $W JOB_STEPS=60 JOB_DESYNC_RANK=1 JOB_DESYNC_STEP=20 JOB_DESYNC_KIND=size JOB_PG_TIMEOUT=60 timeout 240 \
    $PY -m ncclscope run --run-dir samples/gpu_desync --kill-on-hang -- \
    $PY -m torch.distributed.run --standalone --nproc_per_node=2 tests/jobs/train_job.py >"$OUT/gpu_desync.out" 2>&1
  echo "gpu_desync exit=$?"
  env $W JOB_STEPS=40 JOB_PAUSE_S=15 JOB_PAUSE_STEP=20 timeout 240 $PY -m ncclscope run --run-dir samples/gpu_pause -- \
    $PY -m torch.distributed.run --standalone --nproc_per_node=2 tests/jobs/train_job.py >"$OUT/gpu_pause.out" 2>&1
  echo "gpu_pause exit=$?"
  tar czf "$OUT/samples_extra.tgz" samples/gpu_desync samples/gpu_pause
fi
