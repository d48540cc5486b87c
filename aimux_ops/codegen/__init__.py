"""The one generator: everything derived from the catalogue and the op models, for every language.

``python -m aimux_ops.codegen --write`` (``make schema``) renders, from ``aimux.manifest`` (the
error catalogue in ``aimux_ops/errors/`` and the op registry):

- ``schema/`` (JSON Schema of the envelope, every payload, every op; the manifest);
- C / C++: ``native/aimux_codes.h``, the shim's ``native/src/aimux_early.h`` and, from
  ``aimux_ops/wire/packed.py``, its ``native/src/aimux_packed.h`` (``c.py``);
- Go: ``bindings/go/aimux/zz_generated.go`` (``go.py``), the typed op types
  ``bindings/go/aimux/zz_types.go`` (``go_types.py``), and the module's copies of
  ``native/aimux.h`` and ``native/aimux_codes.h`` (cgo includes them from the package directory,
  so the module builds
  from a module cache, a vendor directory and with ``-trimpath``);
- Node: ``bindings/node/src/generated/`` (error classes and op types, ``node.py``);
- Java: ``bindings/java/src/generated/java/`` (the error classes, ``java.py``; the typed ops'
  params, results, events, content parts and tool types, ``java_types.py``);
- Python: the typed API, ``aimux_ops/api/_generated.py`` (``python.py``), and the params
  pre-check's table of the op models, ``aimux_ops/ops/_params_table.py`` (``precheck.py``);
- the catalogue table of ``docs/DESIGN.md`` (``docs.py``).

Every output is committed; ``--check`` (``make check-schema``) fails when any differs. Output is
deterministic (sorted where order is not the catalogue's), so a merge conflict in a generated file
resolves by re-running the generator.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from ..errors import KIND_RANGES
from ..ops.meta import build_manifest
from . import c, docs, go, go_types, java, java_types, node, precheck, python
from . import schemas as schema_gen
from ._model import Manifest

__all__ = ["INPUTS", "OWNED_DIRS", "generate"]

#: Hand-written files (besides ``aimux_ops/``) that ``generate`` reads: the Go module's copy of the
#: C header is one of them.
INPUTS = ("native/aimux.h",)

#: Directories whose every file is generated (a stale file there is drift too).
OWNED_DIRS = ("schema", node.OUT, java.OUT, java_types.OUT)


def generate(root: Path) -> dict[str, bytes]:
    """Every generated file: path relative to the repository root → bytes."""
    files = {f"schema/{rel}": data for rel, data in schema_gen.generate().items()}
    m = Manifest.of(build_manifest(), KIND_RANGES)
    payloads = {
        orjson.loads(data)["title"]: orjson.loads(data)
        for rel, data in files.items()
        if rel.startswith("schema/errors/")
    }
    texts: dict[str, str] = {}
    for rendered in (
        c.render(m),
        go.render(m),
        go_types.render(m),
        node.render(m),
        java.render(m),
        java_types.render(m),
        python.render(),
        precheck.render(),
        docs.render(m, payloads, root),
    ):
        texts.update(rendered)
    files.update({rel: text.encode("utf-8") for rel, text in texts.items()})
    files[go.MODULE_CODES_H] = files[c.CODES]
    files[go.MODULE_AIMUX_H] = (root / "native" / "aimux.h").read_bytes()
    return files
