"""Repository-wide pytest setup (also applies to the notebooks that nbval runs).

Figures written while notebooks run under test go to a temporary folder, never into figures/. The item
explorer notebook needs the release: without it (and outside CI) it is skipped with the reason shown.

Nothing outlives a test run (tests/reaper.py): each run (a pytest started by a test included; an xdist
worker belongs to its controller's run) puts a token of its own in its environment, which every process it
starts inherits, and makes one temporary folder (``gavel-test-run-*``, its processes' TMPDIR) for what they
write. When the run ends, however it ends (a SIGKILL of the whole run included), a watchdog kills every
process still carrying the token, waits for the run's other watchdogs (PostgreSQL's) and removes the
folder."""

import os
import re
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))
from reaper import MARK, Watchdog  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
RUN_DIR = "GAVEL_TEST_RUN_DIR"  # the run's temporary folder, removed when the run ends


def _own_run() -> bool:
    """True for an xdist worker of the run that started it (its token names its parent), False for a run
    of its own (a pytest started by hand, or by a test of another run)."""
    owner = os.environ.get(MARK, "").split("-")[0]
    return bool(os.environ.get("PYTEST_XDIST_WORKER")) and owner.isdigit() and int(owner) == os.getppid() \
        and os.path.isdir(os.environ.get(RUN_DIR, ""))


if not _own_run():
    os.environ[MARK] = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
    # pytest's own numbered folders stay where they were (it keeps its last three runs', for a look after a
    # failure); every other temporary file of the run's processes (browser profiles, servers' folders and
    # logs) goes into the run's folder: TMPDIR
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
    os.environ[RUN_DIR] = os.environ["TMPDIR"] = tempfile.mkdtemp(prefix="gavel-test-run-")
    os.chmod(os.environ[RUN_DIR], 0o711)  # PostgreSQL, run as its own user, reaches its folder inside
    tempfile.tempdir = None  # tempfile reads TMPDIR again
    _WATCHDOG = Watchdog([], os.environ[RUN_DIR], kill=f"{MARK}={os.environ[MARK]}")
_FIGURES = os.environ["GAVEL_FIGURES_DIR"] = tempfile.mkdtemp(prefix="figures-", dir=os.environ[RUN_DIR])


def pytest_unconfigure(config):
    shutil.rmtree(_FIGURES, ignore_errors=True)  # each test process made its own (the watchdog: the rest)


#: notebooks that must run in order on one worker: each reads what the one before it wrote
_CHAINED_NOTEBOOKS = re.compile(r"notebooks[/\\](09|10|11|12)_")
#: the test files that take longest, longest first. They are handed out first, so the short files fill the
#: gaps at the end instead of one long file running alone while the other workers wait; every other file
#: keeps its collection order after them. From the fresh-clone CI at e675dd2 (`benchmarks/suite_files.py`
#: on its JUnit report; the machine busy with a benchmark beside it): the files of at least 40 s, 4,852 s of
#: tests in all over 3 workers, a bound of 1,617 s that `make test` came within 4% of (1,688 s). `.ci/run`
#: prints each run's per-file seconds against this list: keep it current from there. One exception to the
#: order: the browser tests go third, so Chromium starts within seconds beside the first files' llama.cpp
#: servers, and .ci/run's killed run (at servers of two kinds) is killed half a minute in, not after 150 s
#: of the local model alone (stop 53's CI).
LONGEST_FIRST = ("test_checklist_providers", "test_local_model", "test_annotation_browser", "test_checklist_local",
                 "test_first_run_local", "test_orders", "test_stability", "test_annotation_dashboard",
                 "test_inspect_local", "test_pipeline_local", "test_documents_local", "test_annotation_processes",
                 "test_metrics_local", "test_llm", "test_sharding", "test_wheel", "test_documents",
                 "test_annotation_store", "test_inspect", "test_providers_hardening", "test_metaeval", "test_slurm",
                 "test_slurm_array", "test_release_corruption_shared", "test_evaluate_hardening", "test_metrics",
                 "test_metaeval_local")


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist (`make test` runs `--dist loadscope`): a test file is one unit of work, so its module- and
    session-scoped servers (llama.cpp, PostgreSQL, Chromium, SLURM) start once on one worker and a notebook's
    cells run in order in one kernel; the chained GAVEL-REF notebooks 09-12 are one unit, run in order."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # hand out files in collection order: LONGEST_FIRST, then the rest

    class ChainedScopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "ref-notebooks" if _CHAINED_NOTEBOOKS.search(nodeid) else super()._split_scope(nodeid)

    return ChainedScopes(config, log)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: order within a file is kept
    from gavel.core import config as gconfig

    try:
        gconfig.release_root()
        return
    except gconfig.ReleaseNotFoundError as err:
        if os.environ.get("CI"):
            return  # in CI the notebook must run, and fail loudly if the release is missing
        reason = f"needs the GAVEL release: {err}"
    for item in items:
        if any(name in str(item.fspath) for name in ("07_item_explorer", "13_meta_evaluation", "14_document_methods")):
            item.add_marker(pytest.mark.skip(reason=reason))
