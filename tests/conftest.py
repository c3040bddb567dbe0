"""Shared fixtures. The release tests need the public release (GAVEL_RELEASE); in CI (CI=true) its
absence is an error, elsewhere those tests are skipped with the reason printed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from needs import unavailable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# argon2-cffi's cheapest parameters for the tests' hundreds of password hashes (the production default costs
# a fraction of a second each, on purpose); test_annotation_store.py checks the default when this is unset
os.environ.setdefault("GAVEL_PASSWORD_HASH_PROFILE", "CHEAPEST")
sys.path.insert(0, str(Path(__file__).parent))

import fixture_release  # noqa: E402

from gavel.core import config  # noqa: E402


@pytest.fixture(scope="session")
def fixture_root(tmp_path_factory) -> Path:
    return fixture_release.build(tmp_path_factory.mktemp("release"))


@pytest.fixture(scope="session")
def fixture_rel(fixture_root):
    from gavel.release import load_release

    return load_release(fixture_root)


@pytest.fixture(scope="session")
def release_root() -> Path:
    """The shared release's data folder (GAVEL_RELEASE): missing in CI is an error, elsewhere a skip."""
    try:
        return config.release_root()
    except config.ReleaseNotFoundError as err:
        unavailable(f"the release is missing: {err}")


@pytest.fixture(scope="session")
def shared_rel():
    from gavel.release import load_release

    try:
        root = config.release_root()
    except config.ReleaseNotFoundError as err:
        unavailable(f"the release is missing: {err}")
    return load_release(root)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real one-node SLURM cluster on loopback (Debian slurm-wlm + munge; .ci/run installs them). Missing
    binaries fail the test in CI and skip it, with the reason, elsewhere. All daemons are stopped after."""
    from slurm_cluster import SlurmCluster, missing_binaries

    missing = missing_binaries()
    if missing:
        msg = f"SLURM test needs {', '.join(missing)} (apt-get install slurm-wlm munge)"
        unavailable(msg)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm")).start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    """A real PostgreSQL server on 127.0.0.1 in a temporary folder (Debian postgresql); stopped after.
    Missing binaries fail the test in CI and skip it, with the reason, elsewhere."""
    from pg_server import PgServer, missing

    reason = missing()
    if reason:
        unavailable(reason)
    # its own folder, not under pytest's basetemp (pytest prunes old basetemps of concurrent runs)
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="gavel-pg-"))
    server = PgServer(root / "pg", discard=root).start()
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium (Debian's, driven by Playwright) per test process; missing: unavailable."""
    import shutil

    from needs import need_module

    need_module("playwright", "browser tests need the playwright package (annotation extra)")
    from playwright.sync_api import sync_playwright

    path = os.environ.get("GAVEL_CHROMIUM", "/usr/bin/chromium")
    if not shutil.which(path) and not os.path.exists(path):
        unavailable(f"browser tests need chromium at {path} (apt-get install chromium; make system-deps)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                    "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


def pytest_report_header(config):
    """The fuzz targets' seed (tests/fuzzing.py), printed so a failing run can be replayed."""
    import fuzzing

    return f"fuzz seed: {fuzzing.ENV}={fuzzing.seed()} (set it to replay this run's fuzz examples)"
