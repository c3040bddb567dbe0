"""The judgments table: one row per verdict of the judge (compare and residual_match, every order and repeat).

It is what the reports on repeats (``gavel.runs.stability``) and on orders (``gavel.runs.orders``) are computed
from; ``gavel.runs.pipeline`` writes one run's rows, ``gavel.runs.repeats`` joins every repeat's
(``judgments.csv``, docs/orders.md).
"""

from __future__ import annotations

import pandas as pd

#: an answer the reader could not use is its own outcome, never a 0
UNUSABLE = "unusable"

#: one row per judgment of the judge (compare and residual_match, each order): ``judgments.csv``, docs/orders.md
JUDGMENT_COLUMNS = ["stage", "subject", "case_id", "item", "gate", "order", "model_is_a", "n_model", "n_reference",
                    "status", "answer_ab", "relation", "pairs", "only_in_model", "only_in_reference", "score", "detail"]

def outcome(status, gate, relation, pairs) -> str:
    """One judgment's verdict in model/reference wording: ``relation:...``, ``pairs:[...]`` or ``unusable``."""
    if status != "ok":
        return UNUSABLE
    return f"relation:{relation}" if gate == "single" else f"pairs:{pairs}"


def judgment_table(runs: list[dict]) -> pd.DataFrame:
    """Every repeat's judgments (``tables["judgments"]`` of each run, repeat 1 first) with ``repeat``."""
    frames = [t["judgments"].assign(repeat=r) for r, t in enumerate(runs, 1) if len(t["judgments"])]
    if not frames:
        return pd.DataFrame(columns=["repeat", *JUDGMENT_COLUMNS])
    table = pd.concat(frames, ignore_index=True)
    return table[["repeat", *JUDGMENT_COLUMNS]]
