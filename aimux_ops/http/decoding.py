"""The ``Content-Encoding`` of a streamed body, decoded incrementally: each network read's bytes
are decoded as they arrive (a server that flushes per event, ``Z_SYNC_FLUSH``, has each event
delivered at once), so an event stream sent compressed reads as the same events.

``gzip`` and ``deflate`` always (zlib), ``br`` when ``brotli`` / ``brotlicffi`` is installed and
``zstd`` when ``zstandard`` is: exactly the encodings httpx advertises in its default
``Accept-Encoding`` (``ACCEPT_ENCODING``, checked by the tests against what a server receives).
A corrupt body raises ``DecodingError`` (``exceptions``) caused by the decoder's own error; an
encoding none of these decodes raises ``UnsupportedContentEncoding``, one (the transport maps both
to a non-retryable ``APICallError``: the same bytes would come again)."""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable
from typing import Any

from .exceptions import DecodingError

__all__ = [
    "ACCEPT_ENCODING",
    "StreamDecoder",
    "UnsupportedContentEncoding",
    "check_content_encoding",
    "stream_decoder",
]


class UnsupportedContentEncoding(DecodingError):
    """The response names a ``Content-Encoding`` aimux cannot decode."""


UnsupportedContentEncoding.__module__ = "aimux_ops.http"


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

    def decode(self, data: bytes) -> bytes:
        if self._first:
            self._first = False
            try:
                return self._obj.decompress(data)
            except zlib.error:
                self._obj = zlib.decompressobj(-zlib.MAX_WBITS)  # a raw deflate stream
        before = self._obj.copy()  # under a µs: what a failure can still decode is kept
        try:
            return self._obj.decompress(data)
        except zlib.error as exc:
            exc.salvaged = _salvage(before, data)  # type: ignore[attr-defined]
            raise

    def flush(self) -> bytes:
        return self._obj.flush()


def _salvage(obj: Any, data: bytes) -> bytes:
    """What ``obj`` decodes of ``data`` before the byte it fails on (one read may hold the
    events before a corruption and the corruption: those events are still delivered)."""
    out = []
    try:
        for i in range(len(data)):
            out.append(obj.decompress(data[i : i + 1]))
    except zlib.error:
        pass
    return b"".join(out)


class _Brotli:
    def __init__(self) -> None:
        self._obj = _brotli.Decompressor()
        self._step: Callable[[bytes], bytes] = getattr(self._obj, "process", None) or (
            self._obj.decompress
        )

    def decode(self, data: bytes) -> bytes:
        return self._step(data)

    def flush(self) -> bytes:
        return b""


class _Zstd:
    def __init__(self) -> None:
        self._obj = _zstd.ZstdDecompressor().decompressobj()

    def decode(self, data: bytes) -> bytes:
        out = []
        while data:
            out.append(self._obj.decompress(data))
            data = self._obj.unused_data if self._obj.eof else b""
            if data:  # a second frame: a new decoder for it
                self._obj = _zstd.ZstdDecompressor().decompressobj()
        return b"".join(out)

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


class StreamDecoder:
    """The decoders of one body, the last encoding applied first (``decode`` per read, ``flush``
    at its end); errors as ``DecodingError`` from the decoder's own."""

    def __init__(self, names: list[str]) -> None:
        self._names = names
        self._codecs = [_codec(n) for n in reversed(names)]

    def _fail(self, exc: Exception) -> DecodingError:
        err = DecodingError(
            f"the response's {', '.join(self._names)} encoding could not be decoded: {exc}"
        )
        err.__cause__ = exc
        return err

    def decode(self, data: bytes) -> bytes:
        """The decoded bytes of one read; a failure is an ``DecodingError`` whose
        ``salvaged`` holds what the read decoded before it (deliver it, then raise)."""
        for i, codec in enumerate(self._codecs):
            try:
                data = codec.decode(data)
            except Exception as exc:  # zlib.error, brotli.error, zstd.ZstdError
                err = self._fail(exc)
                salvaged: bytes = getattr(exc, "salvaged", b"")
                try:
                    for later in self._codecs[i + 1 :]:
                        salvaged = later.decode(salvaged) if salvaged else b""
                except Exception:  # noqa: BLE001 - nothing more to keep
                    salvaged = b""
                err.salvaged = salvaged  # type: ignore[attr-defined]
                raise err from exc
        return data

    def flush(self) -> bytes:
        data = b""
        try:
            for codec in self._codecs:  # what one decoder still held goes through the next
                data = (codec.decode(data) if data else b"") + codec.flush()
        except Exception as exc:  # as ``decode``
            raise self._fail(exc) from exc
        return data


def stream_decoder(content_encoding: str | None) -> StreamDecoder | None:
    """The decoder of a body sent with ``content_encoding`` (None when it is not encoded);
    raises ``UnsupportedContentEncoding`` for an encoding not decoded here."""
    names = _names(content_encoding)
    if not names:
        return None
    check_content_encoding(content_encoding)
    return StreamDecoder(names)
