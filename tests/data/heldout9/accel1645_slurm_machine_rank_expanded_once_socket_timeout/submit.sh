#!/bin/bash
#SBATCH --job-name=acc-test
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:2
#SBATCH --cpus-per-task=16
#SBATCH --output=slurm-%j.out
set -x
MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
MASTER_PORT=29671
NNODES=$SLURM_NNODES
WORLD_SIZE=$((2*NNODES))
LAUNCHER="accelerate launch --multi_gpu --mixed_precision=fp16 --num_machines $NNODES --num_processes $WORLD_SIZE --main_process_port $MASTER_PORT --machine_rank $SLURM_PROCID --main_process_ip=$MASTER_ADDR "
srun --kill-on-bad-exit=1 bash -c "$LAUNCHER check_gpus.py"
