"""The prompt of the params as the provider-neutral messages every provider converts (CONTRACT
§2.1, the AI SDK's ``ModelMessage``): ``prompt`` or ``messages``, each turn's parts checked
against its role before any network (an ``InvalidPromptError``, 6, naming the message and part).

A ``file`` part's ``data`` is base64 text, a ``data:`` URL (its media type and base64 taken from
it) or an http(s) URL, told apart as the AI SDK does: a string that parses as an absolute URL
is one. The short forms of earlier versions stay: ``toolCalls`` beside an assistant's text, and a
``tool`` turn of text content with its ``toolCallId`` (a ``text`` tool result).

A ``prompt`` needs no model class (cold start); ``messages`` are converted in ``messages``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InvalidPromptError
from ..providers.base import NeutralMessage, TextPart

if TYPE_CHECKING:
    from .models import CallParams

__all__ = ["neutral_messages"]


def neutral_messages(params: CallParams) -> tuple[NeutralMessage, ...]:
    if params.prompt is not None and params.messages is not None:
        raise InvalidPromptError("prompt and messages cannot be defined at the same time")
    if params.prompt is None and params.messages is None:
        raise InvalidPromptError("prompt or messages must be defined")
    if params.prompt is not None:
        return (NeutralMessage("user", (TextPart(params.prompt),)),)
    from .messages import neutral_message  # (the content models: loaded with the first messages)

    return tuple(neutral_message(i, m) for i, m in enumerate(params.messages or ()))
