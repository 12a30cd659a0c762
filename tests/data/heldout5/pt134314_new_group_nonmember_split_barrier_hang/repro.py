# repro.py, started on both ranks by torchrun
import os
import torch
import torch.distributed as dist

local = int(os.environ["LOCAL_RANK"])
dist.init_process_group(backend="nccl", device_id=torch.device("cuda", local))
solo = dist.new_group([0])
dist.barrier()
print(f"rank {dist.get_rank()} passed the barrier")
