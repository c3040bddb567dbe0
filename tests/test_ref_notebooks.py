"""The GAVEL-REF notebooks rerun with new parameters (papermill -p), on the stand-in model: tables are
written, and a second run of an unchanged evaluation sends nothing."""

import json

import papermill as pm

from gavel.core import config


def _execute(name, tmp_path, **params):
    pm.execute_notebook(str(config.REPO_ROOT / "notebooks" / f"{name}.ipynb"), str(tmp_path / f"{name}.out.ipynb"),
                        parameters=params, kernel_name="python3", progress_bar=False,
                        cwd=str(config.REPO_ROOT / "notebooks"))


def test_evaluation_notebook_reruns_with_new_parameters(tmp_path):
    out = tmp_path / "ref"
    _execute("11_ref_evaluation", tmp_path, items=["Court Rulings", "Appeal"], out=str(out))
    manifest = json.loads((out / "evaluation.json").read_text())
    assert manifest["items"] == ["court_rulings", "appeals"] and manifest["sent"]["extract"] == 8
    assert (out / "model_scores.csv").exists() and (out / "compare.csv").exists() and (out / "cost.csv").exists()
    _execute("11_ref_evaluation", tmp_path, items=["Court Rulings", "Appeal"], out=str(out))
    again = json.loads((out / "evaluation.json").read_text())
    assert sum(again["sent"].values()) == 0
    _execute("12_ref_analysis", tmp_path, out=str(out))
