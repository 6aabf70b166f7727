"""The learning-rate sweep of the training experiment, and the accuracies it is judged by.

:func:`learning_rate_sweep` repeats :func:`~attnlib.training.layer.train_retrieval` over ``d_k``, scale
rules, learning rates and seeds; its :class:`SweepResult` chooses each seed's best rate on a validation
batch, and :class:`BestRates` reports the chosen runs on a separate test batch. :func:`median_rate`,
:func:`identity_form_accuracy` and :func:`nearest_key_accuracy` are what it is judged by.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from attnlib import _validation as _v
from attnlib.core import SCALE_RULES
from attnlib.training.layer import _TEST, TrainingRun, _check_train_kwargs, _held_out_batch, _train_runs
from attnlib.training.task import RetrievalBatch, _check_n_keys, _check_seed

__all__ = [
    "median_rate",
    "identity_form_accuracy",
    "nearest_key_accuracy",
    "BestRates",
    "SweepResult",
    "learning_rate_sweep",
]


def median_rate(rates: Iterable[float]) -> float:
    """The median of learning rates, taken on the logarithmic scale of a grid.

    For an odd number of rates this is the middle one, so the median of rates
    drawn from a grid is a grid value. For an even number it is the geometric
    mean of the two middle ones (the midpoint on a log axis), not their
    arithmetic mean.

    Parameters
    ----------
    rates : iterable of float
        Positive rates, at least one.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        No rates, or a rate that is not positive and finite.

    Examples
    --------
    >>> median_rate([0.1, 3.0, 0.3, 0.3, 10.0])
    0.3
    >>> print(f"{median_rate([0.1, 1.0]):.4f}")
    0.3162
    """
    values = sorted(float(r) for r in rates)
    if not values:
        raise ValueError("rates must not be empty")
    if not all(math.isfinite(r) and r > 0 for r in values):
        raise ValueError(f"rates must be positive and finite; got {values}")
    n = len(values)
    if n % 2:
        return values[n // 2]
    return math.sqrt(values[n // 2 - 1] * values[n // 2])


def identity_form_accuracy(
    d_k: int, seed: int, *, n_keys: int = 16, d_model: int | None = None, d_v: int = 16, eval_batch: int = 256
) -> float:
    """Test accuracy of the layer whose ``W_Q W_Kᵀ`` is ``c · I``: the form the retrieval task is built for.

    With ``W_Q W_Kᵀ = c · I`` (``c > 0``) the layer scores each key by
    ``c · x_q · x_j`` and puts its largest weight on the key whose embedding
    has the largest dot product with the query's, whatever ``c`` and the scale
    rule are. This returns the fraction of the queries of ``seed``'s *test*
    batch (the batch on which :func:`~attnlib.training.layer.train_retrieval` reports, drawn the same
    way) for which that key is the target: a reference point for trained
    layers. At small ``d_k`` it is below 1, because a distractor's dot product
    with the query, of size ``≈ √d_k``, then often exceeds the target's,
    ``≈ d_k``.

    Parameters
    ----------
    d_k : int
        Width of queries and keys (the embedding width when ``d_model`` is ``None``).
    seed : int
        The seed of the runs it is compared with.
    n_keys, d_model, d_v, eval_batch
        As in :func:`~attnlib.training.layer.train_retrieval`.

    Returns
    -------
    float
        A multiple of ``1 / eval_batch``.

    Raises
    ------
    TypeError, ValueError
        Bad sizes or seed, as in :func:`~attnlib.training.layer.train_retrieval`.

    Examples
    --------
    >>> identity_form_accuracy(128, 0)
    1.0
    >>> bool(identity_form_accuracy(2, 0) < 0.5)
    True
    """
    b = _seed_test_batch(d_k, seed, n_keys, d_model, d_v, eval_batch)
    S = np.einsum("bd,bnd->bn", b.X_q[:, 0, :], b.X_k)  # (eval_batch, n_keys): x_q · x_j
    return float(np.mean(S.argmax(axis=-1) == b.target))


def nearest_key_accuracy(
    d_k: int, seed: int, *, n_keys: int = 16, d_model: int | None = None, d_v: int = 16, eval_batch: int = 256
) -> float:
    """Test accuracy of choosing the key nearest to the query: how hard the retrieval task is in itself.

    Picks, for each query of ``seed``'s *test* batch (as
    :func:`identity_form_accuracy`), the key ``j`` with the smallest distance
    ``‖x_q − x_j‖`` and returns the fraction of queries for which it is the
    target. Since ``‖x_q − x_j‖² = ‖x_q‖² − 2 x_q · x_j + ‖x_j‖²``, this ranks
    the keys by ``x_q · x_j − ‖x_j‖² / 2``: the dot product of
    :func:`identity_form_accuracy` minus half the key's squared norm. No
    attention score ``x_q W_Q W_Kᵀ x_jᵀ`` contains that term, so where this
    accuracy is high and the identity form's is not, the task is hard only
    for a dot-product score. With the default noise 0.1 the target is at
    distance ``≈ 0.1 √d_model`` and a distractor at ``≈ √(2 d_model)``, so
    this is close to 1 at all but the smallest widths.

    Parameters
    ----------
    d_k : int
        Width of queries and keys (the embedding width when ``d_model`` is ``None``).
    seed : int
        The seed of the runs it is compared with.
    n_keys, d_model, d_v, eval_batch
        As in :func:`~attnlib.training.layer.train_retrieval`.

    Returns
    -------
    float
        A multiple of ``1 / eval_batch``.

    Raises
    ------
    TypeError, ValueError
        Bad sizes or seed, as in :func:`~attnlib.training.layer.train_retrieval`.

    Examples
    --------
    >>> nearest_key_accuracy(8, 0)
    1.0
    >>> bool(identity_form_accuracy(8, 0) < 0.9)
    True
    """
    b = _seed_test_batch(d_k, seed, n_keys, d_model, d_v, eval_batch)
    dist2 = np.sum((b.X_k - b.X_q) ** 2, axis=-1)  # (eval_batch, n_keys): ‖x_q − x_j‖²
    return float(np.mean(dist2.argmin(axis=-1) == b.target))


def _seed_test_batch(
    d_k: Any, seed: Any, n_keys: Any, d_model: Any, d_v: Any, eval_batch: Any
) -> RetrievalBatch:
    """The test batch of ``seed``'s runs, the arguments checked as
    :func:`~attnlib.training.layer.train_retrieval` checks them."""
    d_k = _v.check_positive_int(d_k, "d_k")
    seed = _check_seed(seed)
    n_keys = _check_n_keys(n_keys)
    d_model = d_k if d_model is None else _v.check_positive_int(d_model, "d_model")
    d_v = _v.check_positive_int(d_v, "d_v")
    eval_batch = _v.check_positive_int(eval_batch, "eval_batch")
    return _held_out_batch(np.random.SeedSequence(seed).spawn(4), _TEST, eval_batch, n_keys, d_model, d_v)


@dataclass(frozen=True)
class BestRates:
    """The best learning rate of one setting, seed by seed, and how the chosen runs do.

    For each seed the best rate is the one whose run has the lowest loss on
    the validation batch; the chosen run is then measured on the test batch.

    Attributes
    ----------
    d_k : int
    scale_rule : str
    seeds : tuple of int
    lrs : tuple of float
        The best rate of each seed, in the order of ``seeds``.
    test_losses, test_accuracies : tuple of float
        Test-batch loss and accuracy of each seed's chosen run.
    runner_up_lrs : tuple of float or None
        The rate of each seed's second-lowest validation loss (``None`` when
        the seed has only one run that did not diverge).
    leads : tuple of float
        Each seed's runner-up validation loss divided by its winner's: by how
        much the choice is won (``≥ 1``; ``inf`` without a runner-up or when
        only the winner's loss is 0). Where both runs are insensitive to the
        last bits (:meth:`~attnlib.training.sweep.SweepResult.relative_change` of a rerun tiny), any
        lead above 1 by more than rounding is safe. Where either run is
        chaotic, its loss can move by tens of percent from a start one ulp
        away, and the lead with it: no fixed threshold on the lead makes the
        choice safe; rerun the sweep from several shifted starts
        (``init_ulps``) and check that the choice stays.
    """

    d_k: int
    scale_rule: str
    seeds: tuple[int, ...]
    lrs: tuple[float, ...]
    test_losses: tuple[float, ...]
    test_accuracies: tuple[float, ...]
    runner_up_lrs: tuple[float | None, ...]
    leads: tuple[float, ...]

    @property
    def median_lr(self) -> float:
        """Median best rate over the seeds (:func:`median_rate`)."""
        return median_rate(self.lrs)

    @property
    def lr_range(self) -> tuple[float, float]:
        """Smallest and largest best rate over the seeds."""
        return min(self.lrs), max(self.lrs)

    @property
    def median_test_loss(self) -> float:
        """Median over the seeds of the chosen runs' test loss."""
        return float(np.median(self.test_losses))

    @property
    def median_test_accuracy(self) -> float:
        """Median over the seeds of the chosen runs' test accuracy."""
        return float(np.median(self.test_accuracies))


def _lead(winner: TrainingRun, runner_up: TrainingRun | None) -> float:
    """``runner_up.val_loss / winner.val_loss``, with the edge cases of :attr:`BestRates.leads`."""
    if runner_up is None:
        return math.inf
    if winner.val_loss == 0:
        return 1.0 if runner_up.val_loss == 0 else math.inf
    return runner_up.val_loss / winner.val_loss


@dataclass(frozen=True)
class SweepResult:
    """The runs of :func:`learning_rate_sweep`, with the best learning rates per setting.

    Attributes
    ----------
    runs : tuple of TrainingRun
        In the order ``d_k``, scale rule, seed, learning rate.
    """

    runs: tuple[TrainingRun, ...]

    def _distinct(self, field: str) -> tuple[Any, ...]:
        return tuple(dict.fromkeys(getattr(r, field) for r in self.runs))

    @property
    def d_ks(self) -> tuple[int, ...]:
        """The widths, in sweep order."""
        return self._distinct("d_k")

    @property
    def scale_rules(self) -> tuple[str, ...]:
        """The scale rules, in sweep order."""
        return self._distinct("scale_rule")

    @property
    def seeds(self) -> tuple[int, ...]:
        """The seeds, in sweep order."""
        return self._distinct("seed")

    @property
    def lrs(self) -> tuple[float, ...]:
        """The learning rates, in sweep order."""
        return self._distinct("lr")

    def _setting(self, d_k: int, scale_rule: str) -> list[TrainingRun]:
        matching = [r for r in self.runs if r.d_k == d_k and r.scale_rule == scale_rule]
        if not matching:
            have = sorted({(r.d_k, r.scale_rule) for r in self.runs})
            raise ValueError(f"no run with d_k={d_k} and scale_rule={scale_rule!r}; the sweep has {have}")
        return matching

    def run(self, d_k: int, scale_rule: str, seed: int, lr: float) -> TrainingRun:
        """The run of one setting, seed and learning rate.

        Raises
        ------
        ValueError
            The sweep has no such run.
        """
        for r in self._setting(d_k, scale_rule):
            if r.seed == seed and r.lr == lr:
                return r
        raise ValueError(
            f"no run with d_k={d_k}, scale_rule={scale_rule!r}, seed={seed}, lr={lr}; "
            f"the sweep has seeds {self.seeds} and learning rates {self.lrs}"
        )

    def best(self, d_k: int, scale_rule: str, seed: int) -> TrainingRun:
        """The run of one seed with the lowest ``val_loss`` among its non-diverged runs.

        Parameters
        ----------
        d_k : int
        scale_rule : str
        seed : int

        Returns
        -------
        TrainingRun
            Ties go to the first in sweep order (the smaller learning rate
            when the rates were given in increasing order). Its ``test_loss``
            and ``test_accuracy`` are the figures to report: the test batch
            played no part in the choice.

        Raises
        ------
        ValueError
            No run has this ``d_k``, ``scale_rule`` and ``seed``, or all of them diverged.

        Examples
        --------
        >>> sweep = learning_rate_sweep((8,), (0.1, 1.0), seeds=(0,), steps=20)
        >>> sweep.best(8, "inverse_sqrt", 0).lr in (0.1, 1.0)
        True
        """
        matching = [r for r in self._setting(d_k, scale_rule) if r.seed == seed]
        if not matching:
            raise ValueError(f"no run with d_k={d_k}, scale_rule={scale_rule!r} and seed={seed}; "
                             f"the sweep has seeds {self.seeds}")
        ok = [r for r in matching if not r.diverged]
        if not ok:
            raise ValueError(
                f"all {len(matching)} runs with d_k={d_k}, scale_rule={scale_rule!r} and seed={seed} "
                f"diverged (learning rates {[r.lr for r in matching]})"
            )
        return min(ok, key=lambda r: r.val_loss)

    def best_rates(self, d_k: int, scale_rule: str) -> BestRates:
        """Each seed's best learning rate for one setting, with the test results of the chosen runs.

        Returns
        -------
        BestRates
            ``median_lr`` and ``lr_range`` summarise the rates over the seeds.

        Raises
        ------
        ValueError
            As :meth:`best`, for the first seed that fails.

        Examples
        --------
        >>> sweep = learning_rate_sweep((8,), (0.1, 1.0), seeds=(0, 1, 2), steps=20)
        >>> b = sweep.best_rates(8, "inverse_sqrt")
        >>> len(b.lrs), b.median_lr in (0.1, 1.0)
        (3, True)
        """
        seeds = self._distinct_seeds(d_k, scale_rule)
        chosen = [self.best(d_k, scale_rule, s) for s in seeds]
        runners_up = [self._runner_up(d_k, scale_rule, s, r) for s, r in zip(seeds, chosen, strict=True)]
        return BestRates(
            d_k=d_k,
            scale_rule=scale_rule,
            seeds=tuple(r.seed for r in chosen),
            lrs=tuple(r.lr for r in chosen),
            test_losses=tuple(r.test_loss for r in chosen),
            test_accuracies=tuple(r.test_accuracy for r in chosen),
            runner_up_lrs=tuple(None if u is None else u.lr for u in runners_up),
            leads=tuple(_lead(r, u) for r, u in zip(chosen, runners_up, strict=True)),
        )

    def _runner_up(self, d_k: int, scale_rule: str, seed: int, winner: TrainingRun) -> TrainingRun | None:
        """The non-diverged run of a seed with the lowest ``val_loss`` other than ``winner``."""
        runs = self._setting(d_k, scale_rule)
        others = [r for r in runs if r.seed == seed and not r.diverged and r is not winner]
        return min(others, key=lambda r: r.val_loss) if others else None

    def relative_change(
        self, other: SweepResult, d_k: int, scale_rule: str, field: str = "val_loss"
    ) -> np.ndarray:
        """How much each run's result differs in ``other``, a rerun of this sweep, relative to its size.

        Run with ``init_ulps=1``, ``other`` starts every run from weights one
        ulp away: the size of the change shows how much the last bits of the
        arithmetic, which differ between CPUs and BLAS libraries, move each run.

        Parameters
        ----------
        other : SweepResult
            A sweep with the same seeds and learning rates for this setting.
        d_k : int
        scale_rule : str
        field : {"val_loss", "val_accuracy", "test_loss", "test_accuracy", \
                 "final_saturated_fraction", "weight_growth"}

        Returns
        -------
        ndarray, shape (len(seeds), len(lrs))
            ``|b − a| / |a|`` for this sweep's ``a`` and the other's ``b``:
            0 where they are equal (also where both runs diverged), ``inf``
            where only one diverged or ``a`` is 0 and ``b`` is not.

        Raises
        ------
        TypeError
            ``other`` is not a ``SweepResult``.
        ValueError
            An unknown ``field`` or setting, or different seeds or learning
            rates in the two sweeps.

        Examples
        --------
        >>> kw = dict(steps=10, seeds=(0, 1))
        >>> a = learning_rate_sweep((8,), (0.1, 30.0), **kw)
        >>> b = learning_rate_sweep((8,), (0.1, 30.0), init_ulps=1, **kw)
        >>> change = a.relative_change(b, 8, "none")  # (seeds, lrs)
        >>> bool((change[:, 0] < 1e-9).all())  # the small rate: rounding stays rounding
        True
        """
        if not isinstance(other, SweepResult):
            raise TypeError(f"other must be a SweepResult; got {type(other).__name__}")
        mine, theirs = self._setting(d_k, scale_rule), other._setting(d_k, scale_rule)
        keys = [(r.seed, r.lr) for r in mine]
        if sorted(keys) != sorted((r.seed, r.lr) for r in theirs):
            raise ValueError(
                f"the two sweeps differ in seeds or learning rates for d_k={d_k}, scale_rule={scale_rule!r}: "
                f"seeds {self.seeds} and {other.seeds}, learning rates {self.lrs} and {other.lrs}"
            )
        a, b = self.grid(d_k, scale_rule, field), other.grid(d_k, scale_rule, field)  # (seeds, lrs)
        seeds, lrs = self._distinct_seeds(d_k, scale_rule), tuple(dict.fromkeys(r.lr for r in mine))
        order_s = [other._distinct_seeds(d_k, scale_rule).index(s) for s in seeds]
        order_l = [tuple(dict.fromkeys(r.lr for r in theirs)).index(lr) for lr in lrs]
        b = b[np.ix_(order_s, order_l)]
        with np.errstate(divide="ignore", invalid="ignore"):
            change = np.abs(b - a) / np.abs(a)  # (seeds, lrs)
        change[a == b] = 0.0
        change[np.isnan(a) & np.isnan(b)] = 0.0
        change[np.isnan(a) ^ np.isnan(b)] = np.inf
        return change

    def _distinct_seeds(self, d_k: int, scale_rule: str) -> tuple[int, ...]:
        return tuple(dict.fromkeys(r.seed for r in self._setting(d_k, scale_rule)))

    def grid(self, d_k: int, scale_rule: str, field: str = "val_loss") -> np.ndarray:
        """One number per run of a setting, as a ``(seeds, learning rates)`` array.

        Parameters
        ----------
        d_k : int
        scale_rule : str
        field : {"val_loss", "val_accuracy", "test_loss", "test_accuracy", \
                 "final_saturated_fraction", "weight_growth"}
            The :class:`~attnlib.training.layer.TrainingRun` attribute to collect (``nan`` loss for a
            diverged run).

        Returns
        -------
        ndarray, shape (len(seeds), len(lrs))
            Rows in the order of :attr:`seeds`, columns in that of :attr:`lrs`.

        Raises
        ------
        ValueError
            An unknown ``field`` or setting.

        Examples
        --------
        >>> sweep = learning_rate_sweep((8,), (0.1, 1.0), seeds=(0, 1), steps=5)
        >>> sweep.grid(8, "none").shape
        (2, 2)
        """
        fields = ("val_loss", "val_accuracy", "test_loss", "test_accuracy", "final_saturated_fraction",
                  "weight_growth")
        _v.check_choice(field, "field", fields)
        runs = self._setting(d_k, scale_rule)
        seeds, lrs = self._distinct_seeds(d_k, scale_rule), tuple(dict.fromkeys(r.lr for r in runs))
        out = np.full((len(seeds), len(lrs)), np.nan)
        for r in runs:
            out[seeds.index(r.seed), lrs.index(r.lr)] = getattr(r, field)
        return out

    def table(self) -> str:
        """A plain-text table of the best learning rates: per ``(d_k, scale rule)``, seed by seed.

        Columns: ``d_k``, scale rule, the best rate of each seed (in the
        order of :attr:`seeds`), their median and their range. Only rates
        are shown: they are values of the grid, so they print the same on
        every machine as long as each seed's choice does, while the losses
        of runs at large learning rates depend on rounding. A setting in
        which some seed's runs all diverged shows ``diverged``.

        Returns
        -------
        str

        Examples
        --------
        >>> sweep = learning_rate_sweep((8,), (0.1, 1.0), seeds=(0, 1, 2), steps=20)
        >>> print(sweep.table().splitlines()[0])
          d_k  scale         best lr per seed  median  range
        """
        rows = []
        for d_k in self.d_ks:
            for rule in self.scale_rules:
                try:
                    b = self.best_rates(d_k, rule)
                except ValueError:
                    rows.append((f"{d_k:>5}  {rule:<12}", "diverged", "", ""))
                    continue
                lo, hi = b.lr_range
                per_seed = ", ".join(f"{lr:g}" for lr in b.lrs)
                rows.append((f"{d_k:>5}  {rule:<12}", per_seed, f"{b.median_lr:g}", f"{lo:g} to {hi:g}"))
        width = max([len("best lr per seed")] + [len(r[1]) for r in rows])
        lines = [f"{'d_k':>5}  {'scale':<12}  {'best lr per seed':<{width}}  {'median':>6}  range"]
        lines += [f"{a}  {b:<{width}}  {c:>6}  {d}".rstrip() for a, b, c, d in rows]
        return "\n".join(lines)


def learning_rate_sweep(
    d_ks: Iterable[int],
    lrs: Iterable[float],
    *,
    scale_rules: Iterable[str] = ("inverse_sqrt", "none"),
    seeds: Iterable[int] = (0, 1, 2, 3, 4),
    **train_kwargs: Any,
) -> SweepResult:
    """Run :func:`~attnlib.training.layer.train_retrieval` for every ``d_k``, scale rule, seed and rate.

    Runs with the same ``d_k`` and seed start from the same weights and see
    the same data: they differ only in the scale rule and the learning rate.
    The seeds are independent repetitions of the whole comparison.

    Parameters
    ----------
    d_ks : iterable of int
        Widths of queries and keys.
    lrs : iterable of float
        Learning rates, tried for every setting and seed. Chapter 4 of the
        book uses ``(0.1, 0.3, 1, 3, 10)`` with SGD and 50 steps: the grid
        holds each setting's best rate at ``d_k`` from 8 to 128, with a
        larger rate that is too large for it.
    scale_rules : iterable of str
        Members of :data:`attnlib.core.SCALE_RULES`.
    seeds : iterable of int
        Distinct non-negative seeds; each is one repetition.
    **train_kwargs
        Passed to :func:`~attnlib.training.layer.train_retrieval` (``steps``, ``batch``, ``n_keys``,
        ``d_model``, ``d_v``, ``optimizer``, ``eval_batch``, ``init_ulps``).

    Returns
    -------
    SweepResult

    Raises
    ------
    TypeError, ValueError
        As :func:`~attnlib.training.layer.train_retrieval`; ``ValueError`` also for an empty
        ``d_ks``, ``lrs``, ``scale_rules`` or ``seeds`` and for repeated
        seeds, ``TypeError`` for a keyword that :func:`~attnlib.training.layer.train_retrieval` does
        not take.

    Notes
    -----
    All runs of one ``d_k`` are trained together, as one array computation
    with leading axes (seed, scale rule and learning rate), on one BLAS
    thread: the matrices are small, and on a busy machine a multithreaded
    BLAS waits for descheduled threads. Cost is linear in
    ``steps · batch · n_keys · d_model · d_k`` summed over the runs.

    Examples
    --------
    >>> sweep = learning_rate_sweep((8, 16), (0.3, 3.0), seeds=(0, 1), steps=20)
    >>> len(sweep.runs)  # 2 d_k × 2 scale rules × 2 seeds × 2 learning rates
    16
    >>> sweep.seeds, sweep.lrs
    ((0, 1), (0.3, 3.0))
    """
    d_ks = tuple(_v.check_positive_int(d, "d_k") for d in d_ks)
    lrs = tuple(_v.check_real(lr, "lr", minimum="positive") for lr in lrs)
    scale_rules = tuple(_v.check_choice(rule, "scale_rule", SCALE_RULES) for rule in scale_rules)
    seeds = tuple(_check_seed(s) for s in seeds)
    for name, values in (("d_ks", d_ks), ("lrs", lrs), ("scale_rules", scale_rules), ("seeds", seeds)):
        if not values:
            raise ValueError(f"{name} must not be empty")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct; got {seeds}")
    for forbidden in ("d_k", "lr", "scale_rule", "seed"):
        if forbidden in train_kwargs:
            raise TypeError(
                f"{forbidden} is swept; pass it in d_ks, lrs, scale_rules or seeds, not as a keyword"
            )
    allowed = ("steps", "batch", "n_keys", "d_model", "d_v", "optimizer", "eval_batch", "init_ulps")
    for key in train_kwargs:
        if key not in allowed:
            raise TypeError(
                f"learning_rate_sweep() got an unexpected keyword argument {key!r}; allowed: {allowed}"
            )
    defaults = {"steps": 100, "batch": 32, "n_keys": 16, "d_model": None, "d_v": 16, "optimizer": "sgd",
                "eval_batch": 256, "init_ulps": 0}  # those of train_retrieval
    options = defaults | train_kwargs
    runs: list[TrainingRun] = []
    with threadpool_limits(limits=1):
        for d_k in d_ks:
            kwargs = _check_train_kwargs(d_k, **options)
            runs.extend(_train_runs(d_k, scale_rules, lrs, seeds, **kwargs))
    return SweepResult(runs=tuple(runs))
