#!/bin/bash
#SBATCH --job-name=pl-seg
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-node=2
#SBATCH --time=01:00:00

srun python train_seg.py --num_nodes 2 --devices 2 --strategy ddp
