"""Repository-wide pytest setup (also applies to the notebooks that nbval runs).

Figures written while notebooks run under test go to a temporary folder, never into figures/. The item
explorer notebook needs the release: without it (and outside CI) it is skipped with the reason shown."""

import os
import re
import tempfile

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["GAVEL_FIGURES_DIR"] = tempfile.mkdtemp(prefix="gavel-figures-")


#: notebooks that must run in order on one worker: each reads what the one before it wrote
_CHAINED_NOTEBOOKS = re.compile(r"notebooks[/\\](09|10|11|12)_")


def pytest_collection_modifyitems(config, items):
    # pytest-xdist (`make test` runs `--dist loadgroup`): one group per test file, so a file's module- and
    # session-scoped servers (llama.cpp, PostgreSQL, Chromium, SLURM) start once on one worker; the chained
    # GAVEL-REF notebooks 09-12 form one group, run in order
    for item in items:
        path = str(item.fspath)
        group = "ref-notebooks" if _CHAINED_NOTEBOOKS.search(path) else os.path.relpath(path, str(config.rootpath))
        item.add_marker(pytest.mark.xdist_group(group))
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
