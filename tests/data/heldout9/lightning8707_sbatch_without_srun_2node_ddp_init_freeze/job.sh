#!/bin/bash
#SBATCH --job-name=ddp-test
#SBATCH --nodes=2
#SBATCH --gpus-per-node=4
#SBATCH --cpus-per-task=4
#SBATCH --mem=64G
#SBATCH --time=00:15:00

module load python/3.8 cuda/11.1
source ~/envs/pl/bin/activate
cd ~/ddp-test

python train_mnist.py --num_nodes 2 --gpus 4 --accelerator ddp
