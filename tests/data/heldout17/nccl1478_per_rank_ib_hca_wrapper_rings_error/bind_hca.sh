#!/bin/bash

ulimit -n 100000
APP="${@}"

let local_rank=$OMPI_COMM_WORLD_LOCAL_RANK%4
echo $OMPI_COMM_WORLD_LOCAL_RANK
echo ${local_rank}
case ${local_rank} in
[0])
  export NCCL_IB_HCA=mlx5_0:1
  numactl --cpunodebind=0 --membind=0 $APP
  ;;
[1])
  export NCCL_IB_HCA=mlx5_1:1
  numactl --cpunodebind=0 --membind=0 $APP
  ;;
[2])
  export NCCL_IB_HCA=mlx5_2:1
  numactl --cpunodebind=1 --membind=1 $APP
  ;;
[3])
  export NCCL_IB_HCA=mlx5_3:1
  numactl --cpunodebind=1 --membind=1 $APP
  ;;
esac
