"""Cold start: a module imported on the first attribute read, not when its importer loads.

``LazyModule("httpx", globals(), "httpx")`` stands in for ``import httpx`` at a module's top: the
first ``httpx.X`` imports the module and puts it in the importer's globals in the stand-in's
place, so later reads cost what a plain import's do. Importers declare the real import under
``TYPE_CHECKING`` for the type checker.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["LazyModule"]


class LazyModule:
    """A stand-in for ``module`` bound to ``name`` in ``namespace`` (an importer's globals)."""

    __slots__ = ("_module", "_name", "_namespace")

    def __init__(self, module: str, namespace: dict[str, Any], name: str) -> None:
        self._module = module
        self._namespace = namespace
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._module)  # the import system's locks make it safe
        self._namespace[self._name] = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._module!r}>"
