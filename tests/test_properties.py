"""Property tests: arbitrary exception chains always project to a valid, bounded envelope."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
from helpers import assert_valid_envelope
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aimux_ops import errors as E
from aimux_ops.wire.envelope import decode_error, project

texts = st.one_of(
    st.text(max_size=50),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=5),
    st.just("x" * (1024 * 1024)),
    st.just("🚫" * 700),
)
args = st.one_of(
    texts, st.integers(), st.none(), st.lists(st.integers(), max_size=3), st.binary(max_size=20)
)

AIMUX = [c for c in E.catalogue() if c is not E.RetryError]


@st.composite
def chains(draw: Any) -> BaseException:
    n = draw(st.integers(min_value=1, max_value=30))
    nodes: list[BaseException] = []
    for _ in range(n):
        if draw(st.booleans()):
            cls = draw(st.sampled_from(AIMUX))
            nodes.append(cls(draw(texts)))
        else:
            exc_cls = draw(st.sampled_from([ValueError, OSError, RuntimeError, KeyError]))
            nodes.append(exc_cls(*draw(st.lists(args, max_size=3))))
    for a, b in itertools.pairwise(nodes):
        if draw(st.booleans()):
            a.__cause__ = b
        else:
            a.__context__ = b
    if draw(st.booleans()) and n > 1:  # a cycle
        nodes[-1].__cause__ = nodes[draw(st.integers(0, n - 1))]
    if draw(st.booleans()):
        return E.RetryError(errors=nodes[: draw(st.integers(0, min(n, 20)))])
    return nodes[0]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains())
def test_any_chain_projects_to_a_valid_bounded_envelope(exc: BaseException) -> None:
    data = project(exc)
    env = assert_valid_envelope(data)
    assert env["code"] != 0
    again = decode_error(data)
    assert orjson.loads(project(again))["code"] == env["code"]


def test_ten_thousand_deep_chain() -> None:
    exc: BaseException = ValueError("bottom")
    for i in range(10_000):
        nxt = RuntimeError(i)
        nxt.__cause__ = exc
        exc = nxt
    env = assert_valid_envelope(project(exc))
    depth, node = 1, env
    while "cause" in node:
        node, depth = node["cause"], depth + 1
    assert depth == 16 and node["truncated"] == ["cause"]


def test_one_megabyte_messages_everywhere() -> None:
    exc: BaseException = ValueError("v" * 1_000_000)
    for _ in range(20):
        nxt = E.APICallError(
            "m" * 1_000_000, response_body="b" * 1_000_000, data={"d": "x" * 1_000_000}
        )
        nxt.__cause__ = exc
        exc = nxt
    data = project(E.RetryError(errors=[exc] * 30))
    assert len(data) <= 1024 * 1024
    assert_valid_envelope(data)
