"""Seeded fuzzing (issue 46, section 5): every fuzz target (tests/test_fuzz_*.py) draws its examples from one
seed per test run. The seed is ``GAVEL_FUZZ_SEED`` when it is set (to replay a failure), else a fresh random
one, written back into the environment so that the capped child processes of a target draw from the same
seed. pytest prints it in its header (tests/conftest.py) and every fuzz target's failure message names it:
``GAVEL_FUZZ_SEED=N pytest tests/test_fuzz_x.py`` replays the run. The examples differ from run to run (no
``derandomize``, no example database), so each CI run tries new ones; the counts and caps stay as set.

Text strategies draw from all of Unicode, lone surrogates included (``any_text``), where the boundary can
receive them: text read from JSON (``"\\ud800"`` parses to a lone surrogate) or from a model's answer."""

from __future__ import annotations

import os
import secrets

from hypothesis import HealthCheck, settings
from hypothesis import seed as fixed_seed
from hypothesis import strategies as st

ENV = "GAVEL_FUZZ_SEED"


def seed() -> int:
    """This run's seed: ``GAVEL_FUZZ_SEED``, or a new random one (then set, for child processes)."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        value = str(secrets.randbelow(2**32))
        os.environ[ENV] = value
    try:
        return int(value)
    except ValueError:
        raise SystemExit(f"error: {ENV}={value!r} is not a whole number (the seed a fuzz run printed)") from None


def replay() -> str:
    """The words a failure message ends with."""
    return f"(replay with {ENV}={seed()})"


def fuzz(max_examples: int, **kw):
    """A hypothesis target's settings, seeded: ``@fuzz(40)`` above ``@given(...)``. No deadline (a busy
    machine is no failure), no example database, every health check off (the strategies are large on
    purpose)."""
    chosen = settings(max_examples=max_examples, deadline=kw.pop("deadline", None), database=None,
                      derandomize=False, suppress_health_check=list(HealthCheck), **kw)

    def wrap(target):
        return fixed_seed(seed())(chosen(target))

    return wrap


#: every code point, the surrogates U+D800..U+DFFF too (hypothesis's default leaves them out; drawn apart as
#: well, or 2,048 of 1.1 million code points would hardly ever come up)
SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, blacklist_categories=())
ANY_CHARACTER = st.characters(blacklist_categories=()) | SURROGATE


def any_text(min_size: int = 0, max_size: int | None = None) -> st.SearchStrategy[str]:
    """Text over all of Unicode: about half the texts with lone surrogates among their characters, half
    without (so that the rest of a target is reached too). Built as a list of characters joined: hypothesis's
    own ``text`` merges its alphabet into one that leaves the surrogates out again."""
    return st.text(min_size=min_size, max_size=max_size) | \
        st.lists(ANY_CHARACTER, min_size=min_size, max_size=max_size).map("".join)


def run_capped(module: str, targets: list[str], memory: int = 2 * 2**30, timeout: float = 240,
               env: dict | None = None):
    """Run ``module.target()`` for each of ``targets`` (fuzz targets of a tests/ module) in a child process under
    an address-space cap of ``memory`` bytes and a wall-clock ``timeout``, from this run's seed (the child
    inherits ``GAVEL_FUZZ_SEED``); it prints ``fuzzed`` when all ended. Returns the finished process."""
    import resource
    import subprocess
    import sys
    from pathlib import Path

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    here = Path(__file__).parent
    seed()  # set, so that the child draws from this run's seed
    code = (f"import sys; sys.path[:0] = [{str(here)!r}, {str(here.parent)!r}]; import {module} as t; "
            + "".join(f"t.{name}(); " for name in targets) + "print('fuzzed')")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=limit, env={**os.environ, **(env or {})}, cwd=here.parent)
