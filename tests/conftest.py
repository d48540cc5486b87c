"""Session-wide checks: every envelope the core projects during the tests is validated against
schema/ (a failure is reported by the test that produced it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fault_server import FaultServer, serve
from helpers import assert_valid_envelope

import aimux_ops.boundary.dispatch
import aimux_ops.wire.envelope

_problems: list[str] = []
_original: Callable[[BaseException], bytes] = aimux_ops.wire.envelope.project


def _validating_project(exc: BaseException, *, remember: bool = False) -> bytes:
    data = _original(exc, remember=remember)
    try:
        assert_valid_envelope(data)
    except Exception as problem:
        _problems.append(f"{type(problem).__name__}: {problem}\n{data[:2000]!r}")
    return data


aimux_ops.wire.envelope.project = _validating_project
aimux_ops.boundary.dispatch.project = _validating_project  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    """The fault-injecting OpenAI-compatible server on 127.0.0.1, one per test module."""
    with serve() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _every_envelope_is_valid() -> Iterator[None]:
    _problems.clear()
    yield
    assert not _problems, "an envelope failed schema validation:\n" + "\n".join(_problems)


@pytest.fixture(autouse=True)
def _generated_secrets_forgotten(request: pytest.FixtureRequest) -> Iterator[None]:
    """A property test (a module that uses hypothesis' ``given``) runs calls with generated
    keys and headers, and the core remembers each for the whole process
    (``redact.remember_secret``). Hypothesis also draws strings from the package's own source
    ("tool_use"): once remembered, such a word is scrubbed out of every later test's
    recordings and errors. Put the remembered secrets back after each test of such a module."""
    if getattr(request.module, "given", None) is None:
        yield
        return
    from aimux_ops.wire import redact

    with redact._secrets_lock:
        saved = (redact._secrets.copy(), redact._secret_re, redact._secret_list)
    yield
    with redact._secrets_lock:
        secrets, redact._secret_re, redact._secret_list = saved
        redact._secrets.clear()
        redact._secrets.update(secrets)


def pytest_sessionstart(session: pytest.Session) -> None:
    """``make test-asan`` runs the C extension's suite against a copy of the package whose
    extension is built with AddressSanitizer: it must be that copy, and it must load."""
    import os

    where = os.environ.get("AIMUX_EXPECT_EXTENSIONS_FROM")
    if not where:
        return
    from aimux_ops import _speedups as _cext

    for name in ("_cchunks",):
        module = _cext.load(name)
        if module is None or not os.path.realpath(module.__file__).startswith(where):
            pytest.exit(f"aimux_ops.{name} is not the build under {where}: {module}", 3)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The AI SDK differential suite's counts (same / better / different-with-reason)."""
    import sys

    module = sys.modules.get("test_ai_sdk_differential")
    if module is not None and sum(module.TALLY.values()):
        terminalreporter.write_line(module.summary_line())
