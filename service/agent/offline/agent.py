"""OfflineAgent: the deterministic brain (parser + estimator + templates), no LLM.

Stream for an estimate question: ScenarioEvent (the scenario as stated, after merging a
follow-up), EstimateEvent, TokenEvents (one per line of the templated answer), DoneEvent.
Concept, list and help questions: TokenEvents then DoneEvent (scenario and estimate null).
Bad input: one ErrorEvent with the field, the accepted values, near names and a clear text.

`Answer.scenario` is the scenario *as stated* (only what the user said, follow-ups merged):
`ConversationState.record_turn` keeps it, and the next follow-up modifies it; the estimator's
filled-in scenario is `Answer.estimate.scenario`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import Any

from pydantic import ValidationError

from service.agent.asked import Asked
from service.agent.asked_text import asked_lines
from service.agent.assumption_text import assumption_text
from service.agent.base import ConversationState
from service.agent.events import (
    AgentEvent,
    Answer,
    AskedEvent,
    DoneEvent,
    ErrorEvent,
    EstimateEvent,
    Language,
    ScenarioEvent,
    TokenEvent,
)
from service.agent.inquiry_answer import answer_inquiry, subject_for
from service.agent.offline.followup import is_followup, merge_followup
from service.agent.offline.inquiry import Inquiry, read_inquiry
from service.agent.offline.kb import kb_entry
from service.agent.offline.language import detect_language
from service.agent.offline.parser import ParsedQuestion, normalise, parse_question
from service.agent.paste.answer import paste_events
from service.agent.paste.split import split_message
from service.agent.pieces import text_groups
from service.agent.render import (
    display_texts,
    render_concept_lines,
    render_detail_lines,
    render_error,
    render_gpu_list,
    render_help,
    render_missing_model,
    render_model_list,
    render_scenario_line,
)
from service.agent.summary import summary_lines, text_summary
from service.hub import estimate_any_model, looks_like_repo_id
from tools.catalog import find_gpu, resolve_model
from tools.errors import ScenarioError
from tools.result import Assumption, Estimate
from tools.scenario import Scenario

log = logging.getLogger(__name__)

NO_EFFECT_FIELDS = frozenset(
    {"epochs", "learning_rate", "gradient_accumulation_steps", "warmup_steps", "lora_alpha", "lora_dropout"}
)

EstimateFn = Callable[..., Estimate]


def _default_estimate(scenario: Scenario, plan: bool = True) -> Estimate:
    return estimate_any_model(scenario, plan=plan)  # catalog first; `org/name` ids the catalog lacks: the Hub


def chunk_lines(lines: list[str]) -> list[str]:
    """Token chunks: one per line (newline kept), so a terminal or SSE client shows text as it comes."""
    return [line + "\n" for line in lines]


def _text_events(chunks: list[str], piece_chars: int) -> Generator[TokenEvent, None, str]:
    """A TokenEvent per chunk, or (`piece_chars` > 0) per piece of consecutive chunks of up to that many
    characters (`text_groups`); returns the whole text."""
    pieces = ["".join(group) for group in text_groups(chunks, piece_chars)] if piece_chars > 0 else chunks
    for piece in pieces:
        yield TokenEvent(text=piece)
    return "".join(chunks)


class OfflineAgent:
    """Implements `service.agent.base.Agent` without any LLM."""

    name = "offline"

    def __init__(self, estimate_fn: EstimateFn | None = None, *, preload: bool = True) -> None:
        self._estimate: EstimateFn = estimate_fn or _default_estimate
        if preload:
            preload_resources()

    async def stream(
        self, question: str, state: ConversationState, language: Language | None = None
    ) -> AsyncIterator[AgentEvent]:
        for event in self.events(question, state, language):
            yield event

    def events(
        self,
        question: str,
        state: ConversationState,
        language: Language | None = None,
        *,
        piece_chars: int = 0,
    ) -> Iterator[AgentEvent]:
        """`stream`'s events, each made when it is asked for: the offline agent never waits on I/O, so it
        needs no event loop (the worker processes call this). `piece_chars` > 0: the text comes in pieces of
        consecutive lines of up to that many characters (`text_groups`, the chat stream's rule), not one
        TokenEvent per line; the agent's blocks of lines are always apart (another event between them), so
        the pieces are those `stream`'s line events merge into (service.api.sse_wire.merge_tokens)."""
        lang: Language = language or detect_language(question, default=state.language or "en")
        pasted = split_message(question)  # a pasted config, command line, error or log (service/agent/paste)
        if pasted is not None:
            yield from paste_events(pasted, question, state, lang, self._estimate)
            return
        parsed = parse_question(question, lang)
        if parsed.intent == "unknown" and state.scenario and read_inquiry(normalise(question)) is not None:
            # "what's the max context then?", "最大batch呢": an inverse question about the job before
            parsed = parsed.model_copy(update={"intent": "estimate", "followup": True})
        if parsed.intent == "estimate":
            yield from self._estimate_events(parsed, state, lang, piece_chars)
            return
        text = yield from _text_events(chunk_lines(self._text_lines(parsed, lang)), piece_chars)
        yield DoneEvent(answer=self._answer(parsed, lang, text, state, None, None, text_summary(text)))

    async def answer(
        self, question: str, state: ConversationState, language: Language | None = None
    ) -> Answer:
        """Run `stream` to the end; the Answer, or ScenarioError for bad input."""
        for event in self.events(question, state, language):
            if isinstance(event, DoneEvent):
                return event.answer
            if isinstance(event, ErrorEvent):
                raise ScenarioError(
                    event.field or "question",
                    event.message,
                    accepted=event.accepted,
                    suggestions=event.suggestions,
                )
        raise RuntimeError("the offline agent ended without an answer")

    # --- estimate questions ------------------------------------------------------------------------

    def _estimate_events(
        self, parsed: ParsedQuestion, state: ConversationState, lang: Language, piece_chars: int
    ) -> Iterator[AgentEvent]:
        inquiry = read_inquiry(normalise(parsed.question))
        merged = merge_followup(state.scenario, parsed)
        stated = subject_for(inquiry, merged)  # "the largest model": a size for the search to replace
        has_subject = any(k in stated for k in ("model", "params", "architecture"))
        if not has_subject and parsed.topic:
            # "what about 3 epochs?" / "FSDP vs ZeRO-3" with nothing to modify: answer the concept instead
            text = yield from _text_events(chunk_lines(self._concept_lines(parsed.topic, lang)), piece_chars)
            yield DoneEvent(answer=self._answer(parsed, lang, text, state, None, None, text_summary(text)))
            return
        if not has_subject:
            yield ErrorEvent(
                message=render_missing_model(lang),
                field="model",
                accepted="a catalog model id or alias, or a bare size such as 7B / 70亿",
                detail={"stated": stated, "language": lang},
            )
            return
        try:
            scenario = Scenario.model_validate(stated)
        except ValidationError as err:
            yield _validation_error(err, lang, stated)
            return
        try:  # catalog names first (cheap): an unknown model or GPU is answered before any text
            _check_names(scenario)
        except ScenarioError as err:
            yield _scenario_error(err, lang, stated)
            return
        yield ScenarioEvent(scenario=scenario)
        # First token before the estimator and planner run: what was understood (time to first token).
        said = {k: v for k, v in scenario.stated().items() if k in merged or k not in stated}
        text = render_scenario_line(said, lang, followup=is_followup(parsed, state.scenario)) + "\n\n"
        yield TokenEvent(text=text)
        asked, target = _inquiry_answer(inquiry, scenario)
        if asked is not None:
            yield AskedEvent(asked=asked)
        try:
            estimate = self._estimate(target, plan=True)
        except ScenarioError as err:
            yield _scenario_error(err, lang, stated)
            return
        except ValidationError as err:
            yield _validation_error(err, lang, stated)
            return
        except Exception:  # a defect in the estimator must not reach the user as a traceback
            log.exception("estimator failed for %s", stated)
            yield ErrorEvent(
                message=render_error({"field": "", "message": "internal estimator error"}, lang),
                detail={"language": lang, "stated": stated},
            )
            return
        for field, why in parsed.filled.items():  # the parser's own defaults are assumptions too
            if field not in stated or any(a.code == why.code for a in estimate.assumptions):
                continue
            said = Assumption(field=field, value=stated[field], code=why.code, values=why.values)
            said = said.model_copy(update={"reason": assumption_text(said, "en")})
            # before the estimator's own word on the same field ("InternLM2-20B is not in the catalog", then
            # what a bare 20B is taken as)
            at = next((i for i, a in enumerate(estimate.assumptions) if a.field == field), None)
            estimate.assumptions.insert(len(estimate.assumptions) if at is None else at, said)
        # the panel texts once: the `display` event and the answer's lines say the same texts
        display = display_texts(estimate, lang)
        estimated = EstimateEvent(estimate=estimate)
        estimated._display = display
        yield estimated
        lead, opening = _asked_lines(asked, lang)
        summary = summary_lines(estimate, lang, parsed.asks, display, lead=lead)
        detail = [*opening, *render_detail_lines(estimate, lang, display)]
        text += yield from _text_events(chunk_lines([*summary, "", *detail]), piece_chars)
        if stated is not merged and asked is not None and asked.at is not None:
            scenario = (
                asked.at.scenario
            )  # what a follow-up modifies: the model at the edge, not the search's seed
        answer = self._answer(parsed, lang, text, state, scenario, estimate, "\n".join(summary))
        answer.asked = asked
        yield DoneEvent(answer=answer)

    # --- everything else -----------------------------------------------------------------------------

    def _text_lines(self, parsed: ParsedQuestion, lang: Language) -> list[str]:
        if parsed.intent == "concept" and parsed.topic:
            return self._concept_lines(parsed.topic, lang)
        if parsed.intent == "list_gpus":
            from tools.catalog import list_gpus

            return render_gpu_list(list_gpus(), lang).splitlines()
        if parsed.intent == "list_models":
            from tools.catalog import list_models

            return render_model_list(list_models(), lang).splitlines()
        return render_help("greeting" if parsed.intent == "greeting" else "unknown", lang).splitlines()

    def _concept_lines(self, topic: str, lang: Language) -> list[str]:
        entry = kb_entry(topic, lang)
        if entry is None:
            return render_help("unknown", lang).splitlines()
        example = self._example(entry.example)
        compare = self._example(entry.compare)
        return render_concept_lines(entry.body, lang, example, compare, entry.example, entry.compare)

    def _example(self, stated: dict[str, Any]) -> Estimate | None:
        if not stated:
            return None
        try:
            return self._estimate(Scenario.model_validate(stated), plan=False)
        except (ScenarioError, ValidationError):
            log.warning("knowledge-base example does not estimate: %s", stated)
            return None

    def _answer(
        self,
        parsed: ParsedQuestion,
        lang: Language,
        text: str,
        state: ConversationState,
        scenario: Scenario | None,
        estimate: Estimate | None,
        summary: str,
    ) -> Answer:
        return Answer(
            question=parsed.question,
            language=lang,
            scenario=scenario,
            estimate=estimate,
            answer=text,
            summary=summary,
            agent=self.name,
            conversation_id=state.conversation_id,
        )


def _validation_error(err: ValidationError, lang: Language, stated: dict[str, Any]) -> ErrorEvent:
    first = err.errors()[0] if err.errors() else {}
    field = ".".join(str(p) for p in first.get("loc", ())) or "scenario"
    message = str(first.get("msg", "invalid value"))
    values = {**{k: v for k, v in dict(first.get("ctx") or {}).items()}, "input": stated.get(field)}
    data = {
        "field": field,
        "message": f"{message} (got {stated.get(field)!r})",
        "code": f"value_{first.get('type', 'invalid')}",
        "values": values,
    }
    return ErrorEvent(
        message=render_error(data, lang),
        field=field,
        detail={"language": lang, "stated": stated},
    )


def preload_resources() -> None:
    """Load the (cached, read-only) templates, labels, knowledge base and catalogs once, up front,
    so the first question's time to first token is not spent reading files."""
    from service.agent.offline.kb import match_topic
    from service.agent.prompt_files import LANGUAGES, load_toml
    from tools.catalog import list_gpus, list_models, lookup_model

    for language in LANGUAGES:
        load_toml(language, "answer.toml")
        load_toml(language, "labels.toml")
    match_topic("")
    parse_question("LoRA Llama-2-7B 两张4090 batch 4 4k上下文 ZeRO-3")  # compiles the inline patterns
    list_models()
    list_gpus()
    lookup_model("llama-2-7b")


def _hub_repo(name: str) -> bool:
    """An `org/name` the catalog lacks: the estimate looks it up on the Hub (service/hub.py), and says why not."""
    from tools.catalog.models import lookup_model

    return looks_like_repo_id(name) and lookup_model(name) is None


def _inquiry_answer(inquiry: Inquiry | None, scenario: Scenario) -> tuple[Asked | None, Scenario]:
    """What an inverse question or comparison asks, answered with the estimator (service/agent/inquiry_answer.py),
    and the job the answer's estimate is about; (None, the stated job) for a forward question, or when the
    search cannot run on this job (a model only the Hub knows, an option the estimator refuses)."""
    if inquiry is None:
        return None, scenario
    try:
        return answer_inquiry(inquiry, scenario)
    except (ScenarioError, ValidationError, ValueError):
        log.info("inquiry %s not answered for %s", inquiry, scenario.stated())
        return None, scenario


def _asked_lines(asked: Asked | None, lang: Language) -> tuple[str | None, list[str]]:
    """The asked figure's lines (service/agent/asked_text.py); none when a defect stops them (logged): the
    answer then reads as a plain fit answer, never a traceback."""
    if asked is None:
        return None, []
    try:
        return asked_lines(asked, lang)
    except Exception:
        log.exception("asked lines failed for %s", asked.kind)
        return None, []


def _check_names(scenario: Scenario) -> None:
    """Raise the catalog's ScenarioError (with near names) for an unknown model or GPU."""
    if scenario.model and scenario.architecture is None and not _hub_repo(scenario.model):
        resolve_model(scenario.model)
    if scenario.gpu:
        find_gpu(scenario.gpu)


def _scenario_error(err: ScenarioError, lang: Language, stated: dict[str, Any]) -> ErrorEvent:
    return ErrorEvent(
        message=render_error(err, lang),
        field=err.field,
        accepted=err.accepted,
        suggestions=err.suggestions,
        # `code`: the error's code (e.g. hub_gated), for the operator's metrics (not sent to the user)
        detail={"error": err.render(), "code": err.code, "language": lang, "stated": stated},
    )
