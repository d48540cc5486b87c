"""One provider call, shared by the generate ops: params → the provider-neutral call → provider
(``model.provider``) → API key → request → transport (live, recording or replay) → the AI SDK's
retry loop around one attempt (streams: until the first event) → the result or the events.

Nothing here knows a wire format: URL, headers, body, parsing and stream grammar belong to the
provider (``aimux_ops.providers``); validation of tools and objects to ``tools``.

Each call's secrets (``redact.Secrets``: its key, secret header values, URL secrets) are known once
it is built: active while it runs (its recording and log lines), attached to every exception
leaving it (its envelope), and its result and every event pass through the same scrub.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import AimuxError
from ..http.recording import Recorder, open_transport
from ..http.retry import retry_with_exponential_backoff
from ..http.transport import Deadline, Response, SendGuard, Transport, default_transport
from ..providers import Provider, get_provider
from ..providers.base import (
    GenerateResult,
    LanguageModelCall,
    ObjectFormat,
    Settings,
    StreamState,
    ToolDef,
)
from ..wire.redact import (
    DeltaScrub,
    attach,
    call_secrets,
    guard_url,
    plain_text,
    redact_headers,
    remember_header_secrets,
    scrub_events,
    scrub_values,
)
from .limits import check_api_key, check_base_url, check_headers
from .prompt import neutral_messages
from .registry import EventBatch, StreamContext
from .tools import check_schema, tool_call

if TYPE_CHECKING:
    from .models import CallParams

__all__ = ["Call", "CallSetup", "neutral_call", "run_call", "run_stream"]

T = TypeVar("T")


def neutral_call(
    params: CallParams, *, stream: bool, object_format: ObjectFormat | None = None
) -> LanguageModelCall:
    """The provider-neutral call of ``params``; invalid tool schemas and prompts fail here,
    before any network."""
    tools: list[ToolDef] = []
    for name, spec in (params.tools or {}).items():
        if spec.type == "provider":
            tools.append(ToolDef(name, spec.description, {}, spec.id, spec.args))
            continue
        check_schema(spec.input_schema, f"tools.{name}.inputSchema")
        tools.append(ToolDef(name, spec.description, spec.input_schema))
    choice = params.tool_choice
    named = choice is not None and not isinstance(choice, str)  # a ToolChoiceTool (one tool)
    return LanguageModelCall(
        model_id=params.model.model_id,
        system=params.system,
        messages=neutral_messages(params),
        settings=Settings(
            max_output_tokens=params.max_output_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=params.top_k,
            presence_penalty=params.presence_penalty,
            frequency_penalty=params.frequency_penalty,
            stop_sequences=params.stop_sequences,
            seed=params.seed,
        ),
        tools=tuple(tools),
        tool_choice="tool" if named else choice,  # type: ignore[arg-type]
        tool_choice_name=choice.tool_name if named else None,  # type: ignore[union-attr]
        object_format=object_format,
        stream=stream,
    )


class CallSetup:
    """What every model call of one op invocation shares (a loop's steps): the provider, the API
    key and the call's secrets, each checked once, before the key is loaded or anything is
    sent."""

    __slots__ = ("base_url", "key", "provider", "secrets")

    def __init__(self, params: CallParams) -> None:
        spec = params.model
        self.provider: Provider = get_provider(spec.provider, spec.model_id)
        # what the caller cannot set, refused before the key is loaded or anything is sent
        check_headers(spec.headers, "model.headers")
        check_headers(params.headers, "headers")
        if spec.base_url is not None:
            check_base_url(spec.base_url)
        rec = params.recording
        replay = rec is not None and rec.mode == "replay"
        key = self.provider.load_api_key(spec.api_key, spec.api_key_env, required=not replay)
        self.secrets = call_secrets(key, (spec.headers, params.headers), (spec.base_url,))
        try:
            with self.secrets.active():
                check_api_key(key, spec.api_key is not None)
                # the process-wide memory too (a defence in depth: the call relies on its own
                # secrets)
                self.base_url = guard_url(spec.base_url) if spec.base_url else None
                remember_header_secrets(spec.headers, params.headers)
        except BaseException as exc:
            attach(exc, self.secrets)
            raise
        self.key = key


class Call:
    """One op invocation: provider, request, transport and recording, shared by its attempts
    (``setup``: what it shares with the other model calls of its op, made here when not
    given)."""

    def __init__(
        self, op: str, params: CallParams, call: LanguageModelCall, setup: CallSetup | None = None
    ) -> None:
        if setup is None:
            setup = CallSetup(params)
        self.provider: Provider = setup.provider
        self.secrets = setup.secrets
        try:
            with self.secrets.active():
                self._build(op, params, call, setup)
        except BaseException as exc:
            attach(exc, self.secrets)
            raise

    def _build(
        self, op: str, params: CallParams, call: LanguageModelCall, setup: CallSetup
    ) -> None:
        spec = params.model
        rec = params.recording
        self.params = params
        self.call = call
        self.deadline = Deadline(params.timeout_ms)
        self.request = self.provider.request(
            call, base_url=setup.base_url, api_key=setup.key, headers=(spec.headers, params.headers)
        )
        self.transport: Transport
        self.recorder: Recorder | None
        self.transport, self.recorder = open_transport(
            rec.mode if rec is not None else None,
            rec.path if rec is not None else "",
            op,
            lambda: params.model_dump(mode="json", by_alias=True, exclude_none=True),
            default_transport,
        )

    def send(self) -> Response:
        resp = self.transport.send(self.request, self.deadline)
        if not 200 <= resp.status < 300:
            try:
                raise self.provider.failed_response_error(resp)
            finally:
                resp.close()
        return resp

    def retry(self, attempt: Callable[[], T], cancelled: threading.Event | None = None) -> T:
        r = self.params.retry
        return retry_with_exponential_backoff(
            attempt,
            max_retries=self.params.max_retries,
            initial_delay_ms=r.initial_delay_ms if r is not None else 2000,
            backoff_factor=r.backoff_factor if r is not None else 2,
            cancelled=cancelled,
            deadline_remaining=self.deadline.remaining,
        )

    def parse(self) -> tuple[GenerateResult, dict[str, str]]:
        """One attempt of a call op: its parsed result and the response's headers, redacted
        (the AI SDK's ``response.headers``)."""
        resp = self.send()
        return self.provider.parse_result(resp, self.call), redact_headers(resp.headers)

    def finish_ok(self, result: Any) -> None:
        if self.recorder is not None:
            self.recorder.finish_ok(result)

    def finish_error(self, exc: BaseException) -> None:
        if self.recorder is not None:
            self.recorder.finish_error(exc)

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()


def run_call(
    op: str,
    params: CallParams,
    call_of: Callable[[], LanguageModelCall],
    build: Callable[[GenerateResult], dict[str, Any]],
) -> dict[str, Any]:
    """A call op: retried attempts until a checked result, ``build`` turns it into the op's."""
    call = Call(op, params, call_of())
    with call.secrets.active():
        try:
            try:
                parsed, headers = call.retry(call.parse)
                built = build(parsed)
                built["response"] = {**built["response"], "headers": headers}
                result: dict[str, Any] = scrub_values(built)
                if call.call.warnings:  # observations, never errors (seed 003)
                    result["warnings"] = list(call.call.warnings)
            except AimuxError as exc:
                call.finish_error(exc)
                raise
            call.finish_ok(result)
            return result
        except BaseException as exc:
            attach(exc, call.secrets)
            raise
        finally:
            call.close()


def run_stream(
    op: str,
    params: CallParams,
    call_of: Callable[[], LanguageModelCall],
    ctx: StreamContext,
    setup: CallSetup | None = None,
) -> Iterator[Any]:
    """A stream op: ``text-delta`` events as they come, then the tool calls (validated) and the
    finish event. Retried only until the first event; a later failure raises (the dispatcher
    turns it into an ``error`` event). Nothing runs before the first pull. With
    ``ctx.batches`` the events come as one ``EventBatch`` per network read. ``setup``: the
    ``CallSetup`` of the op's earlier model calls (a loop's steps), else one made here."""
    batches = _in_own_context(_stream_batches(op, params, call_of, ctx, setup))
    return batches if ctx.batches else _one_by_one(batches)


def _in_own_context(gen: Iterator[T]) -> Iterator[T]:
    """``gen`` run in a context of its own at every pull, whoever pulls it (any thread or
    greenlet): the call's secrets it makes active stay active for all of its steps, and only
    for them."""
    context = contextvars.copy_context()
    try:
        while True:
            try:
                item = context.run(next, gen)
            except StopIteration:
                return
            yield item
    finally:
        context.run(gen.close)  # type: ignore[attr-defined] # a generator


def _scrubbed(batch: Any) -> EventBatch:
    """One network read's events, each scrubbed of the call's secrets (one probe for all)."""
    return EventBatch(scrub_events(batch))


def _scrubbed_read(batch: list[Any], deltas: DeltaScrub) -> EventBatch:
    """One network read's events through the stream's ``DeltaScrub`` (when the call has
    secrets), then ``_scrubbed``; their text is found once for both."""
    text = plain_text(batch)
    if deltas:
        rewritten = deltas.batch(batch, text)
        if rewritten is not batch:
            batch, text = rewritten, None
    return EventBatch(scrub_events(batch, text))


def _one_by_one(batches: Iterator[EventBatch]) -> Iterator[dict[str, Any]]:
    try:
        for batch in batches:
            yield from batch
    finally:
        batches.close()  # type: ignore[attr-defined] # a generator: its cleanup runs now


def _stream_batches(
    op: str,
    params: CallParams,
    call_of: Callable[[], LanguageModelCall],
    ctx: StreamContext,
    setup: CallSetup | None,
) -> Iterator[EventBatch]:
    neutral = call_of()
    call = Call(op, params, neutral, setup)
    with call.secrets.active():
        try:
            yield from _stream_call(call, params, neutral, ctx)
        except BaseException as exc:
            attach(exc, call.secrets)
            raise


def _stream_call(
    call: Call, params: CallParams, neutral: LanguageModelCall, ctx: StreamContext
) -> Iterator[EventBatch]:
    current: list[Response] = []
    # a cancel before the request's first byte is written keeps it from being sent; one while
    # it waits for the response headers shuts its connection down (DESIGN.md "A cancel before
    # the send"); once the headers are in, the response's ``abort`` takes over
    guard = call.request.guard = SendGuard()

    def abort() -> None:
        guard.cancel()
        for r in list(current):
            r.abort()

    ctx.on_cancel(abort)  # (at once when the stream was cancelled already)

    def attempt() -> tuple[Response, StreamState, Iterator[list[dict[str, Any]]], Any]:
        guard.check()  # cancelled: no send (and no exchange in a recording)
        resp = call.send()
        current[:] = [resp]
        if ctx.cancelled.is_set():
            resp.abort()
        state, batches = call.provider.open_stream(resp, neutral)
        try:
            first = next(batches, None)
        except BaseException:
            resp.close()
            raise
        return resp, state, batches, first

    resp: Response | None = None
    finished = False
    try:
        try:
            resp, state, batches, first = call.retry(attempt, ctx.cancelled)
            headers = ctx.response_headers = redact_headers(resp.headers)
            if first is not None:
                deltas = DeltaScrub(call.secrets)  # a key split across deltas goes too
                if out := _scrubbed_read(first, deltas):
                    yield out
                # the dispatcher checks for cancellation before each pull, and a cancel shuts
                # the socket down: no per-event check here (this is the hot path)
                for batch in batches:
                    if out := _scrubbed_read(batch, deltas):
                        yield out
                if deltas.held:
                    yield _scrubbed((deltas.flush(),))
        except AimuxError as exc:
            if ctx.cancelled.is_set():
                return
            call.finish_error(exc)
            raise
        if ctx.cancelled.is_set():
            return
        # the host tools' calls (validated) and the finish: one batch, as the stream's end
        # makes them known at once
        tail: list[Any] = []
        for _index, (call_id, name, raw) in sorted(state.tool_calls.items()):
            event = tool_call(call_id, name, raw, params.tools)
            event["type"] = "tool-call"
            tail.append(event)
        finish: dict[str, Any] = {
            "type": "finish",
            "finishReason": state.finish_reason,
            "usage": state.usage,
            "response": {
                "id": state.response_id,
                "modelId": state.model_id,
                "headers": headers,
            },
        }
        if neutral.warnings:  # observations, never errors (seed 003)
            finish["warnings"] = list(neutral.warnings)
        metadata = getattr(state, "provider_metadata", None)
        if metadata:
            finish["providerMetadata"] = metadata
        finish = scrub_values(finish)
        call.finish_ok(finish)
        finished = True
        yield EventBatch((*_scrubbed(tail), finish)) if tail else EventBatch((finish,))
    finally:
        if resp is not None:
            resp.close()
        if not finished and call.recorder is not None and ctx.cancelled.is_set():
            try:
                call.recorder.finish_cancelled()
            except AimuxError:
                pass
        call.close()
