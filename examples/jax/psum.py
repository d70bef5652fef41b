#!/usr/bin/env python3
"""psum.py: a small JAX job for commlens in which one process drives every local GPU, as JAX does
on a host (N devices are N ranks of NCCL communicators). Two variants, a fixed number of steps each:
  pmap  jax.pmap of jax.lax.psum, one all-reduce per size and step;
  jit   jax.jit over a Mesh with NamedSharding: a row-sharded matmul, then a sum over the sharded
        rows, which XLA turns into an all-reduce.
--delay-device D --delay-ms M makes device D slow: extra matmuls on its shard alone, ahead of the
collective, so its collective arrives about M ms late and the other devices wait for it.
Prints what it ran, the median step time per variant and size, and checks the sums.

    examples/jax/psum.py [--steps 20] [--sizes 4K,1M,16M] [--variant both|pmap|jit]
                         [--delay-device D --delay-ms M]
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

try:
    shard_map = jax.shard_map
except AttributeError:  # jax before 0.6
    from jax.experimental.shard_map import shard_map

SLOW_DIM = 1024  # the straggler's matmuls are SLOW_DIM x SLOW_DIM
ROWS, INNER = 16, 16  # jit variant: rows of x per device, inner dimension of the matmul


def parse_bytes(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper().rstrip("B")
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def slow_work(x, reps, w, zero):
    """x, once `reps` chained matmuls have run. zero is a runtime 0.0, so XLA keeps them; the
    chain starts from x, so it varies per device as its trip count does (shard_map checks that)."""
    m = jax.lax.fori_loop(0, reps, lambda _, a: jnp.tanh(a @ w), w + zero * x.reshape(-1)[0])
    return x + zero * m[0, 0]


def calibrate(dev, w, delay_ms):
    """How many matmuls of slow_work take delay_ms on dev."""
    f = jax.jit(lambda reps, m: jax.lax.fori_loop(0, reps, lambda _, a: jnp.tanh(a @ m), m))
    w = jax.device_put(w, dev)
    f(np.int32(1), w).block_until_ready()
    k = 50
    t0 = time.perf_counter()
    f(np.int32(k), w).block_until_ready()
    per_ms = (time.perf_counter() - t0) * 1e3 / k
    return max(1, round(delay_ms / per_ms)), per_ms


def timed(step, args, steps):
    """Median ms per step (after one call that compiles), and the last output."""
    out = step(*args)
    out.block_until_ready()
    ms = []
    for _ in range(steps):
        t0 = time.perf_counter()
        out = step(*args)
        out.block_until_ready()
        ms.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ms)), out


def show(what, nbytes, ms, steps, good):
    print(f"{what:<15}{nbytes:>10} B: median {ms:8.3f} ms/step over {steps} steps, sum "
          + ("ok" if good else "WRONG"))
    return good


def run_pmap(devs, sizes, steps, reps, w):
    n = len(devs)
    step = jax.pmap(lambda x, r, w, z: jax.lax.psum(slow_work(x, r, w, z), "i"), axis_name="i",
                    devices=devs)
    to_devs = jax.pmap(lambda v: v, devices=devs)  # inputs stay on their devices between steps
    per_dev = (to_devs(reps), to_devs(np.broadcast_to(w, (n,) + w.shape)), to_devs(np.zeros(n, np.float32)))
    ok = True
    for nbytes in sizes:
        x = to_devs(np.ones((n, nbytes // 4), np.float32) * np.arange(1, n + 1, dtype=np.float32)[:, None])
        ms, out = timed(step, (x,) + per_dev, steps)
        ok &= show("pmap psum", nbytes, ms, steps, bool(np.all(np.asarray(out[:, :8]) == n * (n + 1) / 2)))
    return ok


def run_jit(devs, sizes, steps, reps, w):
    n = len(devs)
    mesh = Mesh(np.array(devs), ("d",))
    put = lambda a, spec: jax.device_put(a, NamedSharding(mesh, spec))
    delay = shard_map(lambda x, r, w, z: slow_work(x, r[0], w, z[0]), mesh=mesh,
                      in_specs=(P("d", None), P("d"), P(), P("d")), out_specs=P("d", None))
    # The rows of x are sharded: the matmul is local, the sum over rows needs every device's part
    # (the relu keeps XLA from summing x before the matmul, which would shrink the all-reduce).
    step = jax.jit(lambda x, b, r, w, z: jnp.sum(jnp.maximum(delay(x, r, w, z) @ b, 0.0), axis=0))
    x = put(np.ones((n * ROWS, INNER), np.float32), P("d", None))
    per_dev = (put(reps, P("d")), put(w, P()), put(np.zeros(n, np.float32), P("d")))
    ok = True
    for nbytes in sizes:
        b = put(np.full((INNER, nbytes // 4), 1.0 / INNER, np.float32), P())
        ms, out = timed(step, (x, b) + per_dev, steps)
        ok &= show("jit matmul+sum", nbytes, ms, steps, bool(np.allclose(np.asarray(out[:8]), n * ROWS)))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--sizes", default="4K,1M,16M", help="all-reduce sizes in bytes (K, M, G)")
    ap.add_argument("--variant", choices=("both", "pmap", "jit"), default="both")
    ap.add_argument("--delay-device", type=int, default=-1)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    a = ap.parse_args()
    devs = jax.local_devices()
    n = len(devs)
    sizes = [parse_bytes(s) for s in a.sizes.split(",")]
    print(f"psum.py: jax {jax.__version__}, one process, {n} devices: {', '.join(str(d) for d in devs)}")
    w = np.eye(SLOW_DIM, dtype=np.float32) * 0.5
    reps = np.zeros(n, np.int32)
    if a.delay_device >= 0 and a.delay_ms > 0:
        if a.delay_device >= n:
            ap.error(f"--delay-device {a.delay_device}: only {n} devices")
        reps[a.delay_device], per_ms = calibrate(devs[a.delay_device], w, a.delay_ms)
        print(f"straggler: device {a.delay_device} runs {reps[a.delay_device]} extra {SLOW_DIM}x{SLOW_DIM} "
              f"matmuls ({per_ms:.3f} ms each) before each collective, about {a.delay_ms} ms")
    ok = True
    if a.variant in ("both", "pmap"):
        ok &= run_pmap(devs, sizes, a.steps, reps, w)
    if a.variant in ("both", "jit"):
        ok &= run_jit(devs, sizes, a.steps, reps, w)
    print("psum.py: correctness " + ("OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
