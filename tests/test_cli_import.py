"""Issue 38, section 2: the command line starts without the heavy libraries. ``import gavel.cli`` (every
``python -m gavel`` command, ``--help`` included) pulls in neither pandas nor numpy nor the document agent's
machinery; each command imports what it uses when it runs (benchmarks/cli_import.py prints the CPU time)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: what the command line must not import before a command needs it
NOT_AT_START = ("pandas", "numpy", "jsonschema", "sqlalchemy", "flask", "regex", "gavel.documents.agent",
                "gavel.llm.runner", "gavel.release", "gavel.ref", "gavel.runs", "gavel.annotation.app")
HELP = ("import sys, runpy\nsys.argv = ['gavel'{extra}]\ntry:\n    runpy.run_module('gavel', run_name='__main__')\n"
        "except SystemExit:\n    pass\n")


@pytest.mark.parametrize("code", ["import gavel.cli", HELP.format(extra=", '--help'"),
                                  HELP.format(extra=", 'documents', 'agent', '--help'")],
                         ids=["import", "help", "documents-agent-help"])
def test_the_command_line_imports_nothing_it_does_not_need(code):
    probe = code + "\nimport sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] in {'pandas', 'numpy',"\
        " 'jsonschema', 'sqlalchemy', 'flask', 'regex'} or m.startswith(" + repr(NOT_AT_START) + ")))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_agent_commands_keep_the_agents_step_budget():
    from argparse import Namespace

    from gavel.documents import agent
    from gavel.documents.cli import _max_steps

    assert _max_steps(Namespace(max_steps=None)) == agent.MAX_STEPS
    assert _max_steps(Namespace(max_steps=7)) == 7


def test_the_spreadsheet_still_reads_and_writes_frames(tmp_path):
    import pandas as pd

    from gavel.core.spreadsheet import read_csv, write_csv

    frame = pd.DataFrame({"name": ["=SUM(A1)", "'quoted", "plain"], "n": [1, -2, 3]})
    back = read_csv(write_csv(frame, tmp_path / "t.csv"))
    pd.testing.assert_frame_equal(back, frame)


def test_few_collections_raises_the_young_threshold_and_puts_it_back():
    """`gavel results` runs inside ``config.few_collections``: fewer collections while it holds the release,
    the interpreter's own thresholds again afterwards, also when the command fails."""
    import gc

    from gavel.core import config

    before = gc.get_threshold()
    with config.few_collections():
        assert gc.get_threshold() == (config.FEW_COLLECTIONS_GEN0, *before[1:])
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), config.few_collections():
        raise RuntimeError("a failing command")
    assert gc.get_threshold() == before


@pytest.mark.parametrize("name", ["core/models.yaml", "core/prices.yaml", "paper/paper_claims.yaml"])
def test_the_package_yaml_files_read_as_safe_load_reads_them(name):
    """``config.package_yaml`` (libyaml's parser where PyYAML has it) gives the values ``yaml.safe_load``
    gives, with their types (reprs compared: 1, 1.0 and True are equal but not the same)."""
    import yaml

    from gavel.core import config

    text = (REPO / "gavel" / name).read_text(encoding="utf-8")
    assert repr(config.package_yaml(text)) == repr(yaml.safe_load(text))
