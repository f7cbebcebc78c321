"""The semantic half of grounding: a verdict word beside a total must match that total's `fits`, and a
figure beside one component's name must not be another component's.

"It fits comfortably: 117.17 GiB per GPU" passes the figure check (117.17 GiB is the tool's total)
but says the opposite of the estimator's verdict for it. A sentence that states a verdict (English or
Chinese) and cites a total the tool returned (the job's, or a suggestion's) must agree with the
verdict the tool gave for that total; if every total it cites disagrees, the sentence is refused.
Likewise "AdamW states take 12.55 GiB" (the weights' figure; the optimizer states are 50.21 GiB): a
sentence that names exactly one component and cites exactly one figure, only other components', is refused.
"""

from __future__ import annotations

import re

from service.agent.llm.grounding import Figure, find_figures

# negations first: "does not fit" contains "fit"
_NEGATIVE = re.compile(
    r"(?i:\b(?:does ?n[o']t|do ?n[o']t|won'?t|will not|would not|wouldn'?t|cannot|can'?t|not) fit\b"
    r"|\bnot enough\b|\btoo (?:big|large)\b|\bout of memory\b|\bOOM\b|\bexceeds?\b|\bshort by\b)"
    r"|放不下|装不下|不够|超出|爆显存"
)
_POSITIVE = re.compile(
    r"(?i:\bfits?\b|\bfit comfortably\b|\benough (?:memory|vram)\b)|放得下|装得下|能放下|够用|足够"
)


def verdict_of(sentence: str) -> bool | None:
    """True for "it fits", False for "it does not fit", None for no verdict word."""
    if _NEGATIVE.search(sentence):
        return False
    if _POSITIVE.search(sentence):
        return True
    return None


def contradicted(sentence: str, verdicts: list[tuple[int, bool]]) -> list[Figure]:
    """The totals the sentence cites whose verdict it contradicts (empty when it agrees or states none).

    Read clause by clause (`;`): a clause's figures go with its own verdict word only ("fewest that fit: 8
    (58.34 GiB); 4 do not fit (114.29 GiB)"; "116 fits at 40.49 GiB; one step beyond, 117 needs 40.70 GiB"):
    a clause without one states no verdict."""
    if not verdicts:
        return []
    bad: list[Figure] = []
    for clause in _CLAUSE_END.split(sentence):
        said = verdict_of(clause)
        if said is None:
            continue
        for fig in find_figures(clause):
            cited = [
                fits for total, fits in verdicts if any(lo <= total <= hi for lo, hi in fig.byte_intervals())
            ]
            if cited and all(fits != said for fits in cited):
                bad.append(fig)
    return bad


_CLAUSE_END = re.compile(r"[;；]")


# phrases that contain a component's word but name something else, removed before the names are read
_NOT_NAMES = re.compile(
    r"(?i:gradient[ _-]?(?:checkpointing|accumulation)|activation[ _-]?(?:checkpointing|offloading|recompute))"
    r"|梯度检查点|梯度累积|不记录梯度|无梯度|激活重计算|(?i:without gradients?|no[ _-]grad)"
)
_NAMES = {
    "master_weights": re.compile(r"(?i:\bmaster[ _-]?(?:weights|copy)\b)|主权重"),
    "weights": re.compile(r"(?i:\bweights\b)|权重"),
    "gradients": re.compile(r"(?i:\bgradients?\b)|梯度"),
    "optimizer_states": re.compile(r"(?i:\boptimi[sz]er\b|\badamw?\b)|优化器"),
    "activations": re.compile(r"(?i:\bactivations?\b)|激活"),
    "kv_cache": re.compile(r"(?i:\bkv[ _-]?cache\b)|KV ?缓存"),
}


_STEMS = {
    "master_weights": "master",
    "weights": "weight",
    "gradients": "gradient",
    "optimizer_states": "optimizer",
    "activations": "activation",
    "kv_cache": "kv",
}


def named_component(sentence: str) -> str | None:
    """The one component a sentence names (None for none or several)."""
    text = _NOT_NAMES.sub(" ", sentence)
    text = _NAMES["master_weights"].sub(" MASTER ", text) if _NAMES["master_weights"].search(text) else text
    named = [name for name, pattern in _NAMES.items() if name != "master_weights" and pattern.search(text)]
    if "MASTER" in text:
        named.append("master_weights")
    return named[0] if len(named) == 1 else None


def misattributed(sentence: str, components: list[tuple[int, str]]) -> list[Figure]:
    """Figures the sentence gives its one named component that are only other components' figures."""
    if sentence.lstrip().startswith("|"):
        return []  # a table row (a comparison: one component across options) is a list, not a claim
    name = named_component(sentence)
    figures = find_figures(sentence)
    if name is None or not components or len(figures) != 1:
        return []  # one name and one figure: a single claim ("Biggest parts: a X, b Y" is a list)
    bad: list[Figure] = []
    for fig in figures:
        owners = {
            owner for size, owner in components if any(lo <= size <= hi for lo, hi in fig.byte_intervals())
        }
        # a named part also covers the parts of its kind ("fp32 weights" for autocast_weight_copies)
        if owners and not any(_STEMS[name] in owner for owner in owners):
            bad.append(fig)
    return bad
