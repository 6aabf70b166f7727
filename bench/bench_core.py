"""Benchmark: scaled_dot_product_attention against its two matmuls and PyTorch's CPU SDPA.

Shape: float32, batch*heads = 16, n = 1024, d = 64. Everything is measured in this one run
(interleaved repeats, medians), and the script prints ratios, because absolute times on a
shared machine mean little. Targets: <= 1.5x the two matmuls alone, and faster than torch's
CPU SDPA when torch is installed.

Usage: python bench/bench_core.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from attnlib import scaled_dot_product_attention

try:
    import torch
except ImportError:  # torch is optional
    torch = None


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    B, n, d = 16, 1024, 64
    Q, K, V = (rng.standard_normal((B, n, d), dtype=np.float32) for _ in range(3))
    # The matmul floor: the same two products per (batch, head) slice, nothing else.
    P = np.empty((n, n), dtype=np.float32)

    def two_matmuls() -> None:
        for b in range(B):
            np.matmul(Q[b], K[b].T, out=P)  # (n, n)
            P @ V[b]  # (n, d)

    candidates: dict[str, Callable[[], object]] = {
        "two matmuls": two_matmuls,
        "attnlib": lambda: scaled_dot_product_attention(Q, K, V),
    }
    if torch is not None:
        tQ, tK, tV = (torch.from_numpy(a) for a in (Q, K, V))
        candidates["torch SDPA"] = lambda: torch.nn.functional.scaled_dot_product_attention(tQ, tK, tV)

    for fn in candidates.values():  # warm up caches and thread pools
        fn()
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(args.repeats):  # interleaved, so drift hits every candidate alike
        for name, fn in candidates.items():
            times[name].append(_time(fn))
    med = {name: statistics.median(ts) for name, ts in times.items()}

    print(f"shape (B*H, n, d) = ({B}, {n}, {d}), float32, {args.repeats} interleaved repeats")
    if torch is not None:
        print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    for name, m in med.items():
        print(f"  {name:12s} median {m * 1e3:8.2f} ms")
    print(f"attnlib / two matmuls = {med['attnlib'] / med['two matmuls']:.2f}x  (target <= 1.5x)")
    if torch is not None:
        print(f"attnlib / torch SDPA  = {med['attnlib'] / med['torch SDPA']:.2f}x  (target < 1x)")
    else:
        print("torch not installed: pip install torch==2.13.0 for the comparison with torch's CPU SDPA")


if __name__ == "__main__":
    main()
