"""Benchmark: how the time of naive attention grows with n, and the exponent fitted to it.

Shape: float32, one head, d = 64, n = n_q = n_k from 256 to 4096 (powers of 2). For each n the
script times attnlib's scaled_dot_product_attention (median of --repeats calls after a warm-up,
through attnlib.timing.time_attention), fits t = c · n^p on log-log axes with a 95% interval
for p (attnlib.timing.fit_power_law), and compares the exact FLOPs of attention
(attnlib.counts.flop_counts, ≈ 4·n²·d) with those of the four d × d projections that produce
Q, K, V and the output in a layer (2·n·d·d each, 8·n·d² together), timed here with plain matmuls.
The n² term overtakes the n·d² term at n = 2·d (for a full layer of width d_model, at
n = 2·d_model), so over this range attention dominates and its exponent should approach 2.

BLAS runs on one thread (--threads 1, the default; attnlib's timing helpers limit the pool with
threadpoolctl while they measure): the exponent is a property of the algorithm, and on a shared
machine a multithreaded BLAS waits for descheduled threads, which turns sub-millisecond calls into
tens of milliseconds and flattens the curve. Pass --threads N to measure with N threads, or
--threads 0 to leave the BLAS pool as it is.

Usage: python bench/bench_scaling.py [--repeats N] [--d D] [--seed S] [--threads T]
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from attnlib.counts import flop_counts, projection_flops
from attnlib.timing import compare_times, fit_power_law, time_attention


def _median_time_projections(
    ns: list[int], d: int, repeats: int, rng: np.random.Generator, threads: int | None
) -> list[float]:
    """Median time per n of the four (n, d) @ (d, d) products of one head's projections (interleaved)."""
    X = [rng.standard_normal((n, d)).astype(np.float32) for n in ns]
    W = rng.standard_normal((4, d, d)).astype(np.float32)
    candidates = {str(n): (lambda x=x: [x @ w for w in W]) for n, x in zip(ns, X, strict=True)}  # 4 × (n, d)
    timing = compare_times(candidates, repeats=repeats, threads=threads)
    return [timing.medians[str(n)] for n in ns]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per n (default 7)")
    parser.add_argument("--d", type=int, default=64, help="d_k = d_v (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads while timing (default 1; 0 leaves the BLAS pool as it is)")
    args = parser.parse_args()
    threads = args.threads if args.threads > 0 else None

    d = args.d
    ns = [2**k for k in range(8, 13)]  # 256 … 4096
    rng = np.random.default_rng(args.seed)
    timing = time_attention(ns, d, rng, repeats=args.repeats, dtype=np.float32, threads=threads)
    proj = _median_time_projections(ns, d, args.repeats, rng, threads)

    print(f"attnlib.scaled_dot_product_attention, float32, d = {d}, one head, "
          f"median of {args.repeats} interleaved calls after a warm-up, "
          f"BLAS threads: {threads if threads is not None else 'as the library set them'}")
    load = os.getloadavg()[0]
    cpus = os.cpu_count() or 1
    busy = load > 0.5 * cpus
    print(f"load average {load:.2f} on {cpus} CPUs"
          + (": other processes compete for the CPUs; treat these times with care" if busy else ""))
    print(f"{'n':>6}  {'attention':>11}  {'GFLOP/s':>8}  {'projections':>11}  "
          f"{'attn FLOPs':>14}  {'proj FLOPs':>12}  {'FLOP ratio':>10}")
    for n, t_att, t_proj in zip(ns, timing.medians, proj, strict=True):
        att = flop_counts(n, n, d, d).flops
        prj = projection_flops(n, d, 1, 1, d)  # four (n, d) @ (d, d) products: 4·n·d·(2d − 1)
        print(f"{n:>6}  {t_att * 1e3:>8.3f} ms  {att / t_att / 1e9:>8.2f}  {t_proj * 1e3:>8.3f} ms  "
              f"{att:>14,}  {prj:>12,}  {att / prj:>9.1f}x")

    fit = timing.fit()
    upper = fit_power_law(ns[1:], timing.medians[1:])
    proj_fit = fit_power_law(ns, proj)
    print()
    print(f"attention, n = {ns[0]}…{ns[-1]} ({len(ns)} sizes):  {fit}")
    print(f"attention, n = {ns[1]}…{ns[-1]} ({len(ns) - 1} sizes):  {upper}")
    print(f"projections, n = {ns[0]}…{ns[-1]}:        {proj_fit}")
    print()
    print(f"Which term dominates: attention costs ≈ 4·n²·d FLOPs, the projections 8·n·d², so their ratio is "
          f"n/(2d) and the n² term wins for n > 2d = {2 * d}.")
    print(f"Over this whole range (n ≥ {ns[0]}) attention has ≥ {ns[0] // (2 * d)}x the projections' FLOPs; "
          f"measured, it takes {timing.medians[0] / proj[0]:.1f}x their time at n = {ns[0]} "
          f"and {timing.medians[-1] / proj[-1]:.1f}x at n = {ns[-1]}.")
    print("In a full layer (d_model = n_heads·d) the projections cost 8·n·d_model² against 4·n²·d_model "
          "for all heads' attention: the crossover moves to n = 2·d_model (1,536 for GPT-2 small).")
    rate = [flop_counts(n, n, d, d).flops / t for n, t in zip(ns, timing.medians, strict=True)]
    for name, f in (("all sizes", fit), (f"sizes from {ns[1]}", upper)):
        verdict = "contains" if f.contains(2.0) else "excludes"
        print(f"Exponent over {name}: {f.exponent:.3f}; its interval {verdict} 2, the exponent of the "
              "FLOP count.")
    print(f"Throughput goes from {rate[0] / 1e9:.1f} to {rate[-1] / 1e9:.1f} GFLOP/s across the range; "
          "a throughput that rises with n pulls the fitted exponent below 2, one that falls (cache misses) "
          "pushes it above. Few sizes make wide intervals: t_0.975 is 3.18 for 5 sizes, 4.30 for 4.")


if __name__ == "__main__":
    main()
