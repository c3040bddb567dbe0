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
    assert "make test" in readme and re.search(r'^(step "[^"]*" )?(env (\S+=\S+ )+)?make test$', ci, re.M)


def test_a_missing_extra_skips_outside_ci_and_fails_in_ci(tmp_path):
    """tests/needs.py: one rule for what cannot run here. The same test file, once without CI (skipped, the
    reason printed) and once with CI=true (failed): CI never passes by skipping."""
    import os
    import sys

    (tmp_path / "test_x.py").write_text(
        "import sys\nsys.path.insert(0, {!r})\nfrom needs import need_module\n"
        "need_module('no_such_module_gavel', 'the x extra is not installed')\n"
        "def test_x():\n    pass\n".format(str(ROOT / "tests")))
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "test_x.py"],
                         cwd=tmp_path, capture_output=True, text=True, env=env)
    assert out.returncode in (0, 5) and "1 skipped" in out.stdout  # 5: the module skipped, nothing ran and "the x extra is not installed" in out.stdout
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py"],
                         cwd=tmp_path, capture_output=True, text=True, env={**env, "CI": "true"})
    assert out.returncode != 0 and "CI must run this test" in out.stdout
