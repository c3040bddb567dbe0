"""The agent's store of one extraction run, its files, and the replay of the release's agent ledgers.

A store holds, for every key of its configuration, the list ``extracted`` of values, each
``{"value": str, "evidence": [{"text", "source_document", "location"}]}``. Two operations change it, both
taking a *patch* (a list of ``{"key", "extracted": [...]}``, several keys at once):

* **append**: add the values to the key's list;
* **update**: replace the key's whole list (corrections, curated final lists, "Not Applicable").

Validation follows what the release's own runs show (checked by ``replay_release`` over all 2,880 runs):
a call without a patch list, with an entry lacking ``key``, or with a malformed value or evidence is refused
whole, nothing applied; an entry whose key is not in the configuration is refused alone and the other
entries are applied (the call then reports ``success: false`` with the applied keys).

**Not Applicable**: a key is Not Applicable when its list holds exactly one value ``"Not Applicable"``
(exact spelling) with evidence. It should be set with update; an append of it is applied (the release's
runs did so 22 times) with a warning returned to the model. Downstream (``value_rows``) a "Not Applicable"
value is no information: a Not Applicable key counts as empty, as the release's judge treated it.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from gavel.answers import placeholder_why
from gavel.core import jsonl
from gavel.core.entries import NOT_APPLICABLE  # one definition, shared with the compare stage

OPERATIONS = ("append", "update")
EVIDENCE_FIELDS = ("text", "source_document", "location")

# Caps on one append/update call and on the store (the largest the 2,880 released ledgers use in brackets;
# each cap is far above it, so every released patch passes). A patch past a cap is refused whole, naming the
# cap; a key that would hold more than MAX_KEY_VALUES values is refused for that entry.
MAX_PATCH_ENTRIES = 200  # entries {key, extracted} per call [76]
MAX_VALUES_PER_ENTRY = 200  # values per entry [86]
MAX_EVIDENCE_PER_VALUE = 50  # evidence objects per value [12]
MAX_FIELD_CHARS = 20_000  # characters of one value, evidence text, source_document or location [4,722]
MAX_PATCH_CHARS = 1_000_000  # characters of all those strings in one call [about 30,000]
MAX_KEY_VALUES = 1_000  # values one key may hold after the call [90]
PATCH_LIMITS = {"entries per call": MAX_PATCH_ENTRIES, "values per entry": MAX_VALUES_PER_ENTRY,
                "evidence per value": MAX_EVIDENCE_PER_VALUE, "characters per field": MAX_FIELD_CHARS,
                "characters per call": MAX_PATCH_CHARS, "values per key": MAX_KEY_VALUES}


class PatchError(ValueError):
    pass


@dataclass
class PatchResult:
    """What one append/update call did: ``applied`` keys in patch order (a key may repeat), ``errors``
    (the call or entries refused), ``warnings`` (applied but questionable), ``patch`` as applied."""

    operation: str
    applied: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    patch: list = field(default_factory=list)

    @property
    def success(self) -> bool:
        return not self.errors


def _check_text(text: str, where: str) -> int:
    """``len(text)``; raises PatchError when it is past MAX_FIELD_CHARS or not valid Unicode text."""
    if len(text) > MAX_FIELD_CHARS:
        raise PatchError(f"{where}: {len(text):,} characters; at most {MAX_FIELD_CHARS:,} per field")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise PatchError(f"{where}: not valid Unicode text (a lone surrogate)") from None
    return len(text)


def check_value(value, where: str, sizes: list | None = None) -> dict:
    """A checked copy of one value; the length of each of its strings is appended to ``sizes``."""
    sizes = [] if sizes is None else sizes
    if not isinstance(value, dict):
        raise PatchError(f"{where}: a value must be an object with `value` and `evidence`")
    if not isinstance(value.get("value"), str) or not value["value"].strip():
        raise PatchError(f"{where}.value: required, a non-empty string")
    sizes.append(_check_text(value["value"], f"{where}.value"))
    if placeholder_why(value["value"]) == "prompt_placeholder":
        raise PatchError(f"{where}.value: {value['value'][:80]!r} is the prompt's format placeholder, not a value")
    evidence = value.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        raise PatchError(f"{where}.evidence: required, a non-empty list of evidence objects")
    if len(evidence) > MAX_EVIDENCE_PER_VALUE:
        raise PatchError(f"{where}.evidence: {len(evidence):,} evidence objects; at most "
                         f"{MAX_EVIDENCE_PER_VALUE} per value")
    for j, ev in enumerate(evidence):
        if not isinstance(ev, dict):
            raise PatchError(f"{where}.evidence.{j}: must be an object with {', '.join(EVIDENCE_FIELDS)}")
        for name in EVIDENCE_FIELDS:
            if not isinstance(ev.get(name), str):
                raise PatchError(f"{where}.evidence.{j}.{name}: required, a string")
            sizes.append(_check_text(ev[name], f"{where}.evidence.{j}.{name}"))
    return {"evidence": [{k: ev[k] for k in EVIDENCE_FIELDS} for ev in evidence], "value": value["value"]}


def validate_patch(patch, operation: str) -> list[tuple[str, list]]:
    """The entries of a patch as ``(key, values)``; raises PatchError (the whole call is refused)."""
    if operation not in OPERATIONS:
        raise PatchError(f"unknown operation {operation!r}")
    if not isinstance(patch, list) or not patch:
        raise PatchError("missing required field: patch (a non-empty list of {key, extracted})")
    if len(patch) > MAX_PATCH_ENTRIES:
        raise PatchError(f"patch: {len(patch):,} entries; at most {MAX_PATCH_ENTRIES} per call (send several "
                         f"calls)")
    out, sizes = [], []
    for i, entry in enumerate(patch):
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), str) or not entry["key"]:
            raise PatchError(f"patch.{i}: missing required field: key")
        values = entry.get("extracted")
        if not isinstance(values, list):
            raise PatchError(f"patch.{i}.extracted: required, a list of values")
        if operation == "append" and not values:
            raise PatchError(f"patch.{i}.extracted: append needs at least one value")
        if len(values) > MAX_VALUES_PER_ENTRY:
            raise PatchError(f"patch.{i}.extracted: {len(values):,} values; at most {MAX_VALUES_PER_ENTRY} per "
                             f"entry")
        out.append((entry["key"], [check_value(v, f"patch.{i}.extracted.{j}", sizes)
                                   for j, v in enumerate(values)]))
        if sum(sizes) > MAX_PATCH_CHARS:
            raise PatchError(f"patch: more than {MAX_PATCH_CHARS:,} characters of values and evidence in one "
                             f"call (at patch.{i}); send several calls")
    return out


def is_not_applicable(values: list) -> bool:
    return len(values) == 1 and values[0].get("value") == NOT_APPLICABLE


class AgentStore:
    """The extracted values of one run's keys. ``clock`` gives ``last_updated`` stamps (injectable so that
    tests and replays are deterministic)."""

    def __init__(self, keys, clock=None):
        self.keys = tuple(keys)
        if len(set(self.keys)) != len(self.keys):
            raise ValueError("checklist keys must be unique")
        self.clock = clock or (lambda: datetime.now().astimezone().isoformat())
        self.values: dict[str, list] = {k: [] for k in self.keys}
        self.updated: dict[str, str | None] = {k: None for k in self.keys}

    # ---- changes ----
    def apply(self, operation: str, patch) -> PatchResult:
        result = PatchResult(operation=operation)
        try:
            entries = validate_patch(patch, operation)
        except PatchError as err:
            result.errors.append(str(err))
            return result
        for key, values in entries:
            if key not in self.values:
                result.errors.append(f"unknown key: {key} (this run's keys: {', '.join(self.keys)})")
                continue
            held = len(values) + (len(self.values[key]) if operation == "append" else 0)
            if held > MAX_KEY_VALUES:
                result.errors.append(f"{key}: would hold {held:,} values; at most {MAX_KEY_VALUES:,} per key "
                                     f"(update the key with fewer, merged values)")
                continue
            if operation == "update":
                self.values[key] = copy.deepcopy(values)
            else:
                if any(v["value"] == NOT_APPLICABLE for v in values):
                    result.warnings.append(f"{key}: 'Not Applicable' should be set with update_checklist "
                                           f"(as the only value), not appended")
                self.values[key].extend(copy.deepcopy(values))
            self.updated[key] = self.clock()
            result.applied.append(key)
            result.patch.append({"key": key, "extracted": copy.deepcopy(values) if operation == "update" else None,
                                 "add_extracted": copy.deepcopy(values) if operation == "append" else None})
        return result

    # ---- views ----
    def status(self, key: str) -> str:
        values = self.values[key]
        if not values:
            return "empty"
        return "not_applicable" if is_not_applicable(values) else "filled"

    def get(self, keys=None) -> dict:
        keys = self.keys if keys in (None, "all") else keys
        unknown = [k for k in keys if k not in self.values]
        if unknown:
            raise KeyError(f"unknown key(s): {', '.join(unknown)}; this run's keys: {', '.join(self.keys)}")
        return {k: {"extracted": copy.deepcopy(self.values[k]), "status": self.status(k)} for k in keys}

    def to_json(self) -> dict:
        """The release's ``checklist.json`` shape: ``{key: {"extracted", "key", "last_updated"}}``."""
        return {k: {"extracted": copy.deepcopy(self.values[k]), "key": k, "last_updated": self.updated[k]}
                for k in sorted(self.keys)}

    @classmethod
    def from_json(cls, data: dict, keys=None, clock=None) -> AgentStore:
        store = cls(keys or sorted(data), clock=clock)
        for k, entry in data.items():
            if k not in store.values:
                raise ValueError(f"checklist key {k!r} is not one of this run's keys")
            store.values[k] = copy.deepcopy(entry.get("extracted") or [])
            store.updated[k] = entry.get("last_updated")
        return store

    def save(self, path: str | Path) -> None:
        write_json_atomic(Path(path), self.to_json())

    def value_rows(self, case_id: str, item_of=None) -> list[dict]:
        """One row per value, ``(case_id, item, index, value, evidence)``, what the compare stage takes;
        ``item_of`` maps a key to the item spelling wanted (default: unchanged). Not Applicable keys give
        no rows (they count as empty), and a stray "Not Applicable" value among real ones is left out;
        ``index`` numbers the rows kept per key from 1, as the judge outputs do."""
        rows = []
        for k in self.keys:
            kept = [v for v in self.values[k] if v["value"] != NOT_APPLICABLE]
            for i, v in enumerate(kept, 1):
                rows.append({"case_id": str(case_id), "item": item_of(k) if item_of else k, "index": i,
                             "value": v["value"], "evidence": [e["text"] for e in v["evidence"]]})
        return rows


def json_text(data, **kwargs) -> str:
    """``json.dumps(data, ensure_ascii=False)``, except that a text that cannot be written as UTF-8 (a lone
    surrogate somewhere in ``data``) is written with ASCII escapes instead: the same JSON value, never a
    UnicodeEncodeError when the file is written."""
    text = json.dumps(data, ensure_ascii=False, **kwargs)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, ensure_ascii=True, **kwargs)
    return text


def write_json_atomic(path: Path, data, indent: int = 2) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json_text(data, indent=indent, sort_keys=True))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


# ------------------------------------------------------------------ replay of released ledgers
def ledger_events(path: str | Path) -> list[dict]:
    """The events of a ledger.jsonl; a bad line raises naming the file and line."""
    return [line.value for line in jsonl.read_file(path)]


def store_patch(event: dict) -> tuple[str, list] | None:
    """``(operation, patch)`` of a ledger event that changed the store, in the model's patch form, else None.
    The store's own events carry ``keys_updated`` and the applied patch (append values under
    ``add_extracted``, update values under ``extracted``); the tool's failure records carry ``args``
    instead and changed nothing by themselves."""
    name = event.get("event_name")
    body = event.get("event") or {}
    if name not in ("append_checklist", "update_checklist") or "patch" not in body:
        return None
    operation = "append" if name == "append_checklist" else "update"
    field_name = "add_extracted" if operation == "append" else "extracted"
    patch = [{"key": p.get("key"), "extracted": p.get(field_name)} for p in body["patch"] or []]
    return operation, patch


def refused_call(event: dict) -> tuple[str, object] | None:
    """``(operation, patch)`` of a released append/update call the original tool refused, else None."""
    name, body = event.get("event_name"), event.get("event") or {}
    if name not in ("append_checklist", "update_checklist") or "patch" in body or body.get("success", True):
        return None
    return ("append" if name == "append_checklist" else "update"), (body.get("args") or {}).get("patch")


def replay(events: list[dict], keys, refusals: list | None = None) -> AgentStore:
    """A fresh store for ``keys`` with every store-changing event of a ledger applied in order. With
    ``refusals`` (a list), each call the original refused is also tried on a copy of the store at that
    point, and ``(step, our store refused it too, our errors)`` is appended."""
    store = AgentStore(keys, clock=lambda: None)
    partial_steps = {e.get("step") for e in events if store_patch(e) and not e["event"].get("success", True)}
    for ev in events:
        op = store_patch(ev)
        if op:
            store.apply(*op)
        elif refusals is not None and refused_call(ev):
            trial = AgentStore(keys, clock=lambda: None)
            trial.values = copy.deepcopy(store.values)
            res = trial.apply(*refused_call(ev))
            # a partly applied call has its applied part in a store event of the same step
            refused = bool(res.errors) and (not res.applied or ev.get("step") in partial_steps)
            refusals.append((ev.get("step"), refused, res.errors))
    return store


@dataclass
class ReplayResult:
    run: str  # model/case/kind/name
    reproduced: bool
    reason: str
    events: int
    store_events: int
    refused_calls: int = 0  # append/update calls the original refused
    refused_agreed: int = 0  # ... that our store refuses too


def compare_checklists(replayed: dict, released: dict) -> str:
    """'' when the replayed store equals the released checklist.json (keys and values; the ``last_updated``
    stamps are wall-clock times and are not compared), else why not."""
    got_keys, want_keys = set(replayed), set(released)
    if got_keys != want_keys:
        return (f"key sets differ: only replayed {sorted(got_keys - want_keys)}, "
                f"only released {sorted(want_keys - got_keys)}")
    for k in sorted(want_keys):
        a, b = replayed[k]["extracted"], released[k].get("extracted")
        if a != b:
            if len(a) != len(b):
                return f"{k}: {len(a)} values replayed, {len(b)} released"
            i = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
            return f"{k}: value {i + 1} differs ({json.dumps(a[i])[:120]} vs {json.dumps(b[i])[:120]})"
    return ""


def replay_run(folder: str | Path, keys) -> ReplayResult:
    folder = Path(folder)
    run = "/".join(folder.parts[-4:])
    released = json.loads((folder / "checklist.json").read_text(encoding="utf-8"))
    ledger = folder / "ledger.jsonl"
    events = ledger_events(ledger) if ledger.exists() else []
    n_store = sum(1 for e in events if store_patch(e))
    if not events:
        filled = sum(1 for v in released.values() if v.get("extracted"))
        return ReplayResult(run, False, f"ledger.jsonl is empty (0 bytes): nothing to replay; the released "
                                        f"checklist has {filled} filled key(s)", 0, 0)
    refusals: list = []
    store = replay(events, keys, refusals)
    reason = compare_checklists(store.to_json(), released)
    return ReplayResult(run, not reason, reason, len(events), n_store, len(refusals),
                        sum(1 for _, agreed, _ in refusals if agreed))


def agent_run_folders(root: str | Path):
    """``(folder, model, case_id, kind, name)`` of every Gavel-Agent run in the release's data folder."""
    base = Path(root) / "document_checklists" / "gavel_agent"
    for model_dir in sorted(p for p in base.iterdir() if p.is_dir()):
        for case_dir in sorted(p for p in model_dir.iterdir() if p.is_dir()):
            for kind_dir in sorted(p for p in case_dir.iterdir() if p.is_dir()):
                for run_dir in sorted(p for p in kind_dir.iterdir() if p.is_dir()):
                    yield run_dir, model_dir.name, case_dir.name, kind_dir.name, run_dir.name


def replay_release(root: str | Path) -> list[ReplayResult]:
    """Replay every released agent run's ledger through a fresh store of its configuration's keys."""
    from .configs import release_config

    results = []
    for folder, _model, _case, kind, name in agent_run_folders(root):
        keys = release_config(kind, name).keys
        try:
            results.append(replay_run(folder, keys))
        except (ValueError, OSError) as err:
            results.append(ReplayResult("/".join(folder.parts[-4:]), False, f"unreadable: {err}", 0, 0))
    return results


def replay_report(results: list[ReplayResult]) -> str:
    """How many runs the replay reproduces, and why each other one is not."""
    n, ok = len(results), sum(r.reproduced for r in results)
    refused = sum(r.refused_calls for r in results)
    agreed = sum(r.refused_agreed for r in results)
    lines = [f"agent runs replayed: {n}",
             f"reproduced exactly (keys and values of checklist.json): {ok} of {n} ({100 * ok / max(n, 1):.2f}%)",
             f"store events applied: {sum(r.store_events for r in results)}; calls the original refused: {refused}, "
             f"also refused by our store: {agreed}"]
    bad = [r for r in results if not r.reproduced]
    if bad:
        lines.append(f"not reproduced ({len(bad)}):")
        lines += [f"  {r.run}: {r.reason}" for r in bad]
    return "\n".join(lines)
