#!/usr/bin/env python3
"""hang.py: a DDP-free all-reduce loop of a few ranks that, on request, provokes a hang, for the
flight recorder's GPU check (start it through examples/gpu_flight.sh; torchrun, every rank its own
process on GPU 0 as its own emulated node: examples/ddp/one_gpu.py).

Each rank writes OUT/pid-r<RANK> (for the script's SIGUSR2) and OUT/step-r<RANK> (its last step),
and all-reduces a tensor every step. Once OUT/hang exists, rank --hang-rank stops calling
collectives (it sleeps until killed) while the others go on: their next all-reduce never
finishes, and the run ends only when the script kills it.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ddp"))
from one_gpu import share_gpu0  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--hang-rank", type=int, default=1)
    ap.add_argument("--mb", type=float, default=4.0, help="all-reduce size (MiB)")
    args = ap.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    dev = share_gpu0(local)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=torch.device("cuda", dev))
    rank = dist.get_rank()
    with open(os.path.join(args.out, "pid-r%d" % rank), "w") as f:
        f.write("%d\n" % os.getpid())
    x = torch.ones(int(args.mb * (1 << 20) / 4), device="cuda")
    step = 0
    while True:
        if rank == args.hang_rank and os.path.exists(os.path.join(args.out, "hang")):
            with open(os.path.join(args.out, "stopped-r%d" % rank), "w") as f:
                f.write("%d\n" % step)
            while True:          # stops calling collectives; only a kill ends it
                time.sleep(1)
        dist.all_reduce(x)
        torch.cuda.synchronize()
        step += 1
        with open(os.path.join(args.out, "step-r%d" % rank), "w") as f:
            f.write("%d\n" % step)
        time.sleep(0.01)


if __name__ == "__main__":
    main()
