"""A job whose collectives all complete, then never exits (no destroy_process_group, a stuck
non-daemon thread): the exit hang. Run under a launcher; gloo on CPU."""
import threading
import time

import torch
import torch.distributed as dist


def main() -> None:
    dist.init_process_group("gloo")
    t = torch.ones(8)
    for _ in range(5):
        dist.all_reduce(t)
    threading.Thread(target=time.sleep, args=(3600,), name="forgotten-worker").start()  # EXIT_HANG_LINE


if __name__ == "__main__":
    main()
