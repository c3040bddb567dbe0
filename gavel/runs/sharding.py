"""Many processes, one result: ``gavel evaluate --shard I/N`` and ``gavel merge`` (issue 48 §3).

A shard is the run of the cases whose id hashes to I of N (``gavel.core.shards``), anywhere: another machine,
a SLURM array task, a separate process. Its folder holds ``shard.json``: the shard, the command's settings,
the SHA-256 of every input file, its cases, and ``complete`` (written false when it starts, true only when
every request was answered). ``gavel merge SHARD_DIR... --out RUN`` checks that the N shards are all there,
complete and of one run (same settings, same inputs, unchanged since), copies their answers into RUN's caches
and runs the same evaluation over all the summaries there: every answer is cached, nothing is sent, and the
tables, comparisons and report are those of the single-process run, byte for byte. A missing, partial,
foreign or tampered shard is named and nothing is merged. Shard folders are untrusted input: a record that
is not what gavel writes is refused in one line naming the file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import stat
from pathlib import Path

from gavel.core import options, shards
from gavel.core.spreadsheet import read_csv
from gavel.llm import ledger, packs
from gavel.ref.inputs import InputError

SHARD_FILE = "shard.json"
#: the settings a shard records (the command line of `gavel evaluate`, less where it writes and which shard)
NOT_SETTINGS = ("func", "shard", "out", "command", "traceback")
#: path options recorded as absolute paths (a merge reads the same files)
PATH_OPTIONS = ("references", "release", "gguf")
#: what a cache file is called (a StageRunner key: readable prefix, a dash, 40 hex digits)
CACHE_NAME = re.compile(r"[A-Za-z0-9_.:=+-]{1,64}\.json")
CACHE_DIR = re.compile(r"[0-9a-f]{2}")
#: missing shards a refused merge names one by one (the rest are counted)
NAMED = 20


def _sha256(path: Path) -> str:
    """The SHA-256 of a regular file: opened first (not through a link, not waiting on a FIFO), then checked
    (a path a shard record names could be /dev/zero, a FIFO or a folder: OSError, never a read without end)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(f"{path}: not a regular file")
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _abs(value):
    return str(Path(value).expanduser().resolve()) if value else value


def settings_of(args: argparse.Namespace) -> dict:
    """The command's settings as a shard records them: input paths absolute."""
    rec = {k: v for k, v in sorted(vars(args).items()) if k not in NOT_SETTINGS}
    rec["summaries"] = [_abs(p) for p in rec.get("summaries") or []]
    for k in PATH_OPTIONS:
        rec[k] = _abs(rec.get(k))
    return rec


def _input_files(settings: dict) -> list[str]:
    """The input files a shard's settings name (its summaries and references; a folder of logs is none)."""
    return [p for p in [*settings["summaries"], settings.get("references")] if isinstance(p, str) and p]


def _inputs(settings: dict) -> dict[str, str]:
    digests = {}
    for p in _input_files(settings):
        try:
            digests[p] = _sha256(Path(p))
        except (OSError, ValueError):  # a folder (inspect logs), or no file gavel can hash: its cases are recorded
            continue
    return digests


def select(summaries: list[tuple[str, str, str]], args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """With ``--shard I/N``: the summaries of shard I's cases, and ``shard.json`` written (``complete`` false).
    Without it: the summaries as they are."""
    if not getattr(args, "shard", None):
        return summaries
    i, n = args.shard
    mine = [s for s in summaries if shards.shard_of(s[1], n) == i]
    settings = settings_of(args)
    record = {"shard": [i, n], "complete": False, "settings": settings, "inputs": _inputs(settings),
              "cases": sorted({c for _, c, _ in mine}), "summaries": len(mine)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / SHARD_FILE).write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
    print(f"shard {i}/{n}: {len(mine)} of {len(summaries)} summaries "
          f"({len(record['cases'])} cases); {out / SHARD_FILE}", flush=True)
    if not mine:
        raise EmptyShard(f"shard {i}/{n} holds none of the {len({c for _, c, _ in summaries})} cases: nothing to "
                         "evaluate; complete (it merges as it is)")
    return mine


class EmptyShard(Exception):
    """A shard that holds none of the run's cases (a few cases in many shards): complete with nothing in it."""


def run_shard(evaluate, args: argparse.Namespace) -> int:
    """``evaluate(args)``; with ``--shard``, ``shard.json`` says ``complete`` only when it returned 0 (a shard
    holding no case is complete at once)."""
    try:
        rc = evaluate(args)
    except EmptyShard as said:
        print(said, flush=True)
        rc = 0
    path = Path(args.out) / SHARD_FILE
    if getattr(args, "shard", None) and not args.dry_run and path.exists():
        record = json.loads(path.read_text(encoding="utf-8"))
        record["complete"] = rc == 0
        record["exit_status"] = rc
        path.write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
    return rc


def guard(provider, args: argparse.Namespace):
    """In a merge, the provider never sends: the runner asks ``check_ready`` before it sends anything, and here
    that refuses (a shard folder's settings, address included, are someone else's: nothing reaches them)."""
    if getattr(args, "merging", False):
        def refuse():
            raise InputError("not merged: the shards lack answers this run needs (a shard's cache was emptied or "
                             "changed); nothing was sent")

        provider.check_ready = refuse
    return provider


def read_shard(folder: Path) -> dict:
    """A shard folder's ``shard.json``, checked field by field (untrusted input); InputError naming it."""
    path = Path(folder) / SHARD_FILE
    try:
        with open(path, "rb") as fh:
            record = json.loads(fh.read(1 << 24).decode("utf-8"))
    except FileNotFoundError:
        raise InputError(f"{folder}: not a shard folder (no {SHARD_FILE}; made by `gavel evaluate --shard I/N`)") \
            from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path}: unreadable ({type(err).__name__}: {str(err)[:120]})") from None
    shard = record.get("shard") if isinstance(record, dict) else None
    ok = (isinstance(shard, list) and len(shard) == 2 and all(type(x) is int for x in shard)
          and 1 <= shard[0] <= shard[1] <= shards.MAX and isinstance(record.get("settings"), dict)
          and isinstance(record.get("inputs"), dict) and type(record.get("complete")) is bool
          and isinstance(record.get("cases"), list) and all(isinstance(c, str) for c in record["cases"])
          and all(isinstance(k, str) and isinstance(v, str) for k, v in record["inputs"].items())
          and isinstance(record["settings"].get("summaries"), list))
    if not ok:
        raise InputError(f"{path}: not a shard record gavel writes (shard [I, N] with N <= {shards.MAX:,}, settings, "
                         "inputs, cases, complete)")
    return record


def check(folders: list[Path], parser: argparse.ArgumentParser | None = None) -> tuple[dict, list[dict]]:
    """The shards' common settings and their records, in shard order; InputError naming every missing,
    partial, repeated or foreign shard, and every input file changed since. ``parser`` (`gavel evaluate`'s):
    the first shard's settings are checked against its options first (:func:`gavel.core.options.recorded`)."""
    records = [(Path(f), read_shard(Path(f))) for f in folders]
    n = records[0][1]["shard"][1]
    first = records[0][1]
    if parser is not None:
        first["settings"], problems = options.recorded(parser, first["settings"], skip=NOT_SETTINGS)
        if problems:
            raise InputError(f"{records[0][0] / SHARD_FILE}: not merged: settings not what `gavel evaluate` "
                             "records: " + "; ".join(problems[:NAMED])
                             + (f"; and {len(problems) - NAMED} more" if len(problems) > NAMED else ""))
    problems = []
    seen: dict[int, Path] = {}
    for folder, rec in records:
        i, m = rec["shard"]
        if m != n:
            problems.append(f"{folder} is shard {i}/{m}, not of {n}")
            continue
        if i in seen:
            problems.append(f"{folder} is shard {i}/{n} again (also {seen[i]})")
            continue
        seen[i] = folder
        if rec["settings"] != first["settings"] or rec["inputs"] != first["inputs"]:
            problems.append(f"{folder} (shard {i}/{n}) is of another run than {records[0][0]} (settings or inputs "
                            "differ)")
        elif not rec["complete"]:
            problems.append(f"{folder} (shard {i}/{n}) is partial: its run did not finish with every request "
                            f"answered (exit status {rec.get('exit_status', 'none: stopped or still running')})")
    missing = [i for i in range(1, n + 1) if i not in seen]
    if missing:  # named one by one up to NAMED, then counted
        named = ", ".join(f"{i}/{n}" for i in missing[:NAMED])
        more = f" and {len(missing) - NAMED:,} more" if len(missing) > NAMED else ""
        problems.append(f"shard{'s' if len(missing) > 1 else ''} {named}{more} missing")
    named = set(_input_files(first["settings"]))
    for path in sorted(named - set(first["inputs"])):  # a folder of logs is not hashed; any other path is refused
        try:
            kind = os.stat(path).st_mode
        except (OSError, ValueError) as err:  # ValueError: a NUL, or a lone surrogate no file name can hold
            problems.append(f"input {path[:200]!r} cannot be read ({type(err).__name__}: "
                            f"{getattr(err, 'strerror', None) or str(err)[:120]})")
            continue
        if not stat.S_ISDIR(kind):
            problems.append(f"input {path[:200]!r} has no recorded digest" + (
                "" if stat.S_ISREG(kind) else " and is not a file or a folder"))
    for path, digest in sorted(first["inputs"].items()):
        if path not in named:  # only the run's own inputs are opened, never another path a record names
            problems.append(f"input {path[:200]!r} is none of the run's summaries or references")
            continue
        try:
            now = _sha256(Path(path))
        except (OSError, ValueError) as err:
            problems.append(f"input {path[:200]!r} cannot be read ({type(err).__name__}: "
                            f"{getattr(err, 'strerror', None) or str(err)[:120]})")
            continue
        if now != digest:
            problems.append(f"input {path} changed since the shards ran")
    if problems:
        raise InputError("not merged: " + "; ".join(problems))
    return first["settings"], [rec for _, rec in sorted(records, key=lambda x: x[1]["shard"][0])]


def _answer(where: str, raw: bytes | str):
    """A cached answer's Response from its JSON text (a succeeded one, else InputError naming ``where``)."""
    from gavel.llm.records import Response

    try:
        resp = Response.from_dict(json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw))
    except (UnicodeDecodeError, json.JSONDecodeError, TypeError, ValueError, AttributeError) as err:
        raise InputError(f"{where}: not a cached answer ({type(err).__name__})") from None
    if not resp.ok:
        raise InputError(f"{where}: a cached answer must have succeeded")
    return resp


def packed_caches(folders: list[Path]) -> set[Path]:
    """The stage cache folders (relative to a shard folder) that some shard holds as a pack: the merged run
    keeps them packed (``gavel.llm.packs``), every shard's answers of that stage in one pack."""
    out = set()
    for folder in folders:
        for path in Path(folder).rglob(packs.PACK):
            rel = path.relative_to(folder)
            if len(rel.parts) >= 2 and rel.parts[-2] == "cache" and ".." not in rel.parts:
                out.add(rel.parent)
    return out


def copy_answers(folder: Path, out: Path, builders: dict | None = None) -> int:
    """Copy a shard's cached answers (``**/cache/XX/KEY.json``, and the rows of ``**/cache/answers.sqlite``)
    into the same places under ``out``; each is opened, then checked (a regular file or a pack gavel writes,
    JSON with a succeeded answer) before it is written. ``builders``: {cache folder relative to the shard:
    ``packs.Builder``} of the caches the merged run keeps packed (their loose answers go into the pack too).
    Returns how many answers were copied."""
    own = builders is None
    builders = {} if own else builders
    n = 0

    def into_pack(rel_cache: Path, key: str, mtime: float, text: str, where: str) -> int:
        held = builders[rel_cache].add(key, mtime, text)
        if held is None:
            return 1
        if json.loads(held).get("text") != _answer(where, text).text:
            raise InputError(f"{where}: answers the same request as another shard, differently")
        return 0

    for path in sorted(Path(folder).rglob(packs.PACK)):
        rel = path.relative_to(folder)
        if len(rel.parts) < 2 or rel.parts[-2] != "cache" or ".." in rel.parts:
            continue
        try:
            pack = packs.open_pack(path)
        except packs.PackError as err:
            raise InputError(str(err)) from None
        try:
            if builders.get(rel.parent) is None:  # called alone (no merge around it): its own pack
                builders[rel.parent] = packs.Builder(out / rel.parent)
            for key, mtime, text in pack.rows():
                _answer(f"{path} (key {key})", text)
                n += into_pack(rel.parent, key, mtime, text, f"{path} (key {key})")
        except packs.PackError as err:
            raise InputError(str(err)) from None
        finally:
            pack.close()
    for path in sorted(Path(folder).rglob("*.json")):
        rel = path.relative_to(folder)
        if len(rel.parts) < 3 or rel.parts[-3] != "cache" or not CACHE_DIR.fullmatch(rel.parts[-2]):
            continue
        if not CACHE_NAME.fullmatch(rel.name) or ".." in rel.parts:
            raise InputError(f"{path}: not a cached answer gavel writes (name or link)")
        try:  # opened once, not followed if a link, not waited on if a FIFO; then checked on what was opened
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as err:
            raise InputError(f"{path}: not a cached answer gavel writes (name or link: {err.strerror})") from None
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise InputError(f"{path}: not a regular file")
            raw = fh.read(min(info.st_size, 1 << 26) + 1)  # its size: a buffer of the limit is allocated
        if len(raw) > 1 << 26:
            raise InputError(f"{path}: over 64 MiB, not a cached answer")
        resp = _answer(str(path), raw)
        rel_cache = Path(*rel.parts[:-2])
        if rel_cache in builders:
            n += into_pack(rel_cache, rel.name[:-5], info.st_mtime, raw.decode("utf-8"), str(path))
            continue
        target = out / rel
        if target.exists():
            if json.loads(target.read_text(encoding="utf-8")).get("text") != resp.text:
                raise InputError(f"{path}: answers the same request as another shard, differently")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw)
        n += 1
    for b in builders.values() if own else ():
        b.finish()
    return n


def merge(folders: list[str], out: str, evaluate, parser: argparse.ArgumentParser) -> int:
    """Check the shards, copy their answers into ``out``, run ``evaluate`` over every summary there (the
    command's own function, given by the command line) and check that it sent nothing. ``parser``: the
    command's own (`gavel evaluate`'s), which the shards' recorded settings are checked against before
    anything is copied."""
    if not folders:
        raise InputError("give the shard folders to merge")
    settings, records = check([Path(f) for f in folders], parser)
    out_path = Path(out)
    if out_path.exists() and any(out_path.iterdir()):
        raise InputError(f"--out {out}: not empty (a merge writes a fresh run folder)")
    builders = {rel: packs.Builder(out_path / rel) for rel in packed_caches([Path(f) for f in folders])}
    try:
        copied = sum(copy_answers(Path(f), out_path, builders) for f in folders)
    except BaseException:
        for b in builders.values():
            b.abandon()
        raise
    for b in builders.values():
        b.finish()
    n = records[0]["shard"][1]
    print(f"merge: {n} shards complete, {sum(len(r['cases']) for r in records)} cases, {copied} answers copied "
          f"into {out}", flush=True)
    args = argparse.Namespace(**{**settings, "out": str(out_path), "shard": None, "merging": True})
    rc = evaluate(args)
    sent = 0
    manifests = sorted(out_path.rglob("evaluation.json"))
    for manifest in manifests:
        sent += sum(json.loads(manifest.read_text(encoding="utf-8")).get("sent", {}).values())
    if sent:
        print(f"error: merge: {sent} requests were not answered in the shards and were sent now; the shards "
              "were not complete", flush=True)
        return 1
    for manifest in manifests:  # what the run sent and found cached: the shards' counts, summed
        rel, record = manifest.relative_to(out_path), json.loads(manifest.read_text(encoding="utf-8"))
        for field in ("sent", "cached"):
            total: dict[str, int] = {}
            for folder in folders:
                if not (Path(folder) / rel).exists() and not read_shard(Path(folder))["cases"]:
                    continue  # a shard that held no case evaluated nothing
                counts = _counts(Path(folder) / rel, field)
                for stage, k in counts.items():
                    total[stage] = total.get(stage, 0) + k
            record[field] = total
        manifest.write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
    for ledger_path in sorted(out_path.rglob("cost.csv")):  # what the run paid: the shards' ledgers combined
        rel = ledger_path.relative_to(out_path)
        if rel.parts[0] != "runs" and "runs" not in rel.parts[:-1]:
            ledger.write(ledger_path, ledger.combine([read_csv(Path(f) / rel) for f in folders
                                                      if (Path(f) / rel).is_file()]))
    if out_path.joinpath(SHARD_FILE).exists():  # never: a merged run is no shard
        out_path.joinpath(SHARD_FILE).unlink()
    return rc


def _counts(path: Path, field: str) -> dict[str, int]:
    """A shard's per-stage counts in its ``evaluation.json`` (whole numbers by stage name, else refused)."""
    try:
        counts = json.loads(path.read_text(encoding="utf-8")).get(field)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as err:
        raise InputError(f"{path}: unreadable ({type(err).__name__})") from None
    if not isinstance(counts, dict) or not all(isinstance(k, str) and type(v) is int for k, v in counts.items()):
        raise InputError(f"{path}: {field} is not a count per stage")
    return counts
