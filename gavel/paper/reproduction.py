"""docs/REPRODUCTION.md: each number the paper states, the paper's value, ours, and a status.

Statuses:
* ``reproduced``          ours equals the paper's value within the paper's rounding;
* ``within our bounds``   the paper's value lies between our lower and upper bound (the release leaves
                          the exact value open), ours being the best estimate;
* ``differs``             computable, but ours and the paper's disagree beyond rounding and bounds;
* ``not reproducible``    the release lacks what it needs, or ours is another quantity (the note names what
                          is missing and, where we have one, the ``analogue``: the closest number the
                          release supports; its bounds, if any, go into the note).

Ours come only from the result tables (data/results/); the paper's values only from paper_claims.yaml.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from gavel.core import config

CLAIMS_FILE = Path(__file__).with_name("paper_claims.yaml")
DOC = config.DOCS_DIR / "REPRODUCTION.md"


def load_claims() -> list[dict]:
    with open(CLAIMS_FILE, encoding="utf-8") as fh:
        return config.package_yaml(fh)["claims"]


class Metrics:
    """Each method returns (value, low, high); low/high may be None when there are no bounds."""

    def __init__(self, t: dict[str, pd.DataFrame]):
        self.t = t
        self.labels = {m.release_name: m.label for m in config.models()}

    # cases
    def benchmark_cases(self):
        return int(self.t["benchmark_cases"]["cases"].sum()), None, None

    def cases_per_bin(self):
        c = self.t["benchmark_cases"]["cases"]
        return (int(c.iloc[0]) if c.nunique() == 1 else f"{c.min()}-{c.max()}"), None, None

    def filed_2025(self):
        return int(self.t["benchmark_cases"]["filed_2025"].sum()), None, None

    def earlier_in_bin(self, bin):
        row = self.t["benchmark_cases"].set_index("length_bin").loc[bin]
        return int(row["cases"] - row["filed_2025"]), None, None

    # summary benchmark
    def top_models(self, k):
        """The top k by S_checklist, and whether the neighbour intervals can separate the ranks around them."""
        s = self.t["summary_s_checklist"]
        s = s[s["length_bin"] == "all"].sort_values("s_checklist", ascending=False)
        top = s["model"].head(k + 1).tolist()
        d = self.t["summary_neighbour_differences"]
        pairs = d[d["model_a"].isin(top) & d["model_b"].isin(top)]
        sep = int(pairs["separated"].sum())
        note = (f"stand-in: ranking by S_checklist best estimates; {sep} of the {len(pairs)} neighbouring pairs "
                f"among the top {k + 1} are separated by intervals carrying sampling and reconstruction "
                f"uncertainty (data/results/summary_neighbour_differences.csv)")
        return ", ".join(sorted(s["label"].head(k))), None, None, note

    def bin_drop(self, model):
        s = self.t["summary_s_checklist"].set_index(["model", "length_bin"])
        a, b = s.loc[(model, "32K")], s.loc[(model, "512K")]
        return a["s_checklist"] - b["s_checklist"], None, None

    def human_words(self, bins):
        """Mean words of the human summaries of the given length bins, pooled over their summaries."""
        bins = [bins] if isinstance(bins, str) else list(bins)
        h = self.t["summary_lengths"]
        h = h[(h["model"] == "human") & h["length_bin"].isin(bins)]
        if set(h["length_bin"]) != set(bins):
            raise KeyError(f"summary_lengths has no human row for {sorted(set(bins) - set(h['length_bin']))}")
        pooled = float((h["mean_words"] * h["summaries"]).sum() / h["summaries"].sum())
        note = "" if len(bins) == 1 else f"pooled over the {int(h['summaries'].sum())} human summaries of the " \
            f"{' and '.join(bins)} bins (" + ", ".join(f"{b}: {w:.0f}" for b, w in zip(h["length_bin"], h["mean_words"])) + ")"
        return pooled, None, None, note

    def group_extreme(self, groups, models, how):
        g = self.t["summary_group_scores"]
        sel = g[g["group"].isin(groups) & g["model"].isin(models)]
        pick = (lambda x: float(x.min())) if how == "min" else (lambda x: float(x.max()))
        return pick(sel["score"]), pick(sel["low"]), pick(sel["high"])

    def item_score(self, model, item):
        s = self.t["summary_item_scores"].set_index(["model", "item"]).loc[(model, item)]
        return _nan_none(s["score"]), _nan_none(s["low"]), _nan_none(s["high"])

    def median_item(self, model):
        """Median over the items that have a best estimate (the same set for the value and its bounds)."""
        s = self.t["summary_item_scores"]
        s = s[(s["model"] == model) & s["score"].notna()]
        note = f"median over the {len(s)} items with a best estimate"
        return float(s["score"].median()), float(s["low"].median()), float(s["high"].median()), note


    def median_spec(self, model, rate):
        """Median over the items the judge saw at least once for this model (an item never judged, such
        as Class Action, has a rate of 0 only because nobody asked); bounds from the per-item bounds."""
        s = self.t["summary_specification"]
        s = s[(s["model"] == model) & (s["judged"] > 0)]
        stem = rate.split("_")[0]
        note = f"median over the {len(s)} items judged at least once"
        return (100 * float(s[rate].median()), 100 * float(s[f"{stem}_low"].median()),
                100 * float(s[f"{stem}_high"].median()), note)

    def length_corr(self, models, method):
        c = self.t["summary_length_correlations"].set_index("models")
        return float(c.loc[models, method]), None, None

    # document extraction
    def _doc(self, method, model, configuration):
        d = self.t["document_s_checklist"].fillna({"configuration": ""})
        return d[(d["method"] == method) & (d["model"] == model) & (d["configuration"] == configuration)].iloc[0]

    def doc_score(self, method, model, configuration):
        """S_checklist of a document-extraction run; where some of its cells rest on rule-6 estimates (the
        model's checklist is not released), the note counts them against the cells with a judge entry."""
        r = self._doc(method, model, configuration)
        out = (_nan_none(r["s_checklist"]), _nan_none(r["s_checklist_low"]), _nan_none(r["s_checklist_high"]))
        st = self.t.get("document_cell_status")
        if st is None:
            return out
        st = st.fillna({"configuration": ""})
        st = st[(st["method"] == method) & (st["model"] == model) & (st["configuration"] == configuration)]
        cells = st.groupby("status")["cells"].sum()
        estimated = int(cells[cells.index.str.startswith("model_unknown")].sum())
        if not estimated:
            return out
        judged, unreadable = int(cells.get("judged", 0)), int(cells.get("unreadable_judgment", 0))
        note = (f"{judged + unreadable:,} of the {int(cells.sum()):,} cells have a judge entry ({judged:,} "
                f"readable); the {estimated:,} cells with neither a judge entry nor a released checklist rest on "
                f"rule-6 estimates")
        return (*out, note)

    def doc_tokens(self, method, model, configuration):
        return _nan_none(self._doc(method, model, configuration)["total_tokens_per_case"] / 1e6), None, None

    def residual_ratio(self, model, same_halves_as=()):
        """r (%) under our default matching, bounded by its range over the matching variants; a model with
        one released checklist half says so, and ``same_halves_as`` compares this model on the halves that
        those models cover."""
        t = self.t["residual_ratio"]
        t = t.assign(case_parts=t["case_parts"].fillna("").astype(str)).set_index(["model", "subset"])
        row = t.loc[(model, "all")]
        variants = [c for c in t.columns if c.startswith("r_") and c.endswith("_percent")
                    and c not in ("r_percent", "r_median_percent", "r_q1_percent", "r_q3_percent",
                                  "r_low_percent", "r_high_percent")]
        notes = [f"low/high: the range over {len(variants)} ways of matching spans (exact / quote-insensitive / "
                 f"fuzzy evidence; value then evidence, or evidence only), {row['summaries']:.0f} summaries"]
        if row["case_parts"] in ("1", "2"):
            notes.append(f"part-{row['case_parts']} half only (the other half's checklists are not released)")
        halves = []
        for other in same_halves_as:
            part = t.loc[(other, "all"), "case_parts"]
            if part in ("1", "2"):
                halves.append(f"{self.labels.get(other, other)}'s half (part {part}): "
                              f"{t.loc[(model, 'part' + part), 'r_percent']:.1f}")
        if halves:
            notes.append(f"{self.labels.get(model, model)} on the same halves as the models it is compared with: "
                         + ", ".join(halves))
        return float(row["r_percent"]), float(row["r_low_percent"]), float(row["r_high_percent"]), "; ".join(notes)

    def token_saving(self, than):
        ours = self._doc("agent", "Qwen3-30B-A3B-Thinking-2507", "individual")["total_tokens_per_case"]
        other = self._doc(*than)["total_tokens_per_case"]
        return 100 * (1 - ours / other), None, None


def _nan_none(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _tolerance(claim) -> float:
    if "tolerance" in claim:
        return float(claim["tolerance"])
    paper = claim["paper"]
    if isinstance(paper, int):
        return 0.5
    if claim.get("metric") == "doc_tokens" or abs(paper) < 1:
        return 0.005
    return 0.05


def evaluate(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    m = Metrics(tables)
    rows = []
    for c in load_claims():
        value = low = high = None
        computed_note = ""
        if c.get("metric"):
            value, low, high, *rest = getattr(m, c["metric"])(**c.get("args", {}))
            computed_note = rest[0] if rest else ""
        paper = c["paper"]
        if c.get("missing"):
            status = "not reproducible"
            note = c["missing"]
        elif value is None:
            status = "not reproducible"
            note = (f"no best estimate: the release holds no judgment for these cells; bounds {low:g}..{high:g}"
                    if low is not None and high is not None else "not computable from the release")
        elif isinstance(paper, str) or isinstance(value, str):
            status = "reproduced" if str(value) == str(paper) else "differs"
            note = ""
        elif c.get("compare") in (">", "<"):
            holds = (lambda x, p=paper: x > p) if c["compare"] == ">" else (lambda x, p=paper: x < p)
            note = f"paper states {c['compare']} {paper}"
            if low is None or high is None or low == high:
                status = "reproduced" if holds(value) else "differs"
            elif holds(value) and holds(low) and holds(high):
                status = "reproduced"
            elif holds(low) or holds(high):
                status, note = "within our bounds", note + ("; the best estimate agrees" if holds(value) else
                                                            "; the best estimate does not")
            else:
                status = "differs"
        elif abs(value - paper) <= _tolerance(c) + 1e-9:
            status, note = "reproduced", ""
        elif low is not None and high is not None and low - 1e-9 <= paper <= high + 1e-9:
            status, note = "within our bounds", ""
        elif low is not None and high is None and paper >= low - 1e-9:
            status, note = "within our bounds", "upper bound open (cells may be not applicable)"
        else:
            status, note = "differs", ""
        for extra in (computed_note, c.get("note")):
            if extra:
                note = f"{note}; {extra}" if note else extra
        analogue = value if c.get("missing") and value is not None else None
        if c.get("missing") and (low is not None or high is not None):
            # bounds belong to the number the row reports; a not-reproducible row's bounds are the analogue's
            note += f"; the analogue's bounds {_fmt(low) or 'open'}..{_fmt(high) or 'open'}"
            low = high = None
        rows.append({"id": c["id"], "where": c["where"], "claim": c["claim"], "paper": paper,
                     "ours": None if c.get("missing") else value, "low": low, "high": high,
                     "analogue": analogue, "status": status, "note": note})
    return pd.DataFrame(rows, dtype=object)


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if isinstance(x, float):
        return f"{x:.3f}".rstrip("0").rstrip(".") if abs(x) < 10 else f"{x:.1f}"
    return str(x)


INCONSISTENCIES = [
    "Eq. 2 defines the residual ratio r on the reference summary, but §3.1 reports r per model.",
    "Figure 4: the caption gives medians of 59% over- and 70% under-specification; the text gives 26.5% "
    "and 76.5% (and names Gemini 2.5 Pro in the text, Gemini 2.5 Flash in the caption).",
    "§4.3 says extraction is evaluated on 20 long cases; the released token totals match averages over "
    "all 40 meta-evaluation cases (rows fig5_*: token totals reproduced over 40 cases).",
    "Appendix E prints Kendall's tau = 0.09 for proprietary models beside negative Pearson and Spearman "
    "values; the sign is probably lost.",
]


def render(claims: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> str:
    counts = claims["status"].value_counts()
    lines = [
        "# Reproduction of the GAVEL paper from its public release",
        "",
        "Generated by `make results` (gavel/paper/reproduction.py) from `data/results/`; do not edit by hand.",
        "Paper values come from `gavel/paper/paper_claims.yaml`; every other number is computed.",
        "",
        "Summary: " + ", ".join(f"{counts.get(s, 0)} {s}" for s in
                                ["reproduced", "within our bounds", "differs", "not reproducible"]) + ".",
        "",
        "How to read it: S_checklist is the mean over cases of 100 x the mean matching score of the applicable",
        "items (gavel/ref/scoring.py). Where the release is silent (empty reference checklists of the summary",
        "benchmark, unjudged Class Action items, unreleased checklists) each cell gets a best estimate and",
        "lower/upper bounds (gavel/paper/reconstruct.py); `low`/`high` are the resulting bounds on the number.",
        "`analogue` gives, for a number that needs unreleased data, the closest quantity the release supports",
        "(e.g. the S_checklist drop where the paper reports an S_GAVEL-REF drop); such a row is `not reproducible`,",
        "its note names what is missing, and the analogue's bounds, if any, are in the note.",
        "",
        "| id | where | claim | paper | ours | low | high | analogue | status | note |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in claims.itertuples():
        lines.append(f"| {r.id} | {r.where} | {r.claim} | {_fmt(r.paper)} | {_fmt(r.ours)} | {_fmt(r.low)} | "
                     f"{_fmt(r.high)} | {_fmt(r.analogue)} | {r.status} | {r.note} |")
    lines += ["", "## Known inconsistencies in the paper", ""]
    lines += [f"- {x}" for x in INCONSISTENCIES]
    lines += real_steps(tables.get("comparisons"))
    lost = tables.get("summary_lost_cases")
    if lost is not None and len(lost):
        lines += ["", "## Data the release lost", ""]
        for r in lost.itertuples():
            lines.append(f"- {config.model_label(r.model)}, part {r.part}: judge file truncated, "
                         f"{r.cases_scored} cases scored, {r.cases_lost} lost.")
    audit = tables.get("release_audit")
    if audit is not None:
        lines += ["", "## Release defects (make audit)", "", "| defect | records | files |", "| --- | --- | --- |"]
        lines += [f"| {r.defect} | {r.records} | {r.files} |" for r in audit.itertuples()]
    return "\n".join(lines) + "\n"


def _p(x) -> str:
    return "" if x is None or pd.isna(x) else f"{float(x):.3g}"


def real_steps(c: pd.DataFrame | None) -> list[str]:
    """The section on the neighbouring steps of the S_checklist ranking (data/results/comparisons.csv): each
    step on the best estimates, on the released cells alone and at every cell's lower / upper bound, whether
    it is real under all of them, and the sentence a paper may write about each step that is."""
    if c is None or "real" not in c:
        return []
    label = config.model_label
    steps = c[(c["score"] == "s_checklist") & c["neighbours"].astype(str).eq("True")]
    real = steps["real"].astype(str).eq("True")
    lines = ["", "## Which steps of the S_checklist ranking are real", "",
             "Each neighbouring pair of the ranking (data/results/comparisons.csv), compared on the best estimates,",
             "on the released cells alone (no rule-6 estimate) and with every cell at its lower and at its upper",
             "bound, each a paired t-test Holm-adjusted over the 66 pairs of its own family. A step is real only",
             f"where all four say so: {int(real.sum())} of {len(steps)} steps. `detectable`: the smallest true",
             "difference found with 80% power at the level Holm compares the pair's p with; `needed`: the cases the",
             "observed difference needs (docs/gavel-ref.md).", "",
             "| pair (higher first) | cases | difference (95% CI) | p (Holm) | verdict | released cases | released "
             "difference | released p (Holm) | released verdict | at lower bounds | at upper bounds | real | detectable "
             "| needed |", "| --- " * 14 + "|"]
    for r in steps.itertuples():
        lines.append(f"| {label(r.model_a)} – {label(r.model_b)} | {int(r.cases)} | {r.difference:.2f} ({r.ci_low:g} "
                     f"to {r.ci_high:g}) | {_p(r.p_value)} ({_p(r.p_holm)}) | {r.verdict} | {int(r.released_cases)} | "
                     f"{r.released_difference:.2f} | {_p(r.released_p_value)} ({_p(r.released_p_holm)}) | "
                     f"{r.released_verdict} | {r.low_verdict} | {r.high_verdict} | {'yes' if str(r.real) == 'True' else 'no'} "
                     f"| {r.detectable_difference:.2f} | {int(r.cases_needed) if r.cases_needed == r.cases_needed else ''} |")
    lines += ["", "What a paper may write about the steps:", ""]
    for r in steps.itertuples():
        if r.verdict not in ("a better", "b better"):
            continue
        a, b = label(r.model_a), label(r.model_b)
        if str(r.real) == "True":
            lines.append(f"- *\"{a} scores {r.difference:.1f} points (95% CI {r.ci_low:g} to {r.ci_high:g}) higher than "
                         f"{b} on their {int(r.cases)} common cases (paired t-test, Holm-adjusted p = {_p(r.p_holm)} over "
                         f"66 pairs); the step holds on the released cells alone ({int(r.released_cases)} cases, "
                         f"{r.released_difference:.2f} points, Holm-adjusted p = {_p(r.released_p_holm)}) and at the "
                         f"reconstruction's bounds.\"*")
        else:
            lines.append(f"- {a} > {b} is *not* a claim the release supports: {r.difference:.2f} points (Holm-adjusted "
                         f"p = {_p(r.p_holm)}) on the best estimates, but on the released cells alone "
                         f"({int(r.released_cases)} cases) {r.released_difference:.2f} points, p = "
                         f"{_p(r.released_p_value)} before adjustment, {_p(r.released_p_holm)} after "
                         f"({r.released_verdict}); at the lower bounds {r.low_verdict}, at the upper {r.high_verdict}.")
    return lines


def write(tables: dict[str, pd.DataFrame], path: Path = DOC) -> Path:
    claims = evaluate(tables)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(claims, tables), encoding="utf-8")
    return path
