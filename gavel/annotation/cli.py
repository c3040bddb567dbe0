"""``python -m gavel annotate COMMAND``: set up, load, assign, serve and export the annotation app.

The database is ``--db`` (an SQLAlchemy URL or a file path), else ``GAVEL_ANNOTATION_DB``, else an SQLite
file in data/interim/annotation/. Passwords come from the environment variable named by ``--password-env``
(default ``GAVEL_ANNOTATOR_PASSWORD``) or are asked for; they are never taken from the command line.
The session signing key comes from ``GAVEL_ANNOTATION_SECRET_KEY`` or a private key file (``--secret-key-file``,
``GAVEL_ANNOTATION_SECRET_KEY_FILE``, default data/interim/annotation/secret_key; made 0600 on first use).
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path

from gavel.core import config, options

DEFAULT_DB = config.INTERIM_DIR / "annotation" / "annotation.db"


class AnnotateError(ValueError):
    """What an annotate command refuses (a bad option or assignment): one ``error:`` line, exit status 2, its
    trace first under ``gavel --traceback`` (gavel.cli.user_errors)."""


def db_url(given: str | None) -> str:
    value = given or config.env("GAVEL_ANNOTATION_DB") or str(DEFAULT_DB)
    if "://" in value:
        return value
    if not Path(value).parent.exists():
        Path(value).parent.mkdir(parents=True, mode=0o700)
    return f"sqlite:///{Path(value).resolve()}"


def _password(env: str, username: str) -> str:
    value = config.env(env, named_by_user=True)
    if value:
        return value
    if not sys.stdin.isatty():
        raise SystemExit(f"no password for {username!r}: set {env} or run in a terminal")
    return getpass.getpass(f"password for {username}: ")


def add_parser(sub) -> None:
    """The ``annotate`` command and its subcommands, on the one command line (gavel.cli)."""
    p = sub.add_parser("annotate", help="annotation app: adduser, load-release, assign, serve, export (--help)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", default=None, help="database URL or SQLite file")
    p.add_argument("--checklist", default=None,
                   help="load-extraction: the checklist of the value rows, a packaged name or a file (default: legal)")
    p.set_defaults(func=run)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("adduser", help="add an account")
    a.add_argument("username")
    a.add_argument("--admin", action="store_true")
    a.add_argument("--password-env", default="GAVEL_ANNOTATOR_PASSWORD")
    a = sub.add_parser("passwd", help="set a user's password (ends every session of theirs)")
    a.add_argument("username")
    a.add_argument("--password-env", default="GAVEL_ANNOTATOR_PASSWORD")
    a = sub.add_parser("load-release", help="tasks from the release: human.json reviews, value pairs, style pairs")
    a.add_argument("--release", default=None)
    a.add_argument("--prefill", default="human", choices=["human", "none"])
    # None: the meta-evaluation's sample sizes (gavel.metrics.metaeval.inputs), imported only by this command:
    # importing them costs every gavel command a second (scikit-learn, statsmodels)
    a.add_argument("--single", type=options.non_negative_int, default=None)
    a.add_argument("--multi", type=options.non_negative_int, default=None)
    a.add_argument("--style", type=options.non_negative_int, default=None)
    a.add_argument("--seed", type=options.seed, default=0)
    a = sub.add_parser("load-extraction", help="review tasks pre-filled from an LLM extraction (value rows)")
    a.add_argument("rows", help="CSV/JSONL/Parquet with case_id,item,index,value,evidence")
    a.add_argument("--release", default=None)
    a.add_argument("--source", default=None, help="name shown as the pre-fill's origin (default: file name)")
    a = sub.add_parser("assign", help="assign every task: k annotators each, k-long for the longest reviews",
                       description="Assign every task. Names are the accounts' (gavel annotate adduser); a name "
                                   "that starts with '-' goes after '--' (assign --k 2 -- -ann ann2), or as "
                                   "--adjudicator=-lead.")
    a.add_argument("annotators", nargs="+")
    a.add_argument("--k", type=options.positive_int, default=1)
    a.add_argument("--k-long", type=options.positive_int, default=3)
    a.add_argument("--n-long", type=options.non_negative_int, default=10)
    a.add_argument("--adjudicator", action="append", default=None)
    a.add_argument("--kind", default=None, choices=["extraction", "comparison", "style"])
    a = sub.add_parser("serve", help="run the web app (waitress)")
    a.add_argument("--host", default="127.0.0.1")
    a.add_argument("--port", type=options.port, default=8800)
    a.add_argument("--threads", type=options.positive_int, default=16)
    a.add_argument("--secure-cookies", action="store_true", help="set when served over HTTPS")
    a.add_argument("--secret-key-file", default=None,
                   help="the session signing key's file (mode 0600; made if missing)")
    a.add_argument("--login-limit-account", default=None,
                   help="failed logins allowed per account, e.g. '10 per 15 minutes;50 per day' "
                        "(default: GAVEL_LOGIN_LIMIT_ACCOUNT or the app's)")
    a.add_argument("--login-limit-address", default=None,
                   help="failed logins allowed per client address (default: GAVEL_LOGIN_LIMIT_ADDRESS or the app's)")
    a.add_argument("--agreement-resamples", type=int, default=None,
                   help="bootstrap resamples of the agreement page's intervals (default 2,000, the one bootstrap, as notebook 13)")
    a.add_argument("--agreement-time-limit", type=options.positive_float, default=None,
                   help="seconds one computation of the agreement table may take before its worker process is "
                        "stopped and replaced (default 300)")
    a.add_argument("--agreement-max-interval", type=options.positive_float, default=None,
                   help="the most seconds between two computations of the agreement table while the data keeps "
                        "changing (default 10)")
    a = sub.add_parser("export", help="every revision as JSONL or CSV")
    a.add_argument("out")
    a = sub.add_parser("export-tasks", help="every task with its payload (incl. the pipeline's judgment) as JSONL")
    a.add_argument("out")


def check_assign(store, args: argparse.Namespace) -> None:
    """ValueError naming what is wrong with an ``assign`` command line: the same name rule as the admin
    form's (gavel.annotation.auth.check_username), accounts that exist, counts that fit."""
    from .auth import check_username

    names = list(args.annotators) + list(args.adjudicator or [])
    for name in names:
        check_username(name)
        if store.user(name) is None:
            raise ValueError(f"no user {name!r} (add it first: gavel annotate adduser NAME)")
    if len(set(args.annotators)) != len(args.annotators):
        raise ValueError("an annotator is named twice")
    for flag, value, least in (("--k", args.k, 1), ("--k-long", args.k_long, 1), ("--n-long", args.n_long, 0)):
        if value < least:
            raise ValueError(f"{flag} must be at least {least}, not {value}")
        if flag == "--k" and value > len(args.annotators):  # --k-long: when a long review is assigned (plan)
            raise ValueError(f"{flag} {value}: each task is to have {value} annotators, but only "
                             f"{len(args.annotators)} are given")


def run(args: argparse.Namespace) -> int:
    """Carry out one ``annotate`` subcommand."""
    from gavel.core.items import load as load_checklist

    from .db import Store

    args.checklist = load_checklist(args.checklist)  # a bad checklist (ChecklistError): one line naming the file and entry
    url = db_url(args.db)

    if args.cmd == "serve":
        import waitress

        from .app import check_resamples, create_app
        from .auth import hasher

        try:
            check_resamples(args.agreement_resamples)
            hasher()
        except ValueError as err:
            raise AnnotateError(f"annotate serve: {err}") from err

        app = create_app(url, secure_cookies=args.secure_cookies, secret_key_file=args.secret_key_file,
                         login_limit_account=args.login_limit_account,
                         login_limit_address=args.login_limit_address,
                         agreement_resamples=args.agreement_resamples,
                         agreement_time_limit=args.agreement_time_limit,
                         agreement_max_interval=args.agreement_max_interval)
        print(f"annotation app on http://{args.host}:{args.port}/ (database: {url.split('://')[0]}; after "
              f"{app.config['LOGIN_LIMIT_ACCOUNT']} failed password tries per account and address, "
              f"{app.config['LOGIN_LIMIT_ADDRESS']} per address, each further try waits)", flush=True)
        try:  # waitress returns after Ctrl-C (SIGINT); SIGTERM and SIGKILL end the process, and the worker with it
            waitress.serve(app, host=args.host, port=args.port, threads=args.threads, ident="gavel")
        finally:
            app.extensions["gavel_worker"].close()
        return 0

    store = Store(url)
    if args.cmd == "adduser":
        try:
            store.add_user(args.username, _password(args.password_env, args.username), is_admin=args.admin)
        except ValueError as err:
            raise SystemExit(f"user {args.username!r} not added: {err}") from None
        print(f"user {args.username} added{' (admin)' if args.admin else ''}")
    elif args.cmd == "passwd":
        try:
            store.set_password(args.username, _password(args.password_env, args.username))
        except ValueError as err:
            raise SystemExit(f"password of {args.username!r} not changed: {err}") from None
        print(f"password of {args.username} changed; their sessions are logged out")
    elif args.cmd == "load-release":
        from gavel.core.items import load as load_checklist

        from ..release import load_release

        if not load_checklist(args.checklist).is_default:
            raise SystemExit("load-release: the release's tasks are of the default (legal) checklist; "
                             "use --checklist with load-extraction")
        from gavel.metrics.metaeval.inputs import SAMPLE_MULTI, SAMPLE_SINGLE, SAMPLE_STYLE

        from .tasks import release_tasks

        sizes = [given if given is not None else default for given, default in
                 ((args.single, SAMPLE_SINGLE), (args.multi, SAMPLE_MULTI), (args.style, SAMPLE_STYLE))]
        tasks = release_tasks(load_release(args.release), *sizes, args.seed, args.prefill)
        print(f"{store.add_tasks(tasks)} tasks added ({len(tasks)} built)")
    elif args.cmd == "load-extraction":
        from gavel.metrics.metaeval import read_value_rows

        from ..release import load_release
        from .tasks import extraction_tasks

        rows = read_value_rows(args.rows)
        s = load_release(args.release).summaries
        human = s[(s["model"] == "human") & (s["set"] == "human_eval")].drop_duplicates("case_id")
        human = human[human["case_id"].isin(set(rows["case_id"].astype(str)))]
        tasks = extraction_tasks(human[["case_id", "text", "model"]], rows, args.source or Path(args.rows).name,
                                 checklist=args.checklist)
        print(f"{store.add_tasks(tasks)} tasks added; evidence not found in the summary: "
              f"{sum(t['payload']['unlocated'] for t in tasks)}")
    elif args.cmd == "assign":
        from sqlalchemy import select

        from .db import Task
        from .tasks import plan

        with store.sessions() as s:
            q = select(Task)
            if args.kind:
                q = q.where(Task.kind == args.kind)
            tasks = [{"key": t.key, "kind": t.kind, "payload": {"words": t.data.get("words", 0)}}
                     for t in s.scalars(q)]
        try:
            check_assign(store, args)
            rows = plan(tasks, args.annotators, args.k, args.k_long, args.n_long, args.adjudicator)
            added = store.assign(rows)
        except ValueError as err:
            raise AnnotateError(f"annotate assign: {err}") from err
        print(f"{added} assignments added")
    elif args.cmd == "export":
        from .app import export_csv_lines, export_jsonl_lines

        out, n = Path(args.out), 0

        def counted():
            nonlocal n
            for r in store.iter_export_rows():
                n += 1
                yield r
        lines = export_csv_lines(counted()) if out.suffix == ".csv" else export_jsonl_lines(counted())
        with open(out, "w", encoding="utf-8", newline="") as fh:
            fh.writelines(lines)
        print(f"{n} revisions written to {out}")
    elif args.cmd == "export-tasks":
        rows = store.task_rows()
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        print(f"{len(rows)} tasks written to {args.out}")
    return 0
