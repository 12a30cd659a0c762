# torch_dist_unit_tests.py
import torch
import torch.distributed as dist

dist.init_process_group(backend="nccl")
pg = dist.group.WORLD

if pg.rank() == 0:
    a = torch.arange(4, dtype=torch.float32, device="cuda:0")
    b = torch.tensor([0, 1, 2, 3], dtype=torch.int32, device="cuda:0")
    c = torch.tensor([0, 1, 2, 3], dtype=torch.int64, device="cuda:0")
    # d = torch.tensor([0, 1, 2, 3], dtype=torch.float16, device="cuda:0")
else:
    a = torch.empty(4, device="cuda:1")
    b = torch.empty(4, device="cuda:1")
    c = torch.empty(4, device="cuda:1")
    # d = torch.empty(4, device="cuda:1")

dist.broadcast(a, src=0, group=pg)
dist.broadcast(b, src=0, group=pg)
dist.broadcast(c, src=0, group=pg)
# dist.broadcast(d, src=0, group=pg)

if pg.rank() == 1:
    for t in (a, b, c):  # add d when the float16 case is enabled
        print(f"rank: {pg.rank()}, {t}")
