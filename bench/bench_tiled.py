"""Benchmark: tiled_attention against the direct scaled_dot_product_attention at n = 8192.

Shape: float32, n_q = n_k = 8192, d = 64, no batch. The direct computation holds the whole
(n, n) score matrix (256 MiB in float32); the tiled one holds one (block_q, block_k) tile.
Everything is measured in this one run and printed as ratios:

* peak extra memory during the call, from attnlib.timing.peak_memory (tracemalloc, which
  sees NumPy's allocations; RSS deltas are too noisy), target tiled / direct <= 5 %;
* time, median of interleaved repeats with tracemalloc off (attnlib.timing.compare_times),
  target tiled / direct <= 2x;
* max |tiled - direct|.

The tiled computation makes 2 · (n / block_q) · (n / block_k) short BLAS calls (128 at the
defaults) where the direct one makes 2 long ones. On a quiet machine tiled is the faster of the
two (its tile stays in cache); when other processes compete for the cores, every short
multi-threaded call can wait for a descheduled BLAS thread, and the median ratio rises. The
script therefore also prints the best time of each and the load average, so that a reader can
tell contention from a regression. Timing runs BLAS on one thread by default (--threads 1, through
threadpoolctl), which gives the steadiest comparison; --threads 0 leaves the BLAS pool as it is.

Usage: python bench/bench_tiled.py [--n N] [--d D] [--block-q BQ] [--block-k BK] [--repeats R] [--causal]
       [--threads T]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

import numpy as np

from attnlib.core import scaled_dot_product_attention
from attnlib.tiled import tiled_attention
from attnlib.timing import compare_times, peak_memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192, help="sequence length n_q = n_k (default 8192)")
    parser.add_argument("--d", type=int, default=64, help="d_k = d_v (default 64)")
    parser.add_argument("--block-q", type=int, default=1024, help="queries per block (default 1024)")
    parser.add_argument("--block-k", type=int, default=1024, help="keys per block (default 1024)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timing repeats (default 5)")
    parser.add_argument("--causal", action="store_true", help="is_causal=True for both")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads while timing (default 1; 0 leaves the BLAS pool as it is)")
    args = parser.parse_args()
    threads = args.threads if args.threads > 0 else None

    rng = np.random.default_rng(0)
    n, d = args.n, args.d
    Q, K, V = (rng.standard_normal((n, d), dtype=np.float32) for _ in range(3))
    candidates: dict[str, Callable[[], np.ndarray]] = {
        "direct": lambda: scaled_dot_product_attention(Q, K, V, is_causal=args.causal),
        "tiled": lambda: tiled_attention(
            Q, K, V, block_q=args.block_q, block_k=args.block_k, is_causal=args.causal
        ),
    }

    outputs = {name: fn() for name, fn in candidates.items()}
    max_diff = float(np.abs(outputs["tiled"] - outputs["direct"]).max())
    del outputs
    peak = {name: peak_memory(fn) for name, fn in candidates.items()}
    timing = compare_times(candidates, repeats=args.repeats, threads=threads)  # one warm-up each, interleaved
    times, med = timing.times, timing.medians

    mib = 2**20
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"n_q = n_k = {n}, d_k = d_v = {d}, float32, causal={args.causal}, "
        f"blocks {args.block_q} x {args.block_k}, {args.repeats} interleaved repeats, "
        f"BLAS threads: {threads if threads is not None else 'as the library set them'}"
    )
    print(f"  {os.cpu_count()} CPUs, 1-minute load average {load:.2f}")
    print(f"  (n, n) float32 scores alone: {n * n * 4 / mib:8.1f} MiB")
    for name in candidates:
        print(
            f"  {name:6s} peak extra memory {peak[name] / mib:8.1f} MiB   "
            f"median time {med[name] * 1e3:8.1f} ms   best {min(times[name]) * 1e3:8.1f} ms"
        )
    print(f"memory tiled / direct = {peak['tiled'] / peak['direct']:6.1%}  (target <= 5 %)")
    print(f"time   tiled / direct = {timing.ratio('tiled', 'direct'):6.2f}x  (target <= 2x; medians)")
    print(f"       best / best    = {min(times['tiled']) / min(times['direct']):6.2f}x")
    print(f"max |tiled - direct|  = {max_diff:.2e}")


if __name__ == "__main__":
    main()
