"""The planner against the release (`gavel plan`, gavel.runs.plan, docs/plan.md): for N cases subsampled from
the release's cases with every model (58 of 100), the half-width of the 95% interval the plan predicts and the one gavel prints (target: within
+-10%), and the plan's detectable difference against how often the verdict's test finds a difference that size.

    .venv/bin/python benchmarks/plan_check.py [subsamples]

Predicted: ``plan.half_width`` of each pair's variance on the release's case scores (data/results/
summary_case_scores.csv: one cell a case), the same variance every subsample is drawn from. Realized: the mean
over ``subsamples`` draws of N cases (without replacement) of the half-width of the interval
``gavel.core.paired.compare`` gives on them, (ci_high - ci_low) / 2, for every one of the 66 pairs. Printed per
N: the mean ratio realized / predicted over the pairs, its smallest and largest, and how many pairs are within
+-10%. Then the power check: for each pair, the release's case differences shifted to a true mean of the
difference the plan says N cases detect (at alpha 0.05, one pair), and N cases drawn with replacement from the
pair's common cases (a population as large as the plan assumes); the share of draws whose paired t-test
rejects at 0.05 should be near the plan's power, 0.8.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's gavel, not an installed one
from gavel.core import paired  # noqa: E402
from gavel.runs import plan  # noqa: E402

SIZES = (10, 20, 30, 40, 50)


def main(subsamples: int = 100) -> None:
    started = time.perf_counter()
    cells = plan.release_cells()
    wide = cells.pivot_table(index="case_id", columns="model", values="value", aggfunc="first")
    models = list(wide.columns)
    pairs = [(a, b) for i, a in enumerate(models) for b in models[i + 1:]]
    rng = np.random.default_rng(2026)
    full = wide.dropna()
    print(f"release: {len(full)} cases with every one of {len(models)} models, {len(pairs)} pairs; "
          f"{subsamples} subsamples per N")
    print(f"{'N':>4} {'predicted (mean)':>17} {'realized (mean)':>16} {'ratio mean':>11} {'min':>6} {'max':>6} "
          f"{'within 10%':>11}")
    for n in SIZES:
        realized = np.zeros((subsamples, len(pairs)))
        for s in range(subsamples):
            pick = full.iloc[rng.choice(len(full), n, replace=False)]
            table, _ = paired.compare(pick.to_numpy(float).T[:, :, None], models, seed=s)
            half = dict(zip(zip(table["model_a"], table["model_b"]), (table["ci_high"] - table["ci_low"]) / 2))
            realized[s] = [half.get((a, b), half.get((b, a))) for a, b in pairs]
        # predicted from the same cases the subsamples come from
        pred = np.array([plan.half_width(plan.pair_variance(
            cells[cells["case_id"].isin(full.index)], a, b).draw_variance(), n) for a, b in pairs])
        real = realized.mean(axis=0)
        ratio = real / pred
        print(f"{n:>4} {pred.mean():>17.3f} {real.mean():>16.3f} {ratio.mean():>11.3f} {ratio.min():>6.3f} "
              f"{ratio.max():>6.3f} {int((abs(ratio - 1) <= 0.10).sum()):>6}/{len(pairs)}")
    print("power: the release's case differences shifted to the plan's detectable difference (alpha 0.05, one "
          "pair), N cases drawn with replacement")
    from scipy.stats import ttest_1samp

    for n in (20, 50):
        shares = []
        for a, b in pairs:
            d = (wide[a] - wide[b]).dropna().to_numpy(float)  # every common case
            v = float(np.var(d, ddof=1))
            delta = plan.detectable(v, n)
            shifted = d - d.mean() + delta
            hits = sum(ttest_1samp(shifted[rng.choice(len(d), n, replace=True)], 0.0).pvalue < 0.05
                       for _ in range(subsamples))
            shares.append(hits / subsamples)
        print(f"  N = {n}: rejected in {np.mean(shares):.3f} of subsamples (mean over pairs; min {min(shares):.2f}, "
              f"max {max(shares):.2f}); planned power 0.8")
    print(f"took {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
