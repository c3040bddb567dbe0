"""The release's benchmark cases as an inspect_ai task, scored by ``gavel_ref``:

    inspect eval gavel/interop/task.py -T documents=full_case_data.json --model openai/gpt-4o \\
        --model-role extractor=openai/gpt-4o --model-role judge=openai/gpt-4o
    inspect eval gavel/interop/task.py -T replay=gpt-4.1-2025-04-14 -T cases=46510 --model mockllm/model

Each sample is a benchmark case: the id is the case, the target its human reference summary (the release's).
With ``documents`` (a ``full_case_data`` JSON file, or a folder with one folder per case) the input is gavel's
summarize prompt over the case's documents, whole, in the paper's order, and the model under evaluation
writes the summary; the release ships no documents. With ``replay`` (a release model's name) the output is
that model's released summary and nothing is generated: the release's summaries scored inside inspect."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ModelOutput
from inspect_ai.solver import generate, solver

from gavel.ref.inputs import REFERENCE, InputError
from gavel.ref.stages.summarize import case_messages

from .scorer import gavel_ref

BENCHMARK = "benchmark"  # the release's set of benchmark cases (cases.csv's ``set``)


def _listed(value) -> list[str] | None:
    if value is None:
        return None
    return [str(v) for v in (value if isinstance(value, (list, tuple)) else str(value).split(","))]


def _documents(path: str | Path, case_ids: list[str]) -> dict[str, list[tuple[str, str]]]:
    from gavel.documents import corpus

    path = Path(path)
    corpora = ([corpus.load_folder(path / c) for c in case_ids if (path / c).is_dir()] if path.is_dir()
               else corpus.load_full_case_data(path, case_ids))
    return {c.case_id: [(d.name, d.text) for d in c.documents] for c in corpora}  # in the paper's order


def samples(release=None, cases=None, documents=None, replay: str | None = None) -> list[Sample]:
    """The benchmark cases (or the ``cases`` named) with a reference; see the module for ``documents`` and
    ``replay``. A case named but not in the release, or without documents or a replayed summary, is refused."""
    from gavel.release import load_release

    summaries = load_release(release).summaries
    bench = summaries[summaries["set"] == BENCHMARK]
    refs = dict(zip(bench.loc[bench["model"] == REFERENCE, "case_id"].astype(str),
                    bench.loc[bench["model"] == REFERENCE, "text"]))
    wanted = _listed(cases) or sorted(refs, key=lambda c: (len(c), c))
    missing = [c for c in wanted if c not in refs]
    if missing:
        raise InputError(f"case(s) {', '.join(missing[:10])}: not a benchmark case of the release with a reference")
    if (documents is None) == (replay is None):
        raise InputError("give the task documents=FILE_OR_FOLDER (the model summarizes) or replay=MODEL (a release "
                         "model's summaries are scored)")
    if replay is not None:
        mine = bench[bench["model"] == replay]
        texts = dict(zip(mine["case_id"].astype(str), mine["text"]))
        lacking = [c for c in wanted if c not in texts]
        if not texts or lacking:
            raise InputError(f"replay={replay!r}: no released summary for case(s) {', '.join(lacking[:10])}")
        return [Sample(id=c, input=f"case {c}", target=refs[c], metadata={"summary": texts[c], "model": replay})
                for c in wanted]
    docs = _documents(documents, wanted)
    lacking = [c for c in wanted if c not in docs]
    if lacking:
        raise InputError(f"documents={documents}: no documents for case(s) {', '.join(lacking[:10])}")
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser}
    return [Sample(id=c, input=[kinds[m["role"]](content=m["content"]) for m in case_messages(docs[c])],
                   target=refs[c]) for c in wanted]


@solver
def given_summary():
    """The summary in the sample's metadata (``summary``; written by ``model``, default the model under
    evaluation) as the output: nothing is generated (``replay``; summaries written before)."""

    async def solve(state, generate):
        state.output = ModelOutput.from_content(model=state.metadata.get("model") or str(state.model),
                                                content=state.metadata["summary"])
        return state

    return solve


@task
def gavel_ref_benchmark(release: str | None = None, cases=None, documents: str | None = None,
                        replay: str | None = None, checklist: str | None = None, items=None, orders: str = "one",
                        label_orders: int = 1, alpha: float = 0.9, seed: int = 0) -> Task:
    """The release's benchmark cases scored by GAVEL-REF (module docstring)."""
    return Task(dataset=MemoryDataset(samples(release, cases, documents, replay), name="gavel-benchmark"),
                solver=given_summary() if replay is not None else generate(),
                scorer=gavel_ref(checklist=checklist, items=_listed(items), orders=orders,
                                 label_orders=int(label_orders), alpha=float(alpha), seed=int(seed)))
