"""The base of every op model (params, results, events): camelCase aliases, unknown fields
refused, validators built on first use (cold start: a call never builds the other ops' models)."""

# No ``from __future__ import annotations``: pydantic evaluates annotation strings at class
# creation (cold start).

import threading

import pydantic.main
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from ..guest import on_fork_child

__all__ = ["Model"]


class Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=False,
        defer_build=True,
    )


_RLOCK = type(threading.RLock())


@on_fork_child
def _fresh_rebuild_lock() -> None:
    """In a forked child: pydantic's rebuild lock anew. A deferred model is built on its first use
    under ``pydantic.main._rebuild_lock``, a module RLock pydantic does not reset at a fork: a
    parent thread building one at the fork left it held, and the child's first validation waited
    forever. A private attribute: pydantic's range is pinned in pyproject.toml and
    ``tests/test_guest.py`` fails when it is gone."""
    if isinstance(getattr(pydantic.main, "_rebuild_lock", None), _RLOCK):
        pydantic.main._rebuild_lock = threading.RLock()
