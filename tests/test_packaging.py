"""The repository's own wiring: dependencies agree, the Makefile documents itself, CI runs the tests."""

import re
import subprocess
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in py["dependencies"]}
    for extra, reqs in py["optional-dependencies"].items():
        if extra != "vllm":  # GPU-only extra, documented in environment.yml
            wanted |= {_name(r) for r in reqs}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    listed = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            listed |= {_name(d) for d in dep["pip"] if not d.startswith("-e")}
        else:
            listed.add(_name(dep))
    listed -= {"python", "pip"}
    assert listed == wanted


def test_makefile_targets_are_documented():
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for target in ["install", "data", "audit", "results", "figures", "test", "lint"]:
        assert re.search(rf"make {target}\s+\S", out), target


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and re.search(r'^(step "[^"]*" )?make test$', ci, re.M)
