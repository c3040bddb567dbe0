"""`make figures`: the figure files are the targets (issue 14). Checked with `make -n` (what make would run),
so the test needs no papermill run: a deleted figure, or a changed label file, makes its notebook run again."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _make(*args, cwd):
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


@pytest.fixture()
def tree(tmp_path):
    """A copy of what make looks at, with every figure present and newer than its inputs."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    for folder in ("notebooks", "data/results", "gavel"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("executed", "__pycache__"))
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / ".installed").touch()
    files = _make("list-figures", cwd=tmp_path).stdout.split()
    assert len(files) >= 18 and all(f.startswith("figures/") for f in files)
    (tmp_path / "figures").mkdir()
    later = os.path.getmtime(tmp_path / "Makefile") + 10
    for f in files:
        (tmp_path / f).write_bytes(b"x")
        os.utime(tmp_path / f, (later, later))
    os.utime(tmp_path / ".venv" / ".installed", (later, later))
    return tmp_path, files


def _notebooks_to_run(cwd) -> list[str]:
    out = _make("-n", "figure-files", cwd=cwd).stdout
    return sorted({w for line in out.splitlines() if "papermill" in line for w in line.split()
                   if w.startswith("notebooks/") and not w.startswith("notebooks/executed")})


def test_nothing_to_do_when_up_to_date(tree):
    cwd, _ = tree
    assert _notebooks_to_run(cwd) == []


def test_deleted_figure_reruns_its_notebook_only(tree):
    cwd, _ = tree
    (cwd / "figures" / "fig03_groups.png").unlink()
    assert _notebooks_to_run(cwd) == ["notebooks/02_checklist_groups.ipynb"]


def test_label_change_reruns_every_figure_notebook(tree):
    cwd, files = tree
    later = os.path.getmtime(cwd / files[0]) + 10
    os.utime(cwd / "gavel" / "core" / "models.yaml", (later, later))
    declared = sorted({f"notebooks/{line.split(',')[1]}.ipynb" for line in (cwd / "Makefile").read_text().splitlines()
                       if line.startswith("$(eval $(call figure_notebook,")})
    assert len(declared) >= 8
    assert _notebooks_to_run(cwd) == declared
