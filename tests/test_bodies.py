"""The JSON body check (service/api/bodies.py `check_json_body`) refuses exactly what the plain check does:
`json.loads` with the same hooks, then every string encoded to find lone surrogates. The service parses
with a decoder built once and skips the surrogate walk for a body without a `\\u` escape and few brackets;
the refusals and their messages must not change."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.api.bodies import _finite_float, _no_constant, check_json_body
from service.api.errors import ApiError, malformed

JSON = b"application/json"


def _plain(body: bytes) -> ApiError | None:
    """The check as written first: json.loads with the hooks, then the surrogate walk, for every body."""
    text = body.decode("utf-8")
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        return malformed(f"{exc.msg} at line {exc.lineno} column {exc.colno}")
    except RecursionError:
        return malformed("nested too deeply")
    except ValueError as exc:
        return malformed(str(exc))
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        where = repr(exc.object[exc.start : exc.end])[1:-1] if isinstance(exc.object, str) else "?"
        return malformed(
            f"it holds a lone UTF-16 surrogate ({where}), which is not a character; send valid Unicode text"
        )
    except (RecursionError, ValueError):
        return malformed("nested too deeply")
    return None


def _same(body: bytes) -> None:
    got, want = check_json_body(body, JSON), _plain(body)
    assert (got is None) == (want is None), body[:80]
    if got is not None and want is not None:
        assert (got.status_code, got.message, got.field, got.code) == (
            want.status_code,
            want.message,
            want.field,
            want.code,
        )


@pytest.mark.parametrize(
    "body",
    [
        b'{"message": "Can I run Llama-2-7B on a 4090?"}',
        b'\xef\xbb\xbf{"message": "a BOM first"}',
        b'{"message": "\\ud800"}',
        b'{"\\udfff": 1}',
        b'{"message": "\\\\ud800 is an escaped backslash"}',
        b'{"message": "\\u00e9t\\u00e9 \\ud83d\\ude00"}',
        b'{"a": NaN}',
        b'{"a": -Infinity}',
        b'{"a": 1e999}',
        b'{"a": 1' + b"0" * 5000 + b"}",
        b'{"a":',
        b"[" * 50 + b"]" * 50,
        b"[" * 101 + b"]" * 101,
        b"[" * 100_000,
        b'{"a": [' + b'"\\ud800", ' * 3 + b"1]}",
    ],
)
def test_refusals_are_those_of_the_plain_check(body: bytes) -> None:
    _same(body)


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.booleans())
def test_any_json_value_gets_the_plain_check_s_answer(value: object, ascii_only: bool) -> None:
    try:
        text = json.dumps(value, ensure_ascii=ascii_only)
    except ValueError:
        return
    _same(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60))
def test_any_bytes_get_the_plain_check_s_answer(tail: bytes) -> None:
    body = b'{"message": "' + tail + b'"}'
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return  # refused before parsing, by both
    _same(body)
