"""GPU names the catalog does not list, read from a question: "my laptop has an MX450 2G", "RX 6800 16GB",
"Arc A770". The name is passed on as the user wrote it, with the memory when stated; the estimator takes
such a card at its stated size under its own name (tools/catalog/named_gpus.py) and asks for the memory
when none is stated. Never replaced by another card of the same memory.
"""

from __future__ import annotations

from service.agent.offline import patterns as rx

L = r"(?<![a-z0-9.])"
R = r"(?![a-z0-9])"

_NAMED_CARD = rx.compile(
    rf"{L}("
    # AMD Radeon: RX 7900 XTX, 7900 XT, RX 6800, Radeon PRO W7900
    rf"(?:amd\s*)?(?:radeon\s*)?(?:pro\s*)?(?:rx\s*\d{{4}}(?:\s*(?:xtx|xt|gre))?|w\d{{4}}|\d{{4}}\s*(?:xtx|xt|gre))"
    # NVIDIA laptop and older GeForce, workstation cards: MX450, GTX 1080 Ti, Quadro RTX 5000, RTX A2000
    rf"|(?:nvidia\s*)?(?:geforce\s*)?(?:mx\s*\d{{3}}|gtx\s*\d{{3,4}}(?:\s*ti)?)"
    rf"|(?:nvidia\s*)?quadro\s*(?:rtx\s*|[a-z]\s*)?\d{{3,4}}"
    rf"|(?:nvidia\s*)?rtx\s*a2000"
    # Intel Arc
    rf"|(?:intel\s*)?arc\s*[ab]\d{{3}}"
    rf"){R}(?:[\s\-_]*\(?(\d{{1,3}})\s*(?:gb|g|gib){R}\)?)?"
)
# "a 2GB MX450": the memory before the name
_MEMORY_BEFORE = rx.compile(r"(?<![\d.])(\d{1,3})\s*(?:gb|g|gib)\s*(?:的\s*)?$")


def named_card(low: str) -> tuple[str, int, int] | None:
    """(the card as named, with ' <N>gb' when its memory is stated; start; end) of a card outside the parser's
    catalog names, or None."""
    m = _NAMED_CARD.search(low)
    if m is None:
        return None
    name = " ".join(m.group(1).split())
    gb = m.group(2)
    start = m.start()
    if gb is None:
        before = _MEMORY_BEFORE.search(low[:start])
        if before:
            gb, start = before.group(1), before.start()
    return (f"{name} {int(gb)}gb" if gb else name), start, m.end()
