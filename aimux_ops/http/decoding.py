"""The ``Content-Encoding`` of a streamed body, decoded incrementally: each network read's bytes
are decoded as they arrive (a server that flushes per event, ``Z_SYNC_FLUSH``, has each event
delivered at once), so an event stream sent compressed reads as the same events.

``gzip`` and ``deflate`` always (zlib), ``br`` when ``brotli`` / ``brotlicffi`` is installed and
``zstd`` when ``zstandard`` is: exactly the encodings httpx advertises in its default
``Accept-Encoding`` (``ACCEPT_ENCODING``, checked by the tests against what a server receives).
A corrupt body raises ``DecodingError`` (``exceptions``) caused by the decoder's own error; an
encoding none of these decodes raises ``UnsupportedContentEncoding``, one (the transport maps both
to a non-retryable ``APICallError``: the same bytes would come again).

A decompression bomb is bounded: one ``decode`` call (a whole body's, or one network read's of a
stream) yields at most ``limit`` bytes (``AIMUX_MAX_DECODED_BYTES``); each decoder stops
expanding just past it (zlib's ``max_length``, brotli's ``output_buffer_limit``, a zstd writer
whose sink stops it), and the error (``DecodedSizeError``) carries what was decoded up to the
bound (``salvaged``), as a corruption's does."""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable
from typing import Any

from .exceptions import DecodedSizeError, DecodingError

__all__ = [
    "ACCEPT_ENCODING",
    "MAX_DECODED_BYTES",
    "StreamDecoder",
    "UnsupportedContentEncoding",
    "check_content_encoding",
    "stream_decoder",
]


class UnsupportedContentEncoding(DecodingError):
    """The response names a ``Content-Encoding`` aimux cannot decode."""


UnsupportedContentEncoding.__module__ = "aimux_ops.http"


class _Overflow(Exception):
    """A decoder's output passed its bound; ``out``: what it decoded up to there."""

    def __init__(self, out: bytes) -> None:
        super().__init__("over the bound")
        self.out = out


def _optional(*names: str) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


_brotli = _optional("brotli", "brotlicffi")
_zstd = _optional("zstandard")

#: what this module decodes, in httpx's order (its default ``Accept-Encoding`` names the same)
ACCEPT_ENCODING = ", ".join(
    ["gzip", "deflate"] + (["br"] if _brotli is not None else []) + (["zstd"] if _zstd else [])
)


class _Zlib:
    """gzip (``wbits`` 31), or deflate: zlib-wrapped as the RFC says, raw as some servers send it
    (the first bytes tell, as httpx decides)."""

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._obj = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)
        self._first = not gzip

    def decode(self, data: bytes, limit: int) -> bytes:
        if self._first:
            self._first = False
            try:
                return self._bounded(self._obj.decompress(data, limit + 1), limit)
            except zlib.error:
                self._obj = zlib.decompressobj(-zlib.MAX_WBITS)  # a raw deflate stream
        before = self._obj.copy()  # under a µs: what a failure can still decode is kept
        try:
            return self._bounded(self._obj.decompress(data, limit + 1), limit)
        except zlib.error as exc:
            exc.salvaged = _salvage(before, data, limit)  # type: ignore[attr-defined]
            raise

    def _bounded(self, out: bytes, limit: int) -> bytes:
        if len(out) > limit:
            raise _Overflow(out[:limit])
        return out

    def flush(self) -> bytes:
        return self._obj.flush()


def _salvage(obj: Any, data: bytes, limit: int) -> bytes:
    """What ``obj`` decodes of ``data`` before the byte it fails on (one read may hold the
    events before a corruption and the corruption: those events are still delivered), at most
    ``limit`` bytes."""
    out = []
    size = 0
    try:
        for i in range(len(data)):
            part = obj.decompress(data[i : i + 1], limit + 1 - size)
            out.append(part)
            size += len(part)
            if size > limit or obj.unconsumed_tail:
                break
    except zlib.error:
        pass
    return b"".join(out)[:limit]


class _Brotli:
    def __init__(self) -> None:
        self._obj = _brotli.Decompressor()
        self._step: Callable[..., bytes] = getattr(self._obj, "process", None) or (
            self._obj.decompress
        )

    def decode(self, data: bytes, limit: int) -> bytes:
        try:
            out = self._step(data, output_buffer_limit=limit + 1)
        except TypeError:  # brotlicffi, or brotli < 1.2: no output bound (checked after)
            out = self._step(data)
        else:
            # brotli 1.2 hands its output over in steps: the rest of this read's comes with
            # empty input (else it would wait for the next read)
            parts = [out]
            size = len(out)
            while size <= limit:
                more = self._step(b"", output_buffer_limit=limit + 1 - size)
                if not more:
                    break
                parts.append(more)
                size += len(more)
            out = parts[0] if len(parts) == 1 else b"".join(parts)
        if len(out) > limit:
            raise _Overflow(out[:limit])
        return out

    def flush(self) -> bytes:
        return b""


class _ZstdSink:
    """Where a zstd writer puts its output: kept until ``limit`` is passed, then it stops it."""

    __slots__ = ("limit", "parts", "size")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.limit = 0

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        self.size += len(data)
        if self.size > self.limit:
            raise _Overflow(b"".join(self.parts)[: self.limit])
        return len(data)


class _Zstd:
    """A zstd writer (frame after frame) into a sink that stops it past the bound: the
    decompressor's own output steps are 64 KiB, so it never expands much beyond it."""

    def __init__(self) -> None:
        self._sink = _ZstdSink()
        self._writer = _zstd.ZstdDecompressor().stream_writer(self._sink, write_size=65536)

    def decode(self, data: bytes, limit: int) -> bytes:
        sink = self._sink
        sink.parts, sink.size, sink.limit = [], 0, limit
        try:
            self._writer.write(data)
        except _zstd.ZstdError as exc:  # what the read decoded before the corruption is kept
            exc.salvaged = b"".join(sink.parts)
            raise
        return b"".join(sink.parts)

    def flush(self) -> bytes:
        return b""


def _codec(name: str) -> Any:
    if name in ("gzip", "x-gzip"):
        return _Zlib(gzip=True)
    if name == "deflate":
        return _Zlib(gzip=False)
    if name == "br" and _brotli is not None:
        return _Brotli()
    if name == "zstd" and _zstd is not None:
        return _Zstd()
    return None


def _names(content_encoding: str | None) -> list[str]:
    if not content_encoding:
        return []
    names = [n.strip().lower() for n in content_encoding.split(",")]
    return [n for n in names if n and n != "identity"]


def check_content_encoding(content_encoding: str | None) -> None:
    """Raise ``UnsupportedContentEncoding`` unless every encoding named is one decoded here."""
    for name in _names(content_encoding):
        if _codec(name) is None:
            raise UnsupportedContentEncoding(
                f"the response's Content-Encoding {name!r} is not one aimux decodes "
                f"(it accepts {ACCEPT_ENCODING})"
            )


#: the default bound of ``StreamDecoder`` (``guest.Limits.max_decoded_bytes``'s default)
MAX_DECODED_BYTES = 64 * 1024 * 1024


class StreamDecoder:
    """The decoders of one body, the last encoding applied first (``decode`` per read, ``flush``
    at its end); errors as ``DecodingError`` from the decoder's own. One ``decode`` yields at
    most ``limit`` bytes, else ``DecodedSizeError`` (every layer's output is bounded so)."""

    def __init__(self, names: list[str], limit: int = MAX_DECODED_BYTES) -> None:
        self._names = names
        self._codecs = [_codec(n) for n in reversed(names)]
        self.limit = limit

    def _fail(self, exc: Exception) -> DecodingError:
        err = DecodingError(
            f"the response's {', '.join(self._names)} encoding could not be decoded: {exc}"
        )
        err.__cause__ = exc
        return err

    def _too_big(self) -> DecodingError:
        return DecodedSizeError(
            f"the response's {', '.join(self._names)} encoding expands past the bound of "
            f"{self.limit} decoded bytes at once (AIMUX_MAX_DECODED_BYTES)"
        )

    def _through(self, codecs: list[Any], data: bytes) -> bytes:
        """``data`` through ``codecs`` as far as each decodes it within the bound."""
        for codec in codecs:
            if not data:
                break
            try:
                data = codec.decode(data, self.limit)
            except _Overflow as over:
                data = over.out
            except Exception:  # noqa: BLE001 - nothing more to keep
                return b""
        return data

    def decode(self, data: bytes) -> bytes:
        """The decoded bytes of one read; a failure is an ``DecodingError`` whose
        ``salvaged`` holds what the read decoded before it (deliver it, then raise)."""
        limit = self.limit
        for i, codec in enumerate(self._codecs):
            try:
                data = codec.decode(data, limit)
            except _Overflow as over:  # a decompression bomb: what came before it is kept
                err = self._too_big()
                err.salvaged = self._through(self._codecs[i + 1 :], over.out)  # type: ignore[attr-defined]
                raise err from None
            except Exception as exc:  # zlib.error, brotli.error, zstd.ZstdError
                err = self._fail(exc)
                salvaged: bytes = getattr(exc, "salvaged", b"")
                err.salvaged = self._through(self._codecs[i + 1 :], salvaged)  # type: ignore[attr-defined]
                raise err from exc
        return data

    def flush(self) -> bytes:
        data = b""
        try:
            for codec in self._codecs:  # what one decoder still held goes through the next
                data = (codec.decode(data, self.limit) if data else b"") + codec.flush()
        except _Overflow:
            raise self._too_big() from None
        except Exception as exc:  # as ``decode``
            raise self._fail(exc) from exc
        if len(data) > self.limit:
            raise self._too_big()
        return data


def stream_decoder(
    content_encoding: str | None, limit: int = MAX_DECODED_BYTES
) -> StreamDecoder | None:
    """The decoder of a body sent with ``content_encoding`` (None when it is not encoded), each
    ``decode`` bounded by ``limit``; raises ``UnsupportedContentEncoding`` for an encoding not
    decoded here."""
    names = _names(content_encoding)
    if not names:
        return None
    check_content_encoding(content_encoding)
    return StreamDecoder(names, limit)
