"""An inspect log is untrusted input (issue 47): whatever a ``.eval`` file holds (random bytes, a zip whose
members are any JSON, a real log with any model name, sample ids, epochs and outputs), reading it as summaries
(``gavel.interop.logs.read_summaries``, what ``gavel evaluate --summaries LOG.eval`` does) either maps each
sample to exactly (model, case, summary) or refuses in one line naming the file; it raises nothing else."""

from __future__ import annotations

import json
import tempfile
import zipfile
from pathlib import Path

from fuzzing import any_text, fuzz
from hypothesis import given
from hypothesis import strategies as st
from needs import need_module

need_module("inspect_ai", "the inspect extra (pip install '.[inspect]') reads the logs under test")

from inspect_ai.log import (  # noqa: E402
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalSample,
    EvalSpec,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.model import ModelOutput  # noqa: E402

from gavel.interop.logs import read_summaries  # noqa: E402
from gavel.ref.inputs import InputError  # noqa: E402

EXPORT_EXAMPLES = 40
FUZZ = fuzz(40)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | any_text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text(max_size=8), inner, max_size=3),
                    max_leaves=10)
#: samples that inspect's own writer can write: its zip member names hold the sample id, and its JSON writer
#: takes no lone surrogate, so these texts leave the surrogates out (a log holding one as a JSON escape is
#: made by hand in the targets above, whose JSON values draw from all of Unicode)
SAMPLE = st.tuples(st.one_of(st.text(min_size=1, max_size=12), st.integers(-5, 10**6)), st.integers(1, 3),
                   st.text(max_size=60))


def _log(model: str, samples) -> EvalLog:
    return EvalLog(status="success", eval=EvalSpec(created="2026-11-28T00:00:00+00:00", task="t", model=model,
                                                   config=EvalConfig(), dataset=EvalDataset(name="d")),
                   samples=[EvalSample(id=i, epoch=e, input="in", target="ref",
                                       output=ModelOutput.from_content(model=model, content=text))
                            for i, e, text in samples])


def _read(path: Path):
    """read_summaries' answer, checking its contract: a list, or InputError in one line naming the file."""
    problems: list[str] = []
    try:
        rows = read_summaries(path, problems=problems)
    except InputError as err:
        assert "\n" not in str(err) and str(path) in str(err), str(err)
        return None, problems
    for message in problems:
        assert "\n" not in message and str(path) in message, message
    return rows, problems


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes_are_refused_in_one_line(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.eval"
        path.write_bytes(data)
        rows, _ = _read(path)
        assert not rows




def _base_members() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "base.eval"
        write_eval_log(_log("model-a", [("1", 1, "A summary.")]), str(path), format="eval")
        with zipfile.ZipFile(path) as z:
            return {n: z.read(n) for n in z.namelist()}


MEMBERS = _base_members()


@FUZZ
@given(st.sampled_from(sorted(MEMBERS)), JSON)
def test_a_log_with_any_json_in_a_member_maps_or_is_refused(member, value):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.eval"
        with zipfile.ZipFile(path, "w") as z:
            for name, data in MEMBERS.items():
                z.writestr(name, json.dumps(value) if name == member else data)
        rows, _ = _read(path)
        for model, case, text in rows or []:
            assert isinstance(model, str) and isinstance(case, str) and isinstance(text, str) and text.strip()


@FUZZ
@given(st.text(max_size=20), st.lists(SAMPLE, max_size=5, unique_by=lambda s: (str(s[0]), s[1])))
def test_a_real_log_maps_each_sample_to_its_model_case_and_output(model, samples):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.eval"
        try:
            log = _log(model, samples)
        except ValueError:  # inspect itself refuses to make such a log
            return
        write_eval_log(log, str(path), format="eval")
        rows, problems = _read(path)
        try:  # what the file holds is what inspect itself reads back (it may drop a sample it cannot name)
            back = read_eval_log(str(path))
        except Exception:  # noqa: BLE001
            assert rows is None
            return
        if rows is None:
            assert not back.eval.model.strip() or not back.samples
            return
        texts: dict[str, set] = {}
        for sample in back.samples:  # the first usable sample of a case is kept
            if sample.output.completion.strip():
                texts.setdefault(str(sample.id), set()).add(sample.output.completion)
        assert sorted(case for _, case, _ in rows) == sorted(texts)
        assert all(m == model and text in texts[case] for m, case, text in rows)
        assert len(problems) == len(back.samples) - len(rows)


def test_a_spoiled_run_folder_is_exported_or_refused_in_one_line(tmp_path):
    """``gavel export inspect RUN`` reads a run folder from someone else: the run folder's fuzz target
    (tests/test_fuzz_run_folder.py: hostile cells, dropped columns, cut files, bytes, JSON, links out, FIFOs,
    /dev/zero) ends in written logs or one ``InputError`` line; run in a subprocess under a memory and time cap."""
    import os
    import resource
    import subprocess
    import sys

    from test_fuzz_run_folder import MEMORY, REPO, SECONDS

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    done = subprocess.run([sys.executable, "-c", "import test_fuzz_inspect_log as t; t.fuzz_export()"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=SECONDS, preexec_fn=cap,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert "exported" in done.stdout


def _spoiled_copy(base: Path, root: Path, spoils, spoil_one) -> tuple[Path, Path]:
    """A copy of the run folder ``base`` under a fresh folder of ``root``, spoiled; (that folder, the run)."""
    import shutil

    work = Path(tempfile.mkdtemp(dir=root))
    run = Path(shutil.copytree(base, work / "run"))
    (work / ".env").write_text("OPENAI_API_KEY=sk-fuzz-secret\n")
    for target, action, value, where in spoils:
        # JSON holds text: bytes go in as text
        spoil_one(run, target, action, value.decode("latin-1") if action == "json" and isinstance(value, bytes)
                  else value, where, work)
    return work, run


def fuzz_export() -> None:
    """The fuzz target of the export (run in a capped subprocess by the test above)."""
    import shutil

    from report_runs import make_run
    from test_fuzz_run_folder import FILES, HOSTILE, _spoil

    from gavel.interop.logs import export_run

    root = Path(tempfile.mkdtemp(prefix="fuzz-export-"))
    base = make_run(root / "base", "b")
    actions = ["cell"] * 3 + "drop cut bytes json remove link_out link_zero fifo".split()
    values = st.one_of(st.sampled_from(HOSTILE), any_text(max_size=40), st.binary(max_size=200), JSON)
    spoil = st.tuples(st.sampled_from(FILES), st.sampled_from(actions), values, st.integers(0, 10_000))
    count = {"n": 0, "refused": 0}

    @fuzz(EXPORT_EXAMPLES)
    @given(st.lists(spoil, min_size=1, max_size=3))
    def one(spoils):
        work, run = _spoiled_copy(base, root, spoils, _spoil)
        try:
            written = export_run(run, work / "logs")
            rows = [r for p in written for r in read_summaries(p, problems=[])]
            assert all(isinstance(t, str) for _, _, t in rows)
        except InputError as err:
            assert str(err) and "\n" not in str(err), str(err)
            count["refused"] += 1
        finally:
            shutil.rmtree(work, ignore_errors=True)
        count["n"] += 1

    one()
    shutil.rmtree(root, ignore_errors=True)
    print(f"exported {count['n']} spoiled run folders, {count['refused']} refused in one line")
