"""The HTTP client's exceptions (httpx's tree, our names): what a transport failure is before the
transport maps it to an aimux error (``transport.map_transport_error``), kept as a cause node of
that error with the ``OSError`` below it. No message carries a URL or a header value.

* HTTPError
  * TransportError
    * TimeoutException
      · ConnectTimeout
      · ReadTimeout
      · WriteTimeout
      · PoolTimeout
    * NetworkError
      · ConnectError
      · ReadError
      · WriteError
    * ProtocolError
      · LocalProtocolError
      · RemoteProtocolError
    · ProxyError
    · UnsupportedProtocol
  · DecodingError
* InvalidURL

Each class names itself ``aimux_ops.http.<Name>`` (its ``__module__``), as the envelope shows it.
"""

from __future__ import annotations

__all__ = [
    "ConnectError",
    "ConnectTimeout",
    "DecodedSizeError",
    "DecodingError",
    "HTTPError",
    "InvalidURL",
    "LocalProtocolError",
    "NetworkError",
    "PoolTimeout",
    "ProtocolError",
    "ProxyError",
    "ReadError",
    "ReadTimeout",
    "RemoteProtocolError",
    "TimeoutException",
    "TransportError",
    "UnsupportedProtocol",
    "WriteError",
    "WriteTimeout",
]


class HTTPError(Exception):
    """Any failure of a request or its response."""


class TransportError(HTTPError):
    """The request could not be sent or its response not be read."""


class TimeoutException(TransportError):
    """A socket operation outlasted its timeout."""


class ConnectTimeout(TimeoutException):
    """The connection was not established in time."""


class ReadTimeout(TimeoutException):
    """No data was received in time."""


class WriteTimeout(TimeoutException):
    """The request could not be written in time."""


class PoolTimeout(TimeoutException):
    """No connection of the pool became free in time."""


class NetworkError(TransportError):
    """A socket operation failed."""


class ConnectError(NetworkError):
    """The connection could not be established."""


class ReadError(NetworkError):
    """Reading from the connection failed."""


class WriteError(NetworkError):
    """Writing to the connection failed."""


class ProtocolError(TransportError):
    """HTTP/1.1 was broken."""


class LocalProtocolError(ProtocolError):
    """The request cannot be sent as HTTP/1.1 (a header name or value)."""


class RemoteProtocolError(ProtocolError):
    """The server's answer is not valid HTTP/1.1, or it closed the connection mid-message."""


class ProxyError(TransportError):
    """The proxy refused or failed the tunnel."""


class UnsupportedProtocol(TransportError):
    """The URL's scheme is neither http nor https."""


class DecodingError(HTTPError):
    """The body's ``Content-Encoding`` could not be decoded."""


class DecodedSizeError(DecodingError):
    """A compressed body (or one network read of a stream) decodes past the bound
    (``AIMUX_MAX_DECODED_BYTES``): a decompression bomb."""


class InvalidURL(Exception):
    """The URL cannot be parsed."""


for _name in __all__:
    globals()[_name].__module__ = "aimux_ops.http"
