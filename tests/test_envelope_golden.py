"""Every envelope byte-identical to the golden file written by the projection before it was made
fast (issue 16: no behaviour change). The cases are in ``envelope_cases.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from envelope_cases import GOLDEN, _text, cases, outcome, remember

_GOLDEN: dict[str, dict[str, Any]] = {
    row.pop("case"): row for row in map(orjson.loads, GOLDEN.read_bytes().splitlines())
}
_CASES = dict(cases())
#: Cases whose envelope does not validate against schema/ (a payload set to the wrong type after
#: construction, a foreign core's payload decoded as sent): projected as given, as before.
_OFF_SCHEMA = {
    "payload-set-after-weird",
    "decoded-invalid-payload",
    "payload-data-big-dict",  # the cut JSON text of `data`, escaped again, is over 16 KiB + 64
    "payload-data-big-list",
}


@pytest.fixture
def off_schema(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    name = request.node.callspec.params["name"]
    if name in _OFF_SCHEMA:
        import conftest

        assert conftest._problems, "expected the session check to flag this envelope"
        conftest._problems.clear()


def test_the_golden_file_covers_every_case() -> None:
    assert set(_GOLDEN) == set(_CASES)
    assert len(_GOLDEN) > 100


@pytest.mark.parametrize("name", sorted(_CASES))
@pytest.mark.usefixtures("off_schema")
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # the off-schema cases' own
def test_envelope_is_byte_identical_to_the_golden(name: str) -> None:
    remember()
    assert outcome(_CASES[name]) == _GOLDEN[name]


def test_projecting_twice_gives_the_same_bytes() -> None:
    remember()
    from aimux_ops.wire.envelope import project

    for name, build in _CASES.items():
        if name in _OFF_SCHEMA:  # the parametrized test covers these
            continue
        try:
            exc = build()
        except Exception:
            continue
        first = project(exc)
        assert project(exc) == first, name
        assert _text(first) == _GOLDEN[name]["envelope"], name
