"""``python -m gavel export inspect RUN --out DIR``: a run folder as inspect ``.eval`` logs; and the reader
``gavel evaluate --summaries`` goes through, which reads an inspect log (a ``.eval`` file or a folder of them)
with ``gavel.interop.logs`` and any other file with ``gavel.ref.inputs``. inspect_ai is imported only when a
log is read or written."""

from __future__ import annotations

from pathlib import Path

EXTRA = "reading or writing inspect logs needs the inspect extra: pip install 'gavel[inspect]'"


def is_log(path: str | Path) -> bool:
    """Whether ``path`` names inspect logs: a ``.eval`` file, or a folder holding some."""
    path = Path(path)
    return path.suffix == ".eval" or (path.is_dir() and any(path.glob("*.eval")))


def _logs():
    from gavel.ref.inputs import InputError

    try:
        from gavel.interop import logs
    except ImportError as err:
        raise InputError(f"{EXTRA} ({err})") from None
    return logs


def read_summaries(path, subject=None, problems=None, notes=None):
    """Summaries from ``path``: an inspect log through ``gavel.interop.logs.read_summaries``, any other file
    through ``gavel.ref.inputs.read_summaries`` (same arguments, same errors)."""
    if is_log(path):
        return _logs().read_summaries(path, subject, problems)
    from gavel.ref.inputs import read_summaries as read_files

    return read_files(path, subject, problems, notes=notes)


def cmd_export_inspect(args) -> int:
    written = _logs().export_run(args.run, args.out)
    for path in written:
        print(f"wrote {path}")
    print(f"{len(written)} log{'s' if len(written) != 1 else ''}; open them with: inspect view --log-dir {args.out}")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="write a run in another tool's format (inspect: .eval logs)")
    esub = p.add_subparsers(dest="cmd", required=True)
    q = esub.add_parser("inspect", help="a gavel evaluate folder as inspect .eval logs, one per summarizing model")
    q.add_argument("run", help="the run folder (gavel evaluate --out)")
    q.add_argument("--out", required=True, help="folder for the .eval logs")
    q.set_defaults(func=cmd_export_inspect)
