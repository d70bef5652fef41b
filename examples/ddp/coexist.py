#!/usr/bin/env python3
"""coexist.py: commlens beside torch.profiler, and CUDA-graph-captured collectives (start it
through examples/ddp/run_coexist.sh, i.e. torchrun --nproc-per-node 2).

A loop of matmuls plus an all_reduce of their result, in three phases of --steps steps each:
  1. plain (commlens alone records CUPTI, when COMMLENS_CUPTI=on);
  2. inside torch.profiler.profile(CPU+CUDA): Kineto's trace goes to OUT/kineto-r<rank>.json and
     a line "KINETO {...}" counts its GPU kernels, NCCL's among them (commlens must not make it
     lose them);
  3. plain again (commlens resumes once the profiler lets CUPTI go).
Before and inside each phase a line "SLOT {...}" says whether CUPTI's subscriber slot was free
(cuptiSubscribe through ctypes on the process's libcupti), i.e. whether the profiler holds it.
With --graph, a fourth phase captures one step (matmul + all_reduce) with torch.cuda.graph and
replays it --steps times. Every step is an NVTX range "step N". Prints "DONE" at the end.
"""
import argparse
import ctypes
import json
import os
import time

import torch
import torch.distributed as dist

from one_gpu import share_gpu0


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--n", type=int, default=4096, help="matrix size")
    ap.add_argument("--mb", type=int, default=32, help="all_reduce size in MB")
    ap.add_argument("--out", default=".")
    ap.add_argument("--no-profiler", action="store_true", help="phase 2 runs without torch.profiler")
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--one-gpu", action="store_true",
                    help="every rank on GPU 0 as its own emulated node (examples/ddp/one_gpu.py)")
    return ap.parse_args()


def probe_slot(tag, rank):
    """cuptiSubscribe + cuptiUnsubscribe on the libcupti this process loaded: 0 = slot free."""
    path = next((l.split()[-1] for l in open("/proc/self/maps") if "libcupti.so" in l), None)
    if not path:
        rc = "no libcupti loaded"
    else:
        lib = ctypes.CDLL(path)
        cb_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p)
        cb = cb_t(lambda *a: None)
        h = ctypes.c_void_p()
        rc = lib.cuptiSubscribe(ctypes.byref(h), cb, None)
        if rc == 0:
            lib.cuptiUnsubscribe(h)
    print("SLOT " + json.dumps({"rank": rank, "when": tag, "rc": rc}), flush=True)


def main():
    args = parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.one_gpu:
        local_rank = share_gpu0(local_rank)
    dev = torch.device("cuda", local_rank)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    rank = dist.get_rank()
    a = torch.randn(args.n, args.n, device=dev)
    b = torch.randn(args.n, args.n, device=dev)
    buf = torch.ones(args.mb * 2**20 // 4, device=dev)
    side = torch.cuda.Stream(device=dev)
    step_id = [0]

    def step():
        # the all_reduce of the previous buffer overlaps this step's matmuls (a side stream)
        torch.cuda.nvtx.range_push("step %d" % step_id[0])
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            dist.all_reduce(buf)
        c = a
        for _ in range(4):
            c = torch.mm(c, b) * 1e-3
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        step_id[0] += 1
        return c

    def phase(name, n):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        if rank == 0:
            print("# %s: %d steps, %.2f ms/step" % (name, n, (time.perf_counter() - t0) * 1e3 / n), flush=True)

    phase("plain", args.steps)
    probe_slot("before profiler", rank)
    if args.no_profiler:
        phase("second", args.steps)
    else:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            phase("torch.profiler", args.steps // 2)
            probe_slot("inside profiler", rank)
            phase("torch.profiler", args.steps - args.steps // 2)
        path = os.path.join(args.out, "kineto-r%d.json" % rank)
        prof.export_chrome_trace(path)
        with open(path) as f:
            evs = json.load(f).get("traceEvents", [])
        kern = [e for e in evs if e.get("cat") == "kernel"]
        nccl = [e for e in kern if "nccl" in e.get("name", "").lower()]
        print("KINETO " + json.dumps({"rank": rank, "kernels": len(kern), "nccl_kernels": len(nccl),
                                      "steps": args.steps}), flush=True)
    probe_slot("after profiler", rank)
    phase("after", args.steps)

    if args.graph:
        # torch.cuda.graph captures on a side stream of its own; the all_reduce is captured into
        # the graph (NCCL records its launch once) and runs at every replay
        g = torch.cuda.CUDAGraph()
        static = torch.ones_like(buf)
        torch.cuda.synchronize()
        dist.barrier()
        with torch.cuda.graph(g):
            c = torch.mm(a, b)
            dist.all_reduce(static)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(args.steps):
            torch.cuda.nvtx.range_push("step %d" % step_id[0])
            g.replay()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            step_id[0] += 1
        if rank == 0:
            print("# graph: %d replays, %.2f ms/replay" % (args.steps, (time.perf_counter() - t0) * 1e3 / args.steps),
                  flush=True)
        del g, c
        torch.cuda.synchronize()
    dist.barrier()
    dist.destroy_process_group()
    print("DONE rank %d" % rank, flush=True)


if __name__ == "__main__":
    main()
