"""Fuzz target of answer packs (gavel.llm.packs): a pack is a file from someone else (a shard folder, a run
folder shared for a report). Any bytes, and a real pack cut or overwritten anywhere, open as a pack whose
rows are answers' texts or raise PackError naming the file; never another error. Runs in a child process
under an address-space cap and a time limit, seeded per run (tests/fuzzing.py)."""

import json
import sqlite3
import tempfile
from pathlib import Path

from fuzzing import fuzz, replay, run_capped
from hypothesis import given
from hypothesis import strategies as st

from gavel.llm import packs

FOLDER = Path(tempfile.mkdtemp(prefix="gavel-fuzz-packs-"))


def _real() -> bytes:
    path = FOLDER / "real"
    if not path.exists():
        db = sqlite3.connect(path)
        db.execute(packs.SCHEMA)
        db.executemany("INSERT INTO answers VALUES (?, ?, ?)", [
            (f"judge-{i:040x}", float(i), json.dumps({"custom_id": f"judge-{i}", "status": "succeeded",
                                                      "text": "☃" * i})) for i in range(40)])
        db.commit()
        db.close()
    return path.read_bytes()


def _read(p: packs.Pack) -> None:
    try:
        for key, mtime, body in p.rows():
            assert packs.KEY.fullmatch(key) and isinstance(mtime, float) and isinstance(body, str)
            assert isinstance(p.get(key), (str, type(None)))  # a damaged index may miss a row
        assert p.get("judge-none") is None
    finally:
        p.close()


@fuzz(120)
@given(data=st.binary(max_size=8192), at=st.integers(0, 1 << 16), cut=st.booleans())
def fuzz_pack_bytes(data, at, cut):
    real = _real()
    at = at % (len(real) + 1)
    for blob in (data, real[:at] if cut else real[:at] + data + real[at + len(data):]):
        try:
            _read(packs.from_bytes(FOLDER / "p", blob))
        except packs.PackError as err:
            assert str(FOLDER / "p") in str(err)
        (FOLDER / "p").write_bytes(blob)
        try:
            _read(packs.open_pack(FOLDER / "p"))
        except packs.PackError as err:
            assert str(FOLDER / "p") in str(err)


def test_packs_raise_nothing_but_pack_errors_under_memory_and_time_caps():
    done = run_capped("test_fuzz_packs", ["fuzz_pack_bytes"])
    assert done.returncode == 0 and "fuzzed" in done.stdout, done.stderr[-3000:] + replay()
