"""Which figure a question asks for besides the verdict: the summary's second line shows it.

"how big is the KV cache", "KV cache多大" -> kv_cache; "what max context can I get", "最长上下文" ->
max_context; "how many A100s do I need", "需要几张卡" -> min_gpus; "how many concurrent users" ->
concurrency. Names are service/agent/summary.py FOCUSES.
"""

from __future__ import annotations

import re

from service.agent.offline import patterns as rx
from service.agent.offline.mentions import SEP, L, R

_ASKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "max_context",
        rx.compile(
            rf"{L}(?:max(?:imum)?|longest|biggest|largest|how{SEP}(?:long|much){SEP}(?:a{SEP})?)(?:{SEP}possible)?{SEP}(?:context|ctx|sequence|seq{SEP}len)"
            rf"|{L}how{SEP}(?:long|much){SEP}(?:of{SEP}a{SEP})?context|最长(?:的)?(?:上下文|序列|context)|最大(?:的)?(?:上下文|context)|上下文(?:最长|最多)(?:能)?"
        ),
    ),
    (
        "concurrency",
        rx.compile(
            rf"{L}how{SEP}many{SEP}(?:concurrent|simultaneous|parallel){SEP}(?:users|requests|sequences|streams)|{L}max{SEP}(?:concurrency|num{SEP}seqs){R}"
            r"|(?:最多|能)(?:支持|扛|撑)?(?:多少|几)(?:路|个)?并发|并发(?:数)?(?:能)?(?:有|到)?多少"
        ),
    ),
    (
        "kv_cache",
        rx.compile(
            rf"{L}(?:how{SEP}(?:big|large|much)|size{SEP}of){SEP}(?:is{SEP})?(?:the{SEP})?kv{SEP}cache|{L}kv{SEP}cache{SEP}(?:size|memory|footprint){R}"
            rf"|{L}kv{SEP}cache{SEP}(?:take|need|use)s?|kv\s*(?:cache|缓存)\s*(?:要|占|需要)?\s*(?:多大|多少)"
        ),
    ),
    (
        "activations",
        rx.compile(
            rf"{L}(?:how{SEP}(?:big|large|much)){SEP}(?:are{SEP})?(?:the{SEP})?activations|{L}activation{SEP}memory{R}|激活(?:值)?\s*(?:要|占|需要)?\s*(?:多大|多少)"
        ),
    ),
    (
        "min_gpus",
        rx.compile(
            rf"{L}how{SEP}many{SEP}(?:\w+{SEP}){{0,3}}(?:gpus?|cards?|nodes?|a100s?|h100s?|h800s?|h200s?|h20s?|4090s?|3090s?|l40s?|a800s?|910bs?)(?:{SEP}\w+)?{SEP}(?:do|would|will|to|are|is|should|must|i|we)"
            rf"|{L}how{SEP}many{SEP}(?:\w+{SEP}){{0,3}}(?:gpus|cards){R}|{L}(?:min(?:imum)?|fewest){SEP}(?:number{SEP}of{SEP})?(?:gpus|cards){R}"
            r"|(?:需要|要|得)(?:用)?(?:几|多少)(?:张|块|台|个)|(?:几|多少)(?:张|块)(?:卡|显卡)?(?:才|够|能)|最少(?:需要|要)?(?:几|多少)(?:张|块)?"
        ),
    ),
)


def asked_figure(low: str) -> str | None:
    """The figure asked for in the (normalised) question, or None for a plain "does it fit"."""
    for name, pattern in _ASKS:
        if pattern.search(low):
            return name
    return None
