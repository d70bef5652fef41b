#!/usr/bin/env python3
"""train.py: a short DDP or FSDP training loop with a planted straggler, for recording the traces
that test the straggler verdict (start it through examples/gpu_verdict.sh; torchrun, every rank
its own process on GPU 0 as its own emulated node: examples/ddp/one_gpu.py).

What is planted (each flag may repeat):
  --late RANK:MS[:EVERY[:PHASE]]  RANK sleeps MS ms before the forward pass of every step whose
                                  number is PHASE modulo EVERY (default every step)
  --stall RANK:STEP:MS            RANK sleeps MS ms once, before step STEP
  --burst RANK:FIRST:LAST:MS      RANK sleeps MS ms before every step FIRST..LAST (inclusive)
  --gpu-slow RANK:N[:EVERY[:PHASE]]  RANK runs N extra 8192^3 bf16 matrix products on its own
                                  stream of work before its backward pass (late on the GPU, not
                                  on the host), on every step whose number is PHASE modulo EVERY
Not a straggler, on every rank alike:
  --profile-window FIRST:LAST     torch.profiler (CPU and CUDA activities) records steps
                                  FIRST..LAST-1 on every rank: a burst of host work at its start
                                  and end, and a second CUPTI client beside the plugin's
The GPU: ranks share GPU 0 as emulated nodes, or the GPU VERDICT_GPU names; with
VERDICT_SEPARATE_GPUS=1 each rank takes the GPU of its local rank.
Each rank writes OUT/truth-r<RANK>.json: per step, its Unix start, ready (the forward pass and any
planted sleep done, the backward pass and its collectives next) and end time (ns) and what was
planted on it that step, so the recorded lateness can be checked against what was done.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ddp"))
from one_gpu import share_gpu0  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("ddp", "fsdp"), default="ddp")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--bucket-mb", type=float, default=2.0, help="DDP bucket_cap_mb")
    ap.add_argument("--late", action="append", default=[])
    ap.add_argument("--stall", action="append", default=[])
    ap.add_argument("--burst", action="append", default=[])
    ap.add_argument("--gpu-slow", action="append", default=[])
    ap.add_argument("--profile-window", default="")
    ap.add_argument("--groups", action="store_true",
                    help="two more communicators, as jobs with tensor or pipeline groups have: a "
                         "metrics group of every rank (the loss all_reduced each step) and groups "
                         "of rank pairs (a small all_reduce each step)")
    ap.add_argument("--build-s", type=float, default=0.0,
                    help="seconds of host work between NCCL's init and the model (a slow model build)")
    ap.add_argument("--out", default=".")
    return ap.parse_args()


def planted(args, rank, step):
    """(host sleep ms, extra GPU products) planted on `rank` at `step`."""
    sleep_ms, products = 0.0, 0
    for spec in args.late:
        f = spec.split(":")
        r, ms = int(f[0]), float(f[1])
        every = int(f[2]) if len(f) > 2 else 1
        phase = int(f[3]) if len(f) > 3 else 0
        if r == rank and step % every == phase:
            sleep_ms += ms
    for spec in args.stall:
        r, s, ms = spec.split(":")
        if int(r) == rank and int(s) == step:
            sleep_ms += float(ms)
    for spec in args.burst:
        r, first, last, ms = spec.split(":")
        if int(r) == rank and int(first) <= step <= int(last):
            sleep_ms += float(ms)
    for spec in args.gpu_slow:
        f = spec.split(":")
        every = int(f[2]) if len(f) > 2 else 1
        phase = int(f[3]) if len(f) > 3 else 0
        if int(f[0]) == rank and step % every == phase:
            products += int(f[1])
    return sleep_ms, products


def build(args, device):
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(device)
    if args.mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model, device_ids=[device.index], bucket_cap_mb=args.bucket_mb)
    from torch.distributed.fsdp import fully_shard
    for m in model:
        if isinstance(m, torch.nn.Linear):
            fully_shard(m)
    fully_shard(model)
    return model


def main():
    args = parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if os.environ.get("VERDICT_SEPARATE_GPUS") != "1":   # else one GPU per rank, one host, NVLink
        share_gpu0(local_rank)
        local_rank = int(os.environ.get("VERDICT_GPU", "0"))
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    time.sleep(args.build_s)
    model = build(args, device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    gen = torch.Generator(device=device).manual_seed(1234 + rank)
    x = torch.randn(args.batch, args.hidden, device=device, generator=gen)
    y = torch.randn(args.batch, args.hidden, device=device, generator=gen)
    metrics = pair = None
    if args.groups:   # every rank calls new_group for every group, as torch requires
        metrics = dist.new_group(list(range(world)))
        pairs = [dist.new_group([r, r + 1]) for r in range(0, world - 1, 2)]
        pair = pairs[rank // 2] if rank // 2 < len(pairs) else None
        side = torch.zeros(256, device=device)
    heavy = None
    if any(int(s.split(":")[0]) == rank for s in args.gpu_slow):
        heavy = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16, generator=gen)

    prof_first, prof_last = (int(v) for v in args.profile_window.split(":")) if args.profile_window else (-1, -1)
    prof = None
    steps = []
    for step in range(args.steps):
        sleep_ms, products = planted(args, rank, step)
        if step == prof_first:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                      torch.profiler.ProfilerActivity.CUDA])
            prof.__enter__()
        elif step == prof_last and prof is not None:
            prof.__exit__(None, None, None)
            prof = None
        t0 = time.time_ns()
        torch.cuda.nvtx.range_push("step %d" % step)
        if sleep_ms > 0:
            time.sleep(sleep_ms / 1000.0)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        for _ in range(products):   # queued ahead of the backward pass's collectives
            heavy = torch.mm(heavy, heavy).mul_(1.0 / 90.5)   # keeps its scale
        ready = time.time_ns()
        loss.backward()
        opt.step()
        if metrics is not None:
            dist.all_reduce(loss.detach(), group=metrics)
            if pair is not None:
                dist.all_reduce(side, group=pair)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        steps.append({"step": step, "start_ns": t0, "end_ns": time.time_ns(), "sleep_ms": sleep_ms,
                      "gpu_products": products, "ready_ns": ready})
    if prof is not None:
        prof.__exit__(None, None, None)
    dist.barrier()
    dist.destroy_process_group()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "truth-r%d.json" % rank), "w") as f:
        json.dump({"rank": rank, "world": world, "mode": args.mode, "steps": steps}, f)
    durs = sorted((s["end_ns"] - s["start_ns"]) / 1e6 for s in steps[5:])
    print("# rank %d: %d steps, median %.2f ms" % (rank, len(steps), durs[len(durs) // 2] if durs else 0),
          flush=True)


if __name__ == "__main__":
    main()
