#!/usr/bin/env python3
"""ddp_train.py: a small PyTorch DDP training loop for commlens to profile (start it through
examples/ddp/run.sh, i.e. torchrun --nproc-per-node 2). The Linear layers are big enough that
the backward pass of one layer overlaps the gradient all-reduce of the bucket after it; each
step is an NVTX range "step N" and ends with a synchronize, so steps do not overlap.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from one_gpu import share_gpu0


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=8192)
    ap.add_argument("--bucket-mb", type=int, default=25, help="DDP bucket_cap_mb")
    ap.add_argument("--straggler-rank", type=int, default=-1,
                    help="this rank sleeps --straggler-ms before each backward pass")
    ap.add_argument("--straggler-ms", type=float, default=0.0)
    ap.add_argument("--one-gpu", action="store_true",
                    help="every rank on GPU 0, each its own emulated node (NCCL_HOSTID), talking "
                         "over sockets: a multi-rank job on a machine with one GPU")
    return ap.parse_args()


def main():
    args = parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.one_gpu:
        local_rank = share_gpu0(local_rank)
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    torch.backends.cuda.matmul.allow_tf32 = True
    dist.init_process_group("nccl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()

    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(device)
    ddp = DDP(model, device_ids=[local_rank], bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    gen = torch.Generator(device=device).manual_seed(1234 + rank)
    x = torch.randn(args.batch, args.hidden, device=device, generator=gen)
    y = torch.randn(args.batch, args.hidden, device=device, generator=gen)
    nparams = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print("# ddp_train: %d ranks, %d layers of %d, batch %d, %.1f M parameters (%.0f MB of"
              " gradients per step)" % (world, args.layers, args.hidden, args.batch, nparams / 1e6,
                                        nparams * 4 / 2**20), flush=True)

    times = []
    for step in range(args.steps):
        t0 = time.perf_counter()
        torch.cuda.nvtx.range_push("step %d" % step)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        if rank == args.straggler_rank and args.straggler_ms > 0:
            time.sleep(args.straggler_ms / 1000.0)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        times.append((time.perf_counter() - t0) * 1000.0)
        if rank == 0 and (step % 10 == 9 or step == args.steps - 1):
            print("step %3d  loss %.5f  %.2f ms/step" % (step, loss.item(), times[-1]), flush=True)

    if times:
        tail = sorted(times[min(5, len(times) - 1):])  # skip warm-up steps
        print("# rank %d: median step %.2f ms over %d steps" % (rank, tail[len(tail) // 2], len(tail)),
              flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
