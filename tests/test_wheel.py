"""A plain (non-editable) install works: the wheel carries the prompts, SLURM templates, models.yaml, criteria,
example checklists and the annotation app's templates, and a fresh venv holding only that wheel (its
dependencies borrowed from the project's venv) runs `gavel evaluate --provider mock` outside the checkout and
the figure notebooks of `make figures` against the checkout's committed tables."""

import json
import os
import re
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _figure_notebooks() -> list[str]:
    make = (ROOT / "Makefile").read_text()
    return re.findall(r"^\$\(eval \$\(call figure_notebook,([^,]+),", make, re.M)


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(base / "dist"), str(ROOT)], check=True, capture_output=True, timeout=600)
    (wheel,) = (base / "dist").glob("gavel-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    with zipfile.ZipFile(wheel) as zf:  # installing a wheel is unpacking it into site-packages
        zf.extractall(purelib)
    # the dependencies come from the project's venv, as a plain path: its .pth files (the editable gavel) are
    # not processed, so the only gavel this interpreter can import is the wheel's
    deps = [p for p in site.getsitepackages() if p.endswith("site-packages")]
    Path(purelib, "project-deps.pth").write_text("\n".join(deps) + "\n")
    return wheel, py


def test_the_wheel_carries_every_data_file(wheel_venv):
    wheel, _ = wheel_venv
    names = set(zipfile.ZipFile(wheel).namelist())
    for prompt in (ROOT / "prompts").glob("*.txt"):
        assert f"gavel/prompts/{prompt.name}" in names
    for must in ("gavel/slurm/vllm_stage.sbatch.in", "gavel/slurm/agent_array.sbatch.in", "gavel/core/models.yaml",
                 "gavel/paper/paper_claims.yaml", "gavel/metrics/criteria/legal_summary.yaml",
                 "gavel/annotation/templates/style.html", "gavel/annotation/static/annotate.js",
                 "gavel/report/templates/report.html.j2", "gavel/report/templates/report.js",
                 "gavel/report/templates/report.css"):
        assert must in names, must
    assert {"gavel/core/checklists/legal.yaml", "gavel/core/checklists/court_outcome.yaml",
            "gavel/core/checklists/research_paper.yaml"} <= set(names)


def test_the_wheel_runs_evaluate_with_the_mock_provider_outside_the_checkout(wheel_venv, tmp_path):
    _, py = wheel_venv
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GAVEL_HOME")}
    where = subprocess.run([str(py), "-c", "import gavel, gavel.core.config as c; print(gavel.__file__); "
                            "print(c.PROMPTS_DIR)"], cwd=tmp_path, capture_output=True, text=True, check=True,
                           env=env)
    package, prompts = where.stdout.split()
    assert not Path(package).is_relative_to(ROOT), "the checkout's gavel was imported, not the wheel's"
    assert Path(prompts, "extract.txt").is_file()
    (tmp_path / "s.jsonl").write_text(json.dumps({"case_id": "1", "summary": "The court approved a settlement "
                                                  "in 2019."}) + "\n")
    (tmp_path / "refs.json").write_text('{"1": "The parties settled in 2019; the court approved it."}')
    done = subprocess.run([str(py), "-m", "gavel", "evaluate", "--summaries", "s.jsonl", "--references",
                           "refs.json", "--provider", "mock", "--out", "out", "--items", "filing_date"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "out" / "scores.csv").is_file()


def test_the_wheel_runs_the_figure_notebooks(wheel_venv, tmp_path):
    _, py = wheel_venv
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(GAVEL_HOME=str(ROOT), GAVEL_FIGURES_DIR=str(tmp_path / "figures"))
    env.pop("GAVEL_RELEASE", None)  # `make figures` needs no release
    kernel = subprocess.run([str(py), "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3"],
                            capture_output=True, text=True, env=env)
    assert kernel.returncode == 0, kernel.stderr
    notebooks = _figure_notebooks()
    assert len(notebooks) >= 8
    for name in notebooks:
        done = subprocess.run([str(py), "-m", "papermill", "--log-level", "WARNING", "--no-progress-bar", "-k",
                               "python3", str(ROOT / "notebooks" / f"{name}.ipynb"), str(tmp_path / f"{name}.ipynb")],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, f"{name}: {done.stderr[-2000:]}"
        ran = json.loads((tmp_path / f"{name}.ipynb").read_text())
        code = "".join("".join(c["source"]) for c in ran["cells"] if c["cell_type"] == "code")
        assert "gavel" in code
    assert len(list((tmp_path / "figures").glob("*.png"))) >= 8
