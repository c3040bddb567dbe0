"""The manual is checked against the code: every page of docs/ and the README names files that exist, links
to pages that exist, and gives `python -m gavel` commands whose subcommands and options exist and `make`
targets the Makefile has. A renamed file, a removed option or a dropped command fails here."""

from __future__ import annotations

import contextlib
import io
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: top-level folders whose files the docs name by their path from the repository root
CHECKED_DIRS = ("gavel/", "tests/", "benchmarks/", "notebooks/", "docs/", "prompts/", "slurm/", ".ci/")
#: paths that runs create (not in a checkout)
RUNTIME = ("data/interim", "data/external", "notebooks/executed", "docs/report")
PATH = re.compile(r"`(\.?[A-Za-z0-9_][\w./-]*\.(?:py|ipynb|md|ya?ml|txt|csv|jsonl?|sh|in|png|cfg|toml))(?:::(\w+))?`")
NOTEBOOK = re.compile(r"`(\d\d_[a-z0-9_]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
COMMAND = re.compile(r"(?:python3?|\.venv/bin/python) -m gavel ([^`\n|]*)")
MAKE = re.compile(r"\bmake ([a-z][a-z-]*)")


def _page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _code_lines(text: str):
    """Every line of the page, with shell continuations joined."""
    return text.replace("\\\n", " ").splitlines()


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_the_files_a_page_names_exist(page):
    text = page.read_text(encoding="utf-8")
    missing = []
    for path, test_name in PATH.findall(text):
        if not path.startswith(CHECKED_DIRS) or path.startswith(RUNTIME) or "*" in path:
            continue
        target = ROOT / path
        if not target.exists():
            missing.append(path)
        elif test_name and not re.search(rf"^(async )?def {test_name}\b", target.read_text(encoding="utf-8"), re.M):
            missing.append(f"{path}::{test_name}")
    for name in NOTEBOOK.findall(text):
        if not (ROOT / "notebooks" / f"{name}.ipynb").exists():
            missing.append(f"notebook {name}")
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not (page.parent / target.split("#")[0]).exists():
            missing.append(f"link {target}")
    assert missing == [], f"{_page_id(page)} names what does not exist: {missing}"


@cache
def _help(words: tuple[str, ...]) -> str | None:
    """The --help text of `gavel WORDS`, or None when argparse refuses the words."""
    from gavel import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            cli.main([*words, "--help"])
        except SystemExit as stop:
            if stop.code not in (0, None):
                return None
    return out.getvalue()


def _subcommands(help_text: str) -> set[str]:
    match = re.search(r"\{([\w,-]+)\}", help_text)
    return set(match.group(1).split(",")) if match else set()


def _check_command(words: list[str]) -> list[str]:
    """What is wrong with `python -m gavel WORDS...` (empty when its subcommands and options exist)."""
    path: list[str] = []
    text = _help(())
    for word in words:
        if word.startswith("-") or word not in _subcommands(text):
            break
        path.append(word)
        text = _help(tuple(path))
        if text is None:
            return [f"gavel {' '.join(path)}: no such command"]
    if not path:
        return [f"gavel {words[0] if words else ''}: no such command"]
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))
    wrong = [o for o in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", " ".join(words)) if o not in options]
    return [f"gavel {' '.join(path)}: no option {o}" for o in wrong]


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_the_commands_a_page_gives_exist(page):
    text = page.read_text(encoding="utf-8")
    wrong = []
    for line in _code_lines(text):
        for rest in COMMAND.findall(line):
            words = [w for w in rest.split() if not w.startswith("#")]
            words = words[: next((i for i, w in enumerate(words) if w in ("#", "&&", ";", "|")), len(words))]
            wrong += _check_command(words)
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    code = re.findall(r"```.*?```|`[^`\n]+`", text, re.S)  # make targets are named in code, not in prose
    wrong += [f"make {t}" for span in code for t in MAKE.findall(span) if t not in targets]
    assert wrong == [], f"{_page_id(page)}: {sorted(set(wrong))}"


def test_the_readme_is_a_landing_page_that_links_every_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    linked = {Path(t).name for t in LINK.findall(readme)}
    unlinked = [p.name for p in PAGES[1:] if p.name not in linked]
    assert unlinked == [], f"docs pages the README does not link: {unlinked}"


def test_the_checker_finds_what_is_wrong(tmp_path):
    """The checks above can fail: a wrong subcommand, a wrong option, a missing file."""
    assert _check_command(["evaluate", "--summaries", "x", "--no-such-option"]) == [
        "gavel evaluate: no option --no-such-option"]
    assert _check_command(["evaluat"]) == ["gavel evaluat: no such command"]
    assert _check_command(["documents", "agent", "CASE", "--config", "individual"]) == []
    assert _check_command(["annotate", "assign", "--k-long", "3"]) == []
    assert PATH.findall("`gavel/core/nothing.py`") == [("gavel/core/nothing.py", "")]
    assert MAKE.findall("`make figures`") == ["figures"]
