"""What the GAVEL-REF notebooks (09-12) share: one run's inputs read once, one settings object, one output
folder, and the steps a notebook takes (dry run, submit and collect batches, evaluate, failures)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gavel.core import config
from gavel.core.items import load as load_checklist
from gavel.llm import ledger
from gavel.runs import repeats as repeated
from gavel.runs.pipeline import (
    REFERENCE,
    Settings,
    StagePending,
    default_roles,
    dry_run,
    failed_requests,
    failure_report,
    in_repo,
    provider,
    read_summaries,
    read_tables,
    release_references,
    unusable_answers,
)


@dataclass
class NotebookRun:
    """What the GAVEL-REF notebooks share: inputs read once, one settings object, one output folder."""

    summaries: list
    references: dict
    bins: dict
    provider: object
    settings: Settings
    out: Path
    repeats: int = 1  # > 1: gavel.runs.repeats: N repeats and the stability report

    def dry_run(self) -> pd.DataFrame:
        table = dry_run(self.summaries, self.references, self.provider, self.settings, self.out)
        if self.repeats > 1:
            print(repeated.repeats_cost(table, self.repeats, self.provider))
        return table

    def evaluate(self, timeout: float | None = None) -> dict:
        """Every repeat's stages (and the stability report when repeats > 1); repeat 1's tables. The ledger
        counts as this run's spending every answer received since the first call (batches collected later)."""
        self.settings.runner_options.setdefault("since", ledger.now())
        return repeated.evaluate_repeats(self.summaries, self.references, self.provider, self.out, self.settings,
                                        self.repeats, bins=self.bins, timeout=timeout)["runs"][0]

    def advance(self, timeout: float | None) -> str:
        """Submit / collect as far as finished batches allow; say where the run stands."""
        try:
            self.evaluate(timeout=timeout)
        except StagePending as pending:
            return f"{pending}; rerun to continue"
        return f"every stage done; tables in {self.out}"

    def unusable(self) -> pd.DataFrame:
        return unusable_answers(read_tables(self.out))

    def failures(self) -> str:
        """How many requests of the last evaluation (every repeat) failed, by stage, and why."""
        per_run = [failed_requests(read_tables(repeated.repeat_folder(self.out, r))) for r in range(1, self.repeats + 1)]
        failed = pd.concat(per_run, ignore_index=True)
        failed.attrs["requests"] = sum(f.attrs.get("requests", 0) for f in per_run)
        return failure_report(failed)


def notebook_run(summaries, references, provider_name: str, base_url=None, extractor=None, judge=None,
                 items=None, mode: str = "online", out=config.INTERIM_DIR / "ref_demo", repeats: int = 1,
                 orders: str = "one", checklist=None, label_orders: int = 1) -> NotebookRun:
    """``checklist``: a packaged name or a checklist file (None: the default, the 26 legal items)."""
    checklist = load_checklist(checklist)
    rows = [row for path in ([summaries] if isinstance(summaries, (str, Path)) else summaries)
            for row in read_summaries(in_repo(path))]
    if references:
        refs, bins = {c: t for _, c, t in read_summaries(in_repo(references), REFERENCE, reference=True)}, {}
    else:
        from gavel.release import load_release

        refs, bins = release_references(load_release())
    roles = default_roles()
    settings = Settings(extractor=extractor or roles["extractor"], judge=judge or roles["judge"],
                        items=checklist.select(items), mode=mode, orders=orders, checklist=checklist,
                        label_orders=label_orders)
    return NotebookRun(rows, refs, bins, provider(provider_name, base_url), settings, in_repo(out), repeats)
