"""The package's floors (README, Layout): imports go one way, from a higher floor to a lower one, never up
and never between two folders of one floor; no module grows past 600 lines; the root holds only the entry
points and the public reader of answers."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gavel"
#: floor of each top-level part of the package, lowest first
FLOORS = {"core": 0, "llm": 1, "answers": 2, "release": 3, "ref": 4, "runs": 5, "metrics": 6, "documents": 7,
          "paper": 8, "report": 9, "annotation": 10, "interop": 11, "cli": 12, "__main__": 13}
MAX_LINES = 600


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
        package = ".".join(rel[:-1])
        yield path, name, package


def _imports(path: Path, package: str):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base == "gavel":
                yield from (f"gavel.{a.name}" for a in node.names)
            elif base.startswith("gavel."):
                yield base
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("gavel."))


def _floor(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_part_of_the_package_has_a_floor():
    parts = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")}
    assert parts <= set(FLOORS), f"not on a floor: {sorted(parts - set(FLOORS))}"


def test_imports_go_down_the_floors_only():
    wrong = []
    for path, name, package in _modules():
        here = _floor(name)
        if here is None:
            continue
        for target in _imports(path, package):
            there = _floor(target)
            if there is None or there == here:
                continue
            if FLOORS[there] >= FLOORS[here]:
                wrong.append(f"{name} imports {target} ({here} is floor {FLOORS[here]}, {there} floor {FLOORS[there]})")
    assert not wrong, "\n".join(wrong)


def _module_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports, anywhere in its file (a function's own imports too)."""
    names = {name for _, name, _ in _modules()}
    graph = {}
    for path, name, package in _modules():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            found = []
            if isinstance(node, ast.ImportFrom):
                parts = package.split(".")
                base = (".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                        if node.level else node.module or "")
                # ``from gavel.runs import pipeline`` imports the module gavel.runs.pipeline; ``from x import f``, x
                found = [f"{base}.{a.name}" if f"{base}.{a.name}" in names else base for a in node.names]
            elif isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            for target in found:
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    targets.add(target)
        graph[name] = targets
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan), each sorted."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_circle_of_imports_between_modules():
    """No two modules import each other, directly or round a circle of several, counting imports inside
    functions: the arrows of the package run one way."""
    assert not _circles(_module_graph()), _circles(_module_graph())


def test_the_circle_check_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_every_folder_says_what_its_room_is_for():
    """Each folder of the package opens with a docstring that says what the room holds."""
    missing = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        if not doc or len(doc.split()) < 8:
            missing.append(str(init.relative_to(PACKAGE.parent)))
    assert not missing, missing


def test_the_layout_doc_names_every_floor_and_its_map_points_at_real_files():
    """docs/layout.md lists every floor of this test's FLOORS, in order, and every file its newcomer's map
    names (a new relation label, a provider, a report view, ...) exists."""
    import re

    doc = (PACKAGE.parent / "docs" / "layout.md").read_text(encoding="utf-8")
    table = [m.group(1) for m in re.finditer(r"^\| `gavel/(\w+)(?:/|\.py)`", doc, re.M)]
    assert table == [f for f in FLOORS if f != "__main__"], table
    where = doc[doc.index("## Where a change goes"):]
    named = set(re.findall(r"`((?:gavel|prompts|docs|tests)/[\w/.-]+\.(?:py|txt|md|yaml|j2|js|css))`", where))
    assert len(named) >= 10, named
    missing = sorted(n for n in named if not (PACKAGE.parent / n).exists())
    assert not missing, missing
    for question in ("a fifth relation label", "a provider", "a report view"):
        assert question in where.lower(), question


def test_no_module_is_longer_than_the_limit():
    long = {str(p.relative_to(PACKAGE.parent)): n for p, _, _ in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, long


def test_provider_names_are_defined_once_and_each_builds_its_provider():
    import pytest

    from gavel.core.vocab import PROVIDERS
    from gavel.llm import registry
    from gavel.llm.providers import MODULES, provider_class

    assert tuple(MODULES) == PROVIDERS and registry.PROVIDERS is PROVIDERS
    for name in PROVIDERS:
        assert provider_class(name).name in PROVIDERS
    with pytest.raises(ValueError, match="unknown provider 'azure'"):
        provider_class("azure")


def test_provider_capabilities_are_attributes_of_the_providers():
    """Which providers serve any registry model and which take a sampling seed: each provider says so itself
    (no list of names elsewhere can disagree with it)."""
    from gavel.llm.providers import provider_class

    serves = {n for n in ("openai", "anthropic", "gemini", "vllm", "vllm-batch", "local", "mock", "replay")
              if provider_class(n).serves_any_model}
    seeded = {n for n in ("openai", "anthropic", "gemini", "vllm", "vllm-batch", "local", "mock", "replay")
              if provider_class(n).takes_seed}
    assert serves == {"vllm", "vllm-batch", "local", "mock"}
    assert seeded == {"openai", "vllm", "vllm-batch", "local", "mock"}


def _reads_environment(tree: ast.AST) -> list[int]:
    """Lines that read os.environ (``.get``, a subscript load, ``in``) or call os.getenv; writes such as
    ``os.environ[X] = v`` and copies for a child process (``{**os.environ}``) are not reads of a setting."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr == "getenv" and isinstance(f.value, ast.Name) and f.value.id == "os":
                lines.append(node.lineno)
            if f.attr == "get" and ast.unparse(f.value) == "os.environ":
                lines.append(node.lineno)
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and ast.unparse(node.value) == "os.environ":
            lines.append(node.lineno)
        if isinstance(node, ast.Compare) and any(ast.unparse(c) == "os.environ" for c in node.comparators):
            lines.append(node.lineno)
    return lines


def test_settings_are_read_in_one_place_and_listed_once():
    """Every environment variable is declared in config.ENVIRONMENT and read through config.env: no other
    module reads os.environ, every name a module asks for is declared, and docs/settings.md's table and
    .env.example name only declared variables (docs/settings.md all of them)."""
    import re

    from gavel.core import config

    readers = {str(p.relative_to(PACKAGE)): lines for p, _, _ in _modules()
               if (lines := _reads_environment(ast.parse(p.read_text()))) and p.name != "config.py"}
    assert readers == {}, f"os.environ read outside gavel/core/config.py: {readers}"
    asked = set()
    for path, _, _ in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("env", "config.env") and node.args \
                    and isinstance(node.args[0], ast.Constant):
                asked.add(node.args[0].value)
    assert asked and asked <= set(config.ENVIRONMENT), asked - set(config.ENVIRONMENT)
    readme = (PACKAGE.parent / "docs" / "settings.md").read_text()
    table = readme.split("## Settings: the environment and `.env`")[1].split("\n## ")[0]
    assert re.findall(r"^\| `([A-Z_]+)` \|", table, re.M) == list(config.ENVIRONMENT)
    example = re.findall(r"^([A-Z_]+)=", (PACKAGE.parent / ".env.example").read_text(), re.M)
    assert example and set(example) <= set(config.ENVIRONMENT), set(example) - set(config.ENVIRONMENT)


def test_an_undeclared_setting_is_refused_by_name(monkeypatch):
    import pytest

    from gavel.core import config

    monkeypatch.setenv("GAVEL_RELAESE", "/typo")
    with pytest.raises(config.UnknownSettingError, match="GAVEL_RELAESE is not one of gavel's settings"):
        config.env("GAVEL_RELAESE")
    assert config.env("GAVEL_RELAESE", named_by_user=True) == "/typo"  # `annotate adduser --password-env`
    monkeypatch.setenv("GAVEL_FIGURES_DIR", "")
    assert config.env("GAVEL_FIGURES_DIR") is None  # empty is unset


def test_the_longest_test_files_named_for_the_scheduler_exist():
    """conftest.LONGEST_FIRST orders the work of `make test`'s workers (test files and notebooks): a renamed
    file would silently drop out."""
    tree = ast.parse((PACKAGE.parent / "conftest.py").read_text())  # read, not run: importing it has effects
    (names,) = [ast.literal_eval(n.value) for n in tree.body
                if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "LONGEST_FIRST"]
    missing = [n for n in names if not (PACKAGE.parent / "tests" / f"{n}.py").is_file()
               and not (PACKAGE.parent / "notebooks" / f"{n}.ipynb").is_file()]
    assert names and missing == []
