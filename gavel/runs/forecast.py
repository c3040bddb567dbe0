"""How long a GAVEL-REF evaluation on the local model will take, said before it starts (``gavel evaluate
--provider local`` prints it; each stage prints its own forecast before it runs, then its progress bar).

The speeds are measured on the running server (``gavel.llm.pace.measure``); the answer lengths and caps
per stage are the local model's measured ones (its registry entry). Extract and style requests are known
before anything is sent; compare, residual and residual matching depend on the extracted values and are
counted as if every item held one value on each side (every pair judged) and the whole summary were
residual text, so the forecast leans long where the model extracts little. Given the run's folder, requests
whose answers its stage caches already hold are left out (they take no time) and counted apart."""

from __future__ import annotations

from pathlib import Path

from gavel.llm import pace
from gavel.ref.stages import compare, extract, residual, style


def _to_send(requests: list, provider, out, settings) -> list:
    """``requests`` less those the stage caches of the run folder ``out`` already answer."""
    from gavel.llm.runner import StageRunner

    runners, keep = {}, []
    for r in requests:
        if r.stage not in runners:
            runners[r.stage] = StageRunner(r.stage, provider, workdir=Path(out) / "runs" / r.stage, progress=False,
                                           **{**settings.runner_options, **settings.runner_namespace})
        if not runners[r.stage].is_cached(r):
            keep.append(r)
    return keep


def forecast(summaries, references, settings, speed: pace.Pace, provider=None, out=None) -> tuple[float, int]:
    """(expected seconds, requests) of ``gavel.runs.pipeline.evaluate`` on these inputs at ``speed``; with
    ``provider`` and the run folder ``out``, of the requests its caches do not answer yet."""
    reqs = requests(summaries, references, settings)
    if provider is not None and out is not None:
        reqs = _to_send(reqs, provider, out, settings)
    return pace.forecast(reqs, speed), len(reqs)


def requests(summaries, references, settings) -> list:
    """Every request the forecast counts (see the module's docstring), built with the run's checklist (its
    items' names in every prompt, as the run sends them)."""
    s = settings
    kept = [(subj, c, t) for subj, c, t in summaries if c in references]
    texts = kept + [("human", c, references[c]) for c in sorted({c for _, c, _ in kept})]
    reqs = extract.build_requests([extract.Summary(*x) for x in texts], s.extractor, s.items,
                                  s.cap("extract", s.extractor), s.structured)
    one = ("a value",)
    pairs = [compare.Pair(subj, c, it.key, one, ("another value",)) for subj, c, _ in kept for it in s.items]
    reqs += [r for r, _ in compare.build_requests(pairs, s.judge, s.seed, s.cap("compare", s.judge), s.structured,
                                                  checklist=s.checklist)[0]]
    reqs += residual.build_requests([(subj, c, [t]) for subj, c, t in texts], s.extractor,
                                    s.cap("residual", s.extractor), s.structured)
    rpairs = [compare.Pair(subj, c, compare.RESIDUAL_ITEM, one * 3, ("another value",) * 3) for subj, c, _ in kept]
    reqs += [r for r, _ in compare.build_requests(rpairs, s.judge, s.seed, s.cap("residual_match", s.judge),
                                                  s.structured, stage="residual_match", checklist=s.checklist)[0]]
    reqs += [r for r, _ in style.build_requests([(subj, c, t, references[c]) for subj, c, t in kept], s.judge,
                                                s.seed, s.cap("style", s.judge), s.structured, checklist=s.checklist)]
    return reqs


def announcer(summaries, references, settings, provider, repeats: int = 1, show=None,
              speed: pace.Pace | None = None, out=None) -> pace.Announcer:
    """``Settings.pace`` of a run on the local model: on first need (the first stage with a request to send;
    a run answered wholly from the cache never starts the server) it measures the server's speed, says how
    long the whole evaluation will take, and gives the speed to each stage's own forecast. With the run's
    folder ``out``, each repeat's requests already in its caches are left out of the headline."""
    def say(speed: pace.Pace) -> str:
        if out is None:
            seconds, n = forecast(summaries, references, settings, speed)
            return (f"expected duration {pace.duration(seconds * repeats)} for at most {n * repeats} requests"
                    f"{f' ({repeats} repeats)' if repeats > 1 else ''} (cached answers take no time)")
        from gavel.runs.repeats import repeat_folder, repeat_settings

        seconds, n, every = 0.0, 0, 0
        for r in range(1, repeats + 1):
            each = repeat_settings(settings, provider, r)
            planned = requests(summaries, references, each)
            to_send = _to_send(planned, provider, repeat_folder(out, r), each)
            seconds, n, every = seconds + pace.forecast(to_send, speed), n + len(to_send), every + len(planned)
        return (f"expected duration {pace.duration(seconds)} for at most {n} requests to send"
                f"{f' ({repeats} repeats)' if repeats > 1 else ''}; {every - n} answered from the cache "
                f"(no time)")
    return pace.Announcer(provider, settings.extractor, say, show, speed)
