#!/usr/bin/env python3
"""allreduce_loop.py: a latency-bound loop of 8-byte all_reduces, for bench/mask_sampling.sh.

One rank of a PyTorch job (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment, as
torchrun sets them): a 2-element float32 tensor all-reduced ITERS times per block, BLOCKS
blocks, the GPU waited for at each block's end. With --shared-gpu every rank takes GPU 0 as its
own emulated node (examples/ddp/one_gpu.py: sockets), else rank r takes GPU r. Rank 0 prints
"RESULT {json}": each block's microseconds per all_reduce (its mean), each block's median
iteration (the clock read once an iteration: a block's mean carries the host's hiccups, a
preempted thread or a collected garbage, which its median does not), and the run's whole time.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--iters", type=int, default=5000)
    ap.add_argument("--warmup", type=int, default=2000)
    ap.add_argument("--warmup-s", type=float, default=0.0,
                    help="warm up for at least this many seconds too (past commlens's first CUPTI window)")
    ap.add_argument("--shared-gpu", action="store_true")
    args = ap.parse_args()
    rank = int(os.environ["RANK"])
    dev = rank
    if args.shared_gpu:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "ddp"))
        import one_gpu
        dev = one_gpu.share_gpu0(rank)
    torch.cuda.set_device(dev)
    t_start = time.perf_counter()
    dist.init_process_group("nccl", device_id=torch.device("cuda", dev))
    x = torch.ones(2, dtype=torch.float32, device="cuda")
    t_warm = time.perf_counter()
    n = 0
    more = torch.ones(1, dtype=torch.float32, device="cuda")
    while True:  # every rank runs as many as the one that wants most (the same collectives on all)
        for _ in range(500):
            dist.all_reduce(x)
        n += 500
        more.fill_(1.0 if n < args.warmup or time.perf_counter() - t_warm < args.warmup_s else 0.0)
        dist.all_reduce(more, op=dist.ReduceOp.MAX)
        if more.item() == 0.0:
            break
    torch.cuda.synchronize()
    blocks, medians = [], []
    pc = time.perf_counter_ns
    ts = [0] * (args.iters + 1)
    for _ in range(args.blocks):
        t0 = time.perf_counter()
        ts[0] = pc()
        for i in range(1, args.iters + 1):
            dist.all_reduce(x)
            ts[i] = pc()
        torch.cuda.synchronize()
        blocks.append((time.perf_counter() - t0) * 1e6 / args.iters)
        medians.append(statistics.median(ts[i] - ts[i - 1] for i in range(1, args.iters + 1)) / 1e3)
    dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps({"us": blocks, "med_us": medians, "iters": args.iters, "gpu": dev, "shared_gpu": args.shared_gpu,
                                      "run_s": time.perf_counter() - t_start}), flush=True)


if __name__ == "__main__":
    main()
