#!/bin/bash -l
#SBATCH -J seg-ddp
#SBATCH --nodes 2
#SBATCH --gres=gpu:8
#SBATCH --exclusive
#SBATCH -t 04:00:00
module load cuda/11.3
conda activate seg
srun hostname
python -u main.py --gpus 8 --num_nodes 2 --accelerator ddp --max_epochs 40
