"""Repository-wide pytest setup (also applies to the notebooks that nbval runs).

Figures written while notebooks run under test go to a temporary folder, never into figures/. The item
explorer notebook needs the release: without it (and outside CI) it is skipped with the reason shown."""

import os
import re
import tempfile

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
_FIGURES = os.environ["GAVEL_FIGURES_DIR"] = tempfile.mkdtemp(prefix="gavel-figures-")


def pytest_unconfigure(config):
    import shutil

    shutil.rmtree(_FIGURES, ignore_errors=True)  # each test process made its own


#: notebooks that must run in order on one worker: each reads what the one before it wrote
_CHAINED_NOTEBOOKS = re.compile(r"notebooks[/\\](09|10|11|12)_")


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist (`make test` runs `--dist loadscope`): a test file is one unit of work, so its module- and
    session-scoped servers (llama.cpp, PostgreSQL, Chromium, SLURM) start once on one worker and a notebook's
    cells run in order in one kernel; the chained GAVEL-REF notebooks 09-12 are one unit, run in order."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ChainedScopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "ref-notebooks" if _CHAINED_NOTEBOOKS.search(nodeid) else super()._split_scope(nodeid)

    return ChainedScopes(config, log)


def pytest_collection_modifyitems(config, items):
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
