"""The one error type the estimator raises for bad input.

Every channel (CLI, HTTP, agents) turns it into a clear message: which field was wrong,
what was given, and what is accepted (with near names for unknown catalog ids).
"""

from __future__ import annotations


class ScenarioError(ValueError):
    """Bad or impossible input. Never a traceback for the user: channels render `str(err)`."""

    def __init__(
        self,
        field: str,
        message: str,
        *,
        accepted: str | None = None,
        suggestions: list[str] | None = None,
        code: str | None = None,
        values: dict[str, object] | None = None,
    ) -> None:
        self.field = field
        self.message = message
        self.accepted = accepted
        self.suggestions = list(suggestions or [])
        # stable id of the error kind ("unknown_model", "tp_heads", ...) and the figures in its message,
        # so channels can say it in the user's language (prompts/<lang>/answer.toml [error_code])
        self.code = code
        self.values = dict(values or {})
        super().__init__(self.render())

    def render(self) -> str:
        text = f"{self.field}: {self.message.rstrip()}"
        if not text.endswith((".", "?", "!", "。", "？", "！")):
            text += "."
        if self.suggestions:
            text += f" Did you mean: {', '.join(self.suggestions)}?"
        if self.accepted:
            text += f" Accepted: {self.accepted.rstrip('.')}."
        return text

    def to_dict(self) -> dict[str, object]:
        return {
            "field": self.field,
            "message": self.message,
            "accepted": self.accepted,
            "suggestions": self.suggestions,
            "code": self.code,
            "values": self.values,
            "error": self.render(),
        }


MAX_QUOTED_CHARS = 60


def quote(value: object, limit: int = MAX_QUOTED_CHARS) -> str:
    """`value` as an error message quotes it: at most `limit` characters (the rest elided with its length),
    so a huge input never comes back whole in the error."""
    text = str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"
