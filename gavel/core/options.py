"""Argument types of the command line, defined once: every numeric option of every ``gavel`` command is
checked by argparse when the command line is read, before anything is read, started or sent. A value out of
range ends the command with argparse's one-line usage error (exit status 2), naming the option.

    p.add_argument("--concurrency", type=options.positive_int, default=8)

The same checks, as plain functions raising ValueError, guard the library's own entry points
(``check_positive`` etc.), so a notebook passing ``concurrency=0`` is refused as the command line is.
"""

from __future__ import annotations

import argparse
import math


def _number(kind, text: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'a whole number' if kind is int else 'a number'}") \
            from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _ranged(kind, low=None, high=None, low_open: bool = False, what: str = ""):
    def parse(text: str):
        value = _number(kind, text)
        too_low = low is not None and (value <= low if low_open else value < low)
        if too_low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
        return value

    parse.__name__ = what.replace(" ", "_")  # argparse names the type in some messages
    return parse


positive_int = _ranged(int, 1, what="a whole number >= 1")
non_negative_int = _ranged(int, 0, what="a whole number >= 0")
positive_float = _ranged(float, 0, low_open=True, what="a number > 0")
non_negative_float = _ranged(float, 0, what="a number >= 0")
fraction = _ranged(float, 0, 1, what="a number in [0, 1]")
port = _ranged(int, 0, 65535, what="a port number in [0, 65535]")
#: a seed: any whole number numpy and the providers take (0 .. 2**32 - 1)
seed = _ranged(int, 0, 2**32 - 1, what="a whole number in [0, 4294967295]")


def check_positive(name: str, value, allow_none: bool = False) -> None:
    """ValueError naming ``name`` unless ``value`` is a whole number >= 1 (or None, when allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")


def check_fraction(name: str, value) -> None:
    """ValueError naming ``name`` unless ``value`` is a number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")


#: the knobs of a noisy stand-in judge, each a probability per single-value judgment (their sum at most 1)
NOISY_KNOBS = ("flip", "first_bias", "a_bias")


def judge_spec(text: str) -> dict:
    """``--mock-judge``: ``default`` (no noise, no bias) or ``noisy:seed=S,flip=F,first_bias=P,a_bias=Q``
    (any of the knobs; a missing one is 0) as a dict; an argparse error naming what is wrong otherwise."""
    if text.strip() in ("", "default"):
        return {}
    kind, _, rest = text.partition(":")
    if kind.strip() != "noisy":
        raise argparse.ArgumentTypeError(f"{text!r}: expected 'default' or 'noisy:seed=S,flip=F,first_bias=P,"
                                         f"a_bias=Q'")
    spec = {"seed": 0, **dict.fromkeys(NOISY_KNOBS, 0.0)}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or key not in spec:
            raise argparse.ArgumentTypeError(f"{part!r}: expected seed=S or one of {', '.join(NOISY_KNOBS)}=P")
        try:
            spec[key] = int(value) if key == "seed" else float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r}: {key} must be a {'whole number' if key == 'seed' else 'number'}") \
                from None
        if key == "seed" and not 0 <= spec[key] < 2**32 or key != "seed" and not 0 <= spec[key] <= 1:
            raise argparse.ArgumentTypeError(f"{part!r}: {key} must be in "
                                             f"{'[0, 4294967295]' if key == 'seed' else '[0, 1]'}")
    if sum(spec[k] for k in NOISY_KNOBS) > 1:
        raise argparse.ArgumentTypeError(f"{text!r}: flip + first_bias + a_bias must be at most 1")
    return spec


def judge_spec_text(spec) -> str:
    """The ``--mock-judge`` text :func:`judge_spec` reads back as ``spec`` (a recorded spec written back)."""
    if not isinstance(spec, dict):
        raise argparse.ArgumentTypeError(f"{spec!r} is not a judge spec")
    if not spec:
        return "default"
    return "noisy:" + ",".join(f"{k}={v!r}" for k, v in spec.items())


#: an option's type whose values are not what ``str`` writes back: how a recorded value is written back
_WRITTEN_BACK = {judge_spec: judge_spec_text}


def recorded(parser: argparse.ArgumentParser, record, skip: tuple = ()) -> tuple[dict, list[str]]:
    """A command's options recorded as JSON (a shard's settings, someone else's file), checked as the command
    line checks them: every option of ``parser`` (less ``skip`` and help) present and nothing else, each value
    of the kind its option gives (a flag a bool, a list option a list of strings, a typed option a value its
    type reads back unchanged, one of its choices). Returns (the values, the problems: one line each)."""
    if not isinstance(record, dict):
        return {}, [f"settings are {type(record).__name__}, not an object of options"]
    actions = [a for a in parser._actions  # noqa: SLF001 -- argparse has no public list of its options
               if a.dest not in skip and a.dest != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)]
    known = {a.dest for a in actions}
    problems = [f"unknown setting {k!r}" for k in sorted(map(str, record)) if k not in known]
    values = {}
    for a in actions:
        name = "/".join(a.option_strings) or a.dest
        if a.dest not in record:
            problems.append(f"setting {a.dest!r} ({name}) missing")
            continue
        value, said = record[a.dest], None
        if value is None:
            said = None if a.default is None and not a.required else "is null"
        elif a.nargs == 0:  # a flag: its default or its constant (store_true: false or true)
            said = None if any(value == v and type(value) is type(v) for v in (a.default, a.const)) else \
                f"is not {a.default!r} or {a.const!r}"
        elif a.nargs in ("+", "*") or isinstance(a, (argparse._AppendAction, argparse._ExtendAction)):
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
            said = None if ok and (value or a.nargs != "+") else "is not a list of strings" + (
                " (at least one)" if ok else "")
        elif a.type is None:
            said = None if isinstance(value, str) else f"is {type(value).__name__}, not a string"
        elif isinstance(value, bool) or not isinstance(value, (str, int, float, dict)):
            said = f"is {type(value).__name__}"
        else:
            try:
                back = a.type(_WRITTEN_BACK.get(a.type, str)(value))
                said = None if back == value and type(back) is type(value) else "does not read back as itself"
            except (argparse.ArgumentTypeError, ValueError, TypeError) as err:
                problems.append(f"setting {a.dest!r} ({name}): {str(err)[:160]}")
                continue
        if said is None and a.choices is not None and value is not None and value not in a.choices:
            said = f"is not one of {', '.join(map(str, a.choices))}"
        if said:
            problems.append(f"setting {a.dest!r} ({name}) {said}: {str(value)[:80]!r}")
        else:
            values[a.dest] = value
    return values, problems
