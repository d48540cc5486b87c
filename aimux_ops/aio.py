"""The asyncio twin of the typed API: ``await aio.generate_text(...)``, ``async for event in
aio.stream_text(...)``, ``await aio.generate_object(...)``, with the same keywords, results and
events as ``aimux_ops.generate_text`` & co. (``api._generated``).

No thread per call and no second I/O stack: a stream's blocking steps run on one small pool over
the one stream engine, and a cancel of the awaiting task cancels the stream and every running
``execute`` (``api.typed``). ``execute`` functions may be ``async`` (run as tasks of the loop)
or sync (run on the loop's default executor).
"""

from __future__ import annotations

from .api._generated import async_generate_object as generate_object
from .api._generated import async_generate_text as generate_text
from .api._generated import async_stream_text as stream_text
from .api.typed import AsyncExecute, AsyncTextStream

__all__ = ["AsyncExecute", "AsyncTextStream", "generate_object", "generate_text", "stream_text"]
