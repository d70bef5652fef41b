#!/usr/bin/env python3
"""launch_step.py: a launch-bound PyTorch training step, for bench/launch_bound.sh.

A 12-layer transformer encoder (d=256, 4 heads) trained with AdamW(foreach=False): about 1,900
small kernels per step, so the step's time is mostly kernel launches, and whatever a profiler
adds per launch shows. One rank by default (the NCCL communicator of one rank makes NCCL load
the profiler plugin, but it gives a 1-rank communicator no collective events); --ranks-on-gpu0
under torchrun makes every rank its own emulated node on GPU 0 (examples/ddp/one_gpu.py) and adds
one small all_reduce per step. Modes:
  --profile          torch.profiler (CPU + CUDA) over every timed step (its cost per step);
  --window A:B       torch.profiler over steps A..B-1 only, mid-job; prints KINETO {...} (its
                     kernel count) and WINDOW {...} (its bounds, wall clock ns) for the driver
                     to split commlens's collectives into before / during / after.
  --seconds S        time steps for S seconds instead of --steps (bench/sampled_cost.sh: a whole
                     number of commlens's CUPTI sampling periods in one process).
Prints one line "RESULT {json}" per rank with each timed step's (or block's) milliseconds, and
when each began ("t_ms": CLOCK_MONOTONIC ms since just before the process group was made; the
plugin starts its first sampling window between 0 and "init_ms").
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30, help="timed steps")
    ap.add_argument("--seconds", type=float, default=0, help="time steps for this long instead of --steps")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--window", default="", help="A:B, timed steps profiled mid-job")
    ap.add_argument("--ranks-on-gpu0", action="store_true")
    ap.add_argument("--sync-every", type=int, default=1,
                    help="wait for the GPU every K steps (loss.item() then) and report each block's "
                         "time per step: a per-step wait can round each step up to the host's wake-up "
                         "quantum (seen on the lent VMs: steps of 34.6, 41.5, 48.4 ms)")
    ap.add_argument("--out", default=".")
    return ap.parse_args()


def kineto_kernels(prof, path):
    """Kineto's GPU kernels (all, NCCL's) from its own Chrome trace."""
    prof.export_chrome_trace(path)
    with open(path) as f:
        evs = json.load(f).get("traceEvents", [])
    k = [e for e in evs if e.get("cat") == "kernel"]
    return len(k), sum(1 for e in k if "nccl" in e.get("name", "").lower())


def main():
    args = parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if args.ranks_on_gpu0:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "ddp"))
        from one_gpu import share_gpu0
        local = share_gpu0(local)
    else:
        os.environ.setdefault("RANK", "0")
        os.environ.setdefault("WORLD_SIZE", "1")
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    t_init = time.monotonic_ns()
    dist.init_process_group("nccl", device_id=dev)   # the plugin loads with this communicator
    rank, world = dist.get_rank(), dist.get_world_size()
    dist.all_reduce(torch.zeros(1, device=dev))      # the communicator made now, whatever the version
    init_ms = (time.monotonic_ns() - t_init) / 1e6
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(args.d, 4, 4 * args.d, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False, fused=False)
    x = torch.randn(args.batch, args.seq, args.d, device=dev)
    grad_sum = torch.zeros(1024, device=dev)
    win = tuple(int(v) for v in args.window.split(":")) if args.window else None

    def step(wait=True):
        opt.zero_grad(set_to_none=True)
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        if world > 1:
            dist.all_reduce(grad_sum)   # one small collective per step
        if wait:
            loss.item()                 # the loop waits for its loss, as training loops do

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    ms, t_ms, prof, bounds = [], [], None, {}
    if args.seconds > 0:
        if win:
            sys.exit("launch_step: --seconds and --window do not go together")
        args.steps = 1 << 40
        t_stop = time.monotonic_ns() + int(args.seconds * 1e9)
    if args.profile:
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    for i in range(args.steps):
        if args.seconds > 0 and i % max(1, args.sync_every) == 0 and time.monotonic_ns() >= t_stop:
            break
        if win and i == win[0]:
            bounds["start_ns"] = time.time_ns()
            prof = torch.profiler.profile(activities=acts)
            prof.__enter__()
        k = max(1, args.sync_every)
        if k > 1 and not win:
            if i % k:
                continue
            n = min(k, args.steps - i)
            t_ms.append(round((time.monotonic_ns() - t_init) / 1e6, 3))
            t0 = time.perf_counter()
            for j in range(n):
                step(wait=j == n - 1)
            ms.append((time.perf_counter() - t0) * 1e3 / n)
            continue
        t_ms.append(round((time.monotonic_ns() - t_init) / 1e6, 3))
        t0 = time.perf_counter()
        step()
        ms.append((time.perf_counter() - t0) * 1e3)
        if win and i == win[1] - 1:
            prof.__exit__(None, None, None)
            bounds["end_ns"] = time.time_ns()
            n, nn = kineto_kernels(prof, os.path.join(args.out, "kineto-r%d.json" % rank))
            print("KINETO " + json.dumps({"rank": rank, "kernels": n, "nccl_kernels": nn,
                                          "steps": win[1] - win[0]}), flush=True)
            prof = None
    if args.profile:
        prof.__exit__(None, None, None)
    if bounds:
        print("WINDOW " + json.dumps(dict(bounds, rank=rank, teardown=os.environ.get("TEARDOWN_CUPTI", ""))),
              flush=True)
    s = sorted(ms)
    print("RESULT " + json.dumps({"rank": rank, "nranks": world, "median_ms": s[len(s) // 2],
                                  "end_ns": time.time_ns(), "step_ms": [round(v, 4) for v in ms],
                                  "sync_every": max(1, args.sync_every), "init_ms": round(init_ms, 3),
                                  "t_ms": t_ms}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
