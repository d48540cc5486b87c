"""``aimux-gateway --config FILE [--host H] [--port P] [--workers N]``: the gateway on uvicorn
(uvloop, httptools with a bound on a request's head: ``server``).

The command binds the listening socket itself (``--port 0``: an ephemeral port) and prints one
line, ``aimux-gateway listening on http://HOST:PORT``, once it is bound; N workers are N
processes sharing it (uvicorn's supervisor), each loading the config again (the file's path is
passed in ``AIMUX_GATEWAY_CONFIG``). SIGTERM / SIGINT: no new connection is accepted, the
requests in flight (streams too) finish, then the process exits (``--graceful-timeout``).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from typing import Any

from .config import ConfigError, load_config

__all__ = ["main", "worker_app"]

_CONFIG_ENV = "AIMUX_GATEWAY_CONFIG"

#: uvicorn's own loggers and the gateway's request lines (already JSON), on stderr
LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(message)s"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "stream": "ext://sys.stderr",
        }
    },
    "loggers": {
        "uvicorn": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        "aimux.gateway": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
    },
}


def worker_app() -> Any:
    """The app of one worker (uvicorn's factory): the config named by ``AIMUX_GATEWAY_CONFIG``."""
    from .app import Gateway
    from .server import BoundedHttpToolsProtocol

    cfg, keys = load_config(os.environ[_CONFIG_ENV])
    BoundedHttpToolsProtocol.max_header_bytes = cfg.limits.max_header_bytes
    return Gateway(cfg, keys)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="aimux-gateway",
        description="An OpenAI- and Anthropic-compatible gateway in front of the aimux providers.",
    )
    p.add_argument("--config", required=True, help="the config file (JSON; see the README)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080, help="0: an ephemeral port (printed)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument(
        "--graceful-timeout",
        type=float,
        default=30.0,
        help="seconds a shutdown waits for the requests in flight (default 30)",
    )
    p.add_argument("--quiet", action="store_true", help="no per-request log line")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    path = os.path.abspath(args.config)
    try:
        cfg, _keys = load_config(path)
    except ConfigError as exc:
        print(f"aimux-gateway: {exc}", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("aimux-gateway: --workers must be at least 1", file=sys.stderr)
        return 2
    os.environ[_CONFIG_ENV] = path
    # every request in flight has a reader thread of the core: the engine's bound is the config's
    os.environ.setdefault("AIMUX_STREAM_READER_THREADS", str(cfg.limits.max_in_flight + 64))
    # the gateway frees every stream itself (its end, its client's disconnect): an upstream
    # silent for minutes (a long reasoning) is not an abandoned stream
    os.environ.setdefault("AIMUX_STREAM_IDLE_TIMEOUT_MS", "0")

    try:
        import uvicorn
        from uvicorn.supervisors import Multiprocess

        from .server import BoundedHttpToolsProtocol
    except ImportError:
        print(
            "aimux-gateway: its server stack is not installed: pip install 'aimux-ops[gateway]'",
            file=sys.stderr,
        )
        return 2

    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(2048)
    sock.set_inheritable(True)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    if args.quiet:
        LOG_CONFIG["loggers"]["aimux.gateway"]["level"] = "WARNING"
    config = uvicorn.Config(
        "aimux_ops.gateway.cli:worker_app",
        factory=True,
        loop="uvloop",
        http=BoundedHttpToolsProtocol,
        lifespan="on",
        workers=args.workers,
        access_log=False,
        log_config=LOG_CONFIG,
        timeout_graceful_shutdown=args.graceful_timeout,
        server_header=False,
        # the gateway reads no client address nor scheme: no X-Forwarded-* rewrite per request
        proxy_headers=False,
    )
    print(f"aimux-gateway listening on http://{shown}:{port}", flush=True)
    # uvicorn re-raises the signal that stopped it once the shutdown is over: a shutdown asked
    # for is a clean exit (status 0), not a death by signal
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    if args.workers > 1:
        Multiprocess(config, sockets=[sock]).run()
    else:
        uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
