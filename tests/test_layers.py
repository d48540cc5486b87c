"""``lint/layers.py`` (run by ``make lint``): it finds upward imports, circles (function-local
imports included) and unplaced folders, in a package and among C files, and the real package and
shim have none."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_layers():
    spec = importlib.util.spec_from_file_location("aimux_lint_layers", ROOT / "lint" / "layers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


layers = _load_layers()


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "aimux_ops"
    for rel, text in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_downward_package_passes(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "ops/__init__.py": "from ..wire import envelope\n",
            "wire/__init__.py": "",
            "wire/envelope.py": "from ..errors import base\n",
            "errors/__init__.py": "",
            "errors/base.py": "import os\n",
        },
    )
    assert layers.check_package(root) == []


def test_an_upward_import_is_caught(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "ops/__init__.py": "",
            "ops/call.py": "X = 1\n",
            "wire/__init__.py": "",
            "wire/envelope.py": "def f():\n    from ..ops.call import X\n    return X\n",
        },
    )
    assert layers.check_package(root) == [
        "aimux_ops.wire.envelope imports aimux_ops.ops.call upward (floor 6 -> 3)"
    ]


def test_a_circle_on_one_floor_is_caught_even_through_a_local_import(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "ops/__init__.py": "",
            "ops/models.py": "from .outputs import Out\n",
            "ops/outputs.py": "def base():\n    from .models import M\n    return M\n",
        },
    )
    assert layers.check_package(root) == [
        "import circle: aimux_ops.ops.models <-> aimux_ops.ops.outputs"
    ]


def test_a_string_import_and_an_unplaced_folder_are_caught(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "wire/__init__.py": "import importlib\nm = importlib.import_module('aimux_ops.ops')\n",
            "ops/__init__.py": "",
            "misc/__init__.py": "",
        },
    )
    assert layers.check_package(root) == [
        "aimux_ops.misc: its folder is on no floor (lint/layers.py FLOORS)",
        "aimux_ops.wire imports aimux_ops.ops upward (floor 6 -> 3)",
    ]


def test_a_c_circle_is_caught_and_a_shared_header_is_not_one(tmp_path: Path) -> None:
    (tmp_path / "shim.c").write_text(
        '#include "queue.h"\nint shim_buf(int n) { return n; }\nint f(void) { return q_take(1); }\n'
    )
    (tmp_path / "queue.c").write_text("int q_take(int n) { return shim_buf(n); }\n")
    assert layers.check_c(tmp_path) == [
        "C circle: queue.c <-> shim.c (each uses names the other defines)"
    ]
    (tmp_path / "queue.c").write_text('#include "buf.h"\nint q_take(int n) { return n + 1; }\n')
    assert layers.check_c(tmp_path) == []


@pytest.mark.parametrize("what", ["package", "shim"])
def test_the_real_package_and_shim_have_no_violation(what: str) -> None:
    if what == "package":
        assert layers.check_package(ROOT / "aimux_ops") == []
    else:
        assert layers.check_c(ROOT / "native" / "src") == []
