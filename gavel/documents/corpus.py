"""Case corpora: the documents of one case, in the paper's order, each with a unique stable name.

Two input shapes:

* the ``full_case_data`` JSON of the original pipeline: a list of cases (or ``{"cases": [...]}``), each with
  ``case_id``, ``case_documents_text`` and the parallel lists ``case_documents_title`` (or
  ``case_documents``), ``case_documents_doc_type``, ``case_documents_date``, ``case_documents_id`` where
  present;
* a folder per case: one text file per document plus an optional ``metadata.json`` whose ``documents`` list
  gives ``filename``, ``title``, ``doc_type``, ``date``, ``doc_id`` (the original agent's prepared layout);
  without it every ``*.txt`` file is a document titled by its file name.

Order (paper §4.1): chronological by date; undated documents after the dated ones; docket sheets last; ties
keep the input order. Names: the title (else the document type, else ``Document``); a name shared by several
documents gets `` (001)``, `` (002)``… in that order, as in the release's ledgers (``Order (003)``).

The release has no case documents. ``summaries_corpus`` builds a corpus of real legal text from it: the
summaries of one case (the 12 models' and the human one) treated as that case's documents.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from array import array
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from pathlib import Path

from gavel.core import jsonl
from gavel.core.jsonl import TOO_DEEP
from gavel.core.tokens import encoding


def is_text(s: str) -> bool:
    """Whether ``s`` can be written as UTF-8 (no lone surrogates)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class CorpusError(ValueError):
    pass


#: the keys of a case folder's ``metadata.json`` and of each of its ``documents`` entries (docs/case-folders.md);
#: ``token_count`` is what ``write_folder`` adds (informative, not read)
METADATA_KEYS = frozenset({"case_id", "documents"})
DOCUMENT_KEYS = frozenset({"filename", "title", "doc_type", "date", "doc_id", "token_count"})


class DocumentNotFoundError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "document not found"


@dataclass
class Document:
    name: str
    text: str
    title: str = ""
    doc_type: str = ""
    date: str | None = None
    doc_id: str | None = None
    position: int = 0  # index in the input, before ordering

    @cached_property
    def tokens(self) -> array:
        """The o200k token ids, packed (4 bytes each; a list of ints takes 36): a 400 MB corpus's tokens are
        held in about 0.4 GB instead of 3.6."""
        return array("I", encoding().encode(self.text, disallowed_special=()))

    @cached_property
    def offsets(self) -> array:
        """Character offset where each token starts, plus ``len(text)`` at the end (so token ``i`` spans
        ``text[offsets[i]:offsets[i + 1]]``); packed as ``tokens``."""
        _, starts = encoding().decode_with_offsets(self.tokens.tolist())
        out = array("q", starts)
        out.append(len(self.text))
        return out

    @property
    def token_count(self) -> int:
        return len(self.tokens)

    def window(self, start: int, end: int) -> str:
        """The text of tokens ``[start, end)`` (clipped to the document)."""
        n = self.token_count
        start, end = max(0, min(start, n)), max(0, min(end, n))
        offs = self.offsets
        return self.text[offs[start]:offs[end]] if end > start else ""

    @property
    def is_docket(self) -> bool:
        return "docket" in f"{self.doc_type} {self.title}".lower()


def parse_date(value) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        return None


def order_key(doc: Document):
    d = parse_date(doc.date)
    return (doc.is_docket, d is None, d or date.min, doc.position)


def unique_names(bases: list[str]) -> list[str]:
    """Repeated names numbered `` (001)``, `` (002)``… in order; never two equal names."""
    counts: dict[str, int] = {}
    for b in bases:
        counts[b] = counts.get(b, 0) + 1
    seen: dict[str, int] = {}
    taken = {b for b in bases if counts[b] == 1}
    out = []
    for b in bases:
        if counts[b] == 1:
            out.append(b)
            continue
        while True:
            seen[b] = seen.get(b, 0) + 1
            name = f"{b} ({seen[b]:03d})"
            if name not in taken:
                break
        taken.add(name)
        out.append(name)
    return out


_SPACES = re.compile(r"\s+")


@dataclass
class Corpus:
    case_id: str
    documents: list[Document] = field(default_factory=list)

    def __post_init__(self):
        self.by_name = {d.name: d for d in self.documents}
        if len(self.by_name) != len(self.documents):
            raise CorpusError(f"case {self.case_id}: document names are not unique")

    @classmethod
    def build(cls, case_id, texts: list[str], titles=None, doc_types=None, dates=None, doc_ids=None,
              source: str = "") -> Corpus:
        if not isinstance(texts, (list, tuple)):
            raise CorpusError(f"{source or 'corpus'} case {case_id}: document texts must be a list")
        n = len(texts)
        for label, values in (("titles", titles), ("doc_types", doc_types), ("dates", dates), ("ids", doc_ids)):
            if values is not None and not isinstance(values, (list, tuple)):
                raise CorpusError(f"{source or 'corpus'} case {case_id}: {label} must be a list, got "
                                  f"{type(values).__name__}")
            if values is not None and len(values) != n:
                raise CorpusError(f"{source or 'corpus'} case {case_id}: {n} document texts but {len(values)} "
                                  f"{label}")
        docs = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise CorpusError(f"{source or 'corpus'} case {case_id}: document {i + 1} text is not a string")
            for label, value in (("text", text), ("title", (titles or [""] * n)[i]),
                                 ("doc_type", (doc_types or [""] * n)[i]), ("date", (dates or [None] * n)[i])):
                if isinstance(value, str) and not is_text(value):
                    raise CorpusError(f"{source or 'corpus'} case {case_id}: document {i + 1} {label} is not valid "
                                      f"Unicode text (a lone surrogate)")
            title = _SPACES.sub(" ", str((titles or [""] * n)[i] or "")).strip()
            dtype = _SPACES.sub(" ", str((doc_types or [""] * n)[i] or "")).strip()
            docs.append(Document(name="", text=text, title=title, doc_type=dtype,
                                 date=(dates or [None] * n)[i] or None,
                                 doc_id=None if doc_ids is None or doc_ids[i] is None else str(doc_ids[i]),
                                 position=i))
        docs.sort(key=order_key)
        for d, name in zip(docs, unique_names([d.title or d.doc_type or "Document" for d in docs])):
            d.name = name
        return cls(case_id=str(case_id), documents=docs)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of what a run reads: every document's name, text, type, date and id, in order. A saved
        run remembers it, so it is never resumed over changed documents."""
        digest = hashlib.sha256(self.case_id.encode("utf-8"))
        for d in self.documents:
            digest.update(json.dumps([d.name, d.text, d.doc_type, d.date, d.doc_id], ensure_ascii=False)
                          .encode("utf-8"))
        return digest.hexdigest()

    @property
    def total_tokens(self) -> int:
        return sum(d.token_count for d in self.documents)

    def names(self) -> list[str]:
        return [d.name for d in self.documents]

    def resolve(self, name) -> Document:
        """The document called ``name``: exact, then ignoring case and spacing, then a unique prefix (a
        trailing ``...`` allowed), then a unique close match. Only catalog names can match; a name is never
        used as a path. Raises DocumentNotFoundError with suggestions."""
        if not isinstance(name, str) or not name.strip():
            raise DocumentNotFoundError("document name must be a non-empty string")
        if name in self.by_name:
            return self.by_name[name]
        folded = {_fold(n): n for n in self.by_name}
        want = _fold(name)
        if want in folded:
            return self.by_name[folded[want]]
        stem = want.rstrip(". …")
        prefixed = [n for f, n in folded.items() if stem and f.startswith(stem)]
        if len(prefixed) == 1:
            return self.by_name[prefixed[0]]
        close = difflib.get_close_matches(want, list(folded), n=3, cutoff=0.85)
        if len(close) == 1:
            return self.by_name[folded[close[0]]]
        hints = [folded[c] for c in difflib.get_close_matches(want, list(folded), n=3, cutoff=0.4)] or prefixed[:3]
        hint = f" Did you mean: {', '.join(hints)}?" if hints else f" Available: {', '.join(self.names()[:10])}"
        raise DocumentNotFoundError(f"document not found: {name!r}.{hint}")


def _fold(name: str) -> str:
    return _SPACES.sub(" ", name).strip().lower()


# ------------------------------------------------------------------ readers
def load_full_case_data(path: str | Path, case_ids=None) -> list[Corpus]:
    """Corpora of a ``full_case_data`` JSON file; a malformed case raises naming the file and case."""
    path = Path(path)
    try:
        data = json.loads(_read_text(path, str(path)))
    except json.JSONDecodeError as err:
        raise CorpusError(f"{path}: not JSON ({err})") from None
    except RecursionError:
        raise CorpusError(f"{path}: {TOO_DEEP}") from None
    cases = data.get("cases") if isinstance(data, dict) else data
    if not isinstance(cases, list):
        raise CorpusError(f"{path}: expected a list of cases (or {{'cases': [...]}})")
    wanted = {str(c) for c in case_ids} if case_ids else None
    out = []
    for n, case in enumerate(cases, 1):
        if not isinstance(case, dict) or "case_id" not in case:
            raise CorpusError(f"{path}: case {n} has no case_id")
        cid = str(case["case_id"])
        if wanted and cid not in wanted:
            continue
        texts = case.get("case_documents_text")
        if not isinstance(texts, list):
            raise CorpusError(f"{path}: case {cid}: case_documents_text must be a list of texts")
        if not texts:
            raise CorpusError(f"{path}: case {cid}: case_documents_text is empty: a case needs at least one document")
        titles = case.get("case_documents_title", case.get("case_documents"))
        out.append(Corpus.build(cid, texts, titles, case.get("case_documents_doc_type"),
                                case.get("case_documents_date"), case.get("case_documents_id"), source=str(path)))
    if wanted and len(out) != len(wanted):
        missing = wanted - {c.case_id for c in out}
        raise CorpusError(f"{path}: case(s) not found: {', '.join(sorted(missing))}")
    return out


def _read_text(file: Path, where: str) -> str:
    """The UTF-8 text of ``file``; CorpusError naming ``where`` when it cannot be read or is not UTF-8 text."""
    try:  # opened, then checked: a document that is a FIFO or /dev/zero is refused, not waited on or read forever
        data = jsonl.file_bytes(file, where=where, pipes=False)
    except jsonl.JSONLError as err:
        raise CorpusError(str(err)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorpusError(f"{where}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start}); "
                          f"convert the file to UTF-8") from None


def _inside(folder: Path, file: Path, where: str) -> Path:
    """``file`` resolved (symlinks followed); CorpusError when that is outside ``folder`` or not a file."""
    try:
        real = file.resolve()
    except (OSError, RuntimeError) as err:  # a symlink loop
        raise CorpusError(f"{where}: cannot resolve ({err})") from None
    if folder not in real.parents:
        raise CorpusError(f"{where}: resolves to {real}, outside the case folder {folder}")
    if not real.is_file():
        raise CorpusError(f"{where}: not a regular file")
    return real


def _name_text(name: str, where: str) -> str:
    """A file name usable as text: CorpusError for a NUL or for bytes that are not UTF-8 (a name read from
    the file system keeps them as lone surrogates)."""
    if "\x00" in name:
        raise CorpusError(f"{where}: file name {name!r} contains a NUL character")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise CorpusError(f"{where}: file name {name.encode('utf-8', 'surrogateescape')!r} is not UTF-8 "
                          f"text; rename the file") from None
    return name


def load_folder(path: str | Path) -> Corpus:
    """A case folder: ``metadata.json`` + text files, or just ``*.txt`` files. Every document file must be
    a UTF-8 text file that stays inside the folder once symlinks are followed; anything else (malformed
    metadata, a file name with a NUL or non-UTF-8 bytes, a Latin-1 file, a symlink out of the folder)
    raises CorpusError naming the file."""
    folder = Path(path).resolve()
    if not folder.is_dir():
        raise CorpusError(f"{folder}: not a folder")
    meta_path = folder / "metadata.json"
    if meta_path.exists():
        try:
            meta = json.loads(_read_text(meta_path, str(meta_path)))
        except json.JSONDecodeError as err:
            raise CorpusError(f"{meta_path}: not JSON ({err})") from None
        except RecursionError:
            raise CorpusError(f"{meta_path}: {TOO_DEEP}") from None
        if not isinstance(meta, dict):
            raise CorpusError(f"{meta_path}: expected an object with a `documents` list, got "
                              f"{type(meta).__name__}")
        if "documents" not in meta:
            raise CorpusError(f"{meta_path}: no `documents` list (each entry names a text file of the folder: "
                              f'{{"documents": [{{"filename": "complaint.txt"}}]}}; see docs/case-folders.md)')
        entries = meta["documents"]
        if not isinstance(entries, list):
            raise CorpusError(f"{meta_path}: `documents` must be a list, got {type(entries).__name__}")
        if not entries:
            raise CorpusError(f"{meta_path}: the `documents` list is empty: a case needs at least one document")
        unknown = sorted(set(meta) - METADATA_KEYS)
        if unknown:
            raise CorpusError(f"{meta_path}: unknown key(s) {', '.join(map(repr, unknown))}; a case folder's "
                              f"metadata.json has {', '.join(sorted(METADATA_KEYS))} (docs/case-folders.md)")
        texts, titles, types, dates, ids = [], [], [], [], []
        for n, e in enumerate(entries, 1):
            fname = e.get("filename") if isinstance(e, dict) else None
            if not fname:
                raise CorpusError(f"{meta_path}: document {n} has no filename")
            if not isinstance(fname, str):
                raise CorpusError(f"{meta_path}: document {n}: filename must be a string, got {fname!r}")
            odd = sorted(set(e) - DOCUMENT_KEYS)
            if odd:
                raise CorpusError(f"{meta_path}: document {n}: unknown key(s) {', '.join(map(repr, odd))}; an entry "
                                  f"has {', '.join(sorted(DOCUMENT_KEYS))} (docs/case-folders.md)")
            where = f"{meta_path}: document {n} file {_name_text(fname, f'{meta_path}: document {n}')!r}"
            for label in ("title", "doc_type", "date", "doc_id"):
                if e.get(label) is not None and not isinstance(e[label], (str, int, float)):
                    raise CorpusError(f"{meta_path}: document {n}: {label} must be a string, got "
                                      f"{type(e[label]).__name__}")
            file = _inside(folder, folder / fname, where)
            texts.append(_read_text(file, where))
            titles.append(e.get("title") or Path(fname).stem)
            types.append(e.get("doc_type") or "")
            dates.append(None if e.get("date") is None else str(e["date"]))
            ids.append(e.get("doc_id"))
        case_id = meta.get("case_id")
        if case_id is not None and not isinstance(case_id, (str, int)):
            raise CorpusError(f"{meta_path}: case_id must be a string, got {type(case_id).__name__}")
        listed = {(folder / e["filename"]).resolve() for e in entries}
        unlisted = [p.name for p in sorted(folder.glob("*.txt")) if p.resolve() not in listed]
        if unlisted:
            raise CorpusError(f"{meta_path}: does not list {', '.join(unlisted[:5])}"
                              f"{f' (and {len(unlisted) - 5} more)' if len(unlisted) > 5 else ''}; list every "
                              f"document of the folder, or move the file out")
        return Corpus.build(str(case_id or folder.name), texts, titles, types, dates, ids, source=str(meta_path))
    files = sorted(p for p in folder.glob("*.txt") if not p.is_dir())
    if not files:
        raise CorpusError(f"{folder}: no metadata.json and no .txt documents")
    texts, titles = [], []
    for p in files:
        _name_text(p.name, f"{folder}")
        texts.append(_read_text(_inside(folder, p, str(p)), str(p)))
        titles.append(p.stem)
    return Corpus.build(folder.name, texts, titles, source=str(folder))


def load(path: str | Path, case_id: str | None = None) -> Corpus:
    """A folder, or one case of a ``full_case_data`` JSON file."""
    path = Path(path)
    if path.is_dir():
        return load_folder(path)
    corpora = load_full_case_data(path, [case_id] if case_id else None)
    if len(corpora) != 1:
        raise CorpusError(f"{path}: holds {len(corpora)} cases; name one with case_id")
    return corpora[0]


def write_folder(corpus: Corpus, folder: str | Path) -> Path:
    """Write a corpus in the folder shape (text files + metadata.json); returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for i, d in enumerate(corpus.documents, 1):
        slug = re.sub(r"[^A-Za-z0-9]+", "_", d.name).strip("_").lower()[:40] or "document"
        fname = f"{i:03d}_{slug}.txt"
        (folder / fname).write_text(d.text, encoding="utf-8")
        entries.append({"filename": fname, "title": d.title or d.name, "doc_type": d.doc_type, "date": d.date,
                        "doc_id": d.doc_id, "token_count": d.token_count})
    (folder / "metadata.json").write_text(json.dumps({"case_id": corpus.case_id, "documents": entries}, indent=1),
                                          encoding="utf-8")
    return folder


# ------------------------------------------------------------------ corpora of real release text
def release_summaries(root: str | Path, case_id: str) -> list[tuple[str, str]]:
    """``(author, text)`` of every non-empty summary of ``case_id`` in the release: the human reference
    first, then each model's (folder order)."""
    root = Path(root)
    out = []
    for f in sorted((root / "summaries").glob("*.json")):
        data = _read_json(f)
        entry = data.get(case_id) if isinstance(data, dict) else None
        if isinstance(entry, dict) and isinstance(entry.get("summary/long"), str) and entry["summary/long"].strip():
            out.append(("human", entry["summary/long"]))
            break
    for model_dir in sorted(p for p in (root / "summaries").iterdir() if p.is_dir()):
        for f in sorted(model_dir.glob("*.json")):
            data = _read_json(f)
            text = (data.get("results") or {}).get(case_id) if isinstance(data, dict) else None
            if isinstance(text, str) and text.strip():
                out.append((model_dir.name, text))
                break
    return out


def summaries_corpus(root: str | Path, case_id: str) -> Corpus:
    """One case's summaries as its documents (titled ``Summary by <author>``; no dates)."""
    found = release_summaries(root, str(case_id))
    if not found:
        raise CorpusError(f"release {root}: no summaries of case {case_id}")
    return Corpus.build(str(case_id), [t for _, t in found], [f"Summary by {a}" for a, _ in found],
                        ["Summary"] * len(found), source=f"{root}/summaries")


def benchmark_case_ids(root: str | Path) -> list[str]:
    ids = []
    for f in sorted((Path(root) / "summaries").glob("50_cases_for_benchmarking*.json")):
        data = _read_json(f)
        if isinstance(data, dict):
            ids += [str(k) for k in data]
    return ids


def large_corpus(root: str | Path, target_tokens: int = 512_000) -> Corpus:
    """A corpus of about ``target_tokens`` tokens of real release text: the summaries of benchmark cases,
    one document per summary, case after case until the target is reached."""
    texts, titles = [], []
    total = 0
    enc = encoding()
    for cid in benchmark_case_ids(root):
        for author, text in release_summaries(root, cid):
            texts.append(text)
            titles.append(f"Case {cid} summary by {author}")
            total += len(enc.encode(text, disallowed_special=()))
            if total >= target_tokens:
                return Corpus.build("benchmark", texts, titles, ["Summary"] * len(texts))
    return Corpus.build("benchmark", texts, titles, ["Summary"] * len(texts))


_JSON_CACHE: dict = {}


def _read_json(path: Path):
    key = str(path)
    if key not in _JSON_CACHE:
        try:
            _JSON_CACHE[key] = json.loads(path.read_text(encoding="utf-8")) if path.stat().st_size else None
        except (OSError, json.JSONDecodeError, RecursionError):
            _JSON_CACHE[key] = None  # empty or broken release files are the audit's business, not ours
    return _JSON_CACHE[key]
