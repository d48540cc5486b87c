"""`python -m aimux_ops.native`: the flags point at the library and headers the wheel carries, and
an install without them (the editable one) says so instead of printing paths that do not exist.
The wheel itself is built, installed and used by a C program in `make test-dist`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import aimux_ops.native as native
from aimux_ops.native.__main__ import main

REPO = Path(__file__).resolve().parents[1]
PYDIR = sysconfig.get_config_var("LIBDIR")
# libaimux runs Python: the program links this interpreter's libpython itself (kept under
# --as-needed), with an rpath to its LIBDIR, which the wheel's library cannot know (a venv)
LIBPYTHON = [
    f"-L{PYDIR}",
    "-Wl,--push-state,--no-as-needed",
    f"-l:{sysconfig.get_config_var('INSTSONAME')}",
    "-Wl,--pop-state",
    f"-Wl,-rpath,{PYDIR}",
]


def test_editable_install_has_no_library(capsys: pytest.CaptureFixture[str]) -> None:
    # the test venv installs the checkout editable: no aimux_ops/native/lib
    assert not (REPO / "aimux_ops" / "native" / "lib").exists()
    with pytest.raises(native.NotInstalledError, match="not installed from its wheel"):
        native.libs()
    assert main(["--libs"]) == 1
    assert "editable install has no library" in capsys.readouterr().err


def test_flags_of_a_wheel_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the layout setup.py writes: lib/libaimux.so.1 and include/{aimux.h,aimux.hpp}
    (tmp_path / "lib").mkdir()
    (tmp_path / "include").mkdir()
    (tmp_path / "lib" / "libaimux.so.1").write_bytes(b"")
    shutil.copy(REPO / "native" / "aimux.h", tmp_path / "include" / "aimux.h")
    monkeypatch.setattr(native, "_HERE", tmp_path)
    lib, inc = tmp_path / "lib", tmp_path / "include"
    assert native.cflags() == [f"-I{inc}"]
    assert sysconfig.get_config_var("Py_ENABLE_SHARED")  # the test venv's CPython is shared
    assert native.libs() == [f"-L{lib}", "-l:libaimux.so.1", f"-Wl,-rpath,{lib}", *LIBPYTHON]
    assert native.library() == lib / "libaimux.so.1"


def test_cli_prints_requested_flags_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "include").mkdir()
    (tmp_path / "lib" / "libaimux.so.1").write_bytes(b"")
    (tmp_path / "include" / "aimux.h").write_text("")
    monkeypatch.setattr(native, "_HERE", tmp_path)
    assert main(["--cflags", "--libs", "--libdir", "--includedir"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert out.split() == [
        f"-I{tmp_path / 'include'}",
        f"-L{tmp_path / 'lib'}",
        "-l:libaimux.so.1",
        f"-Wl,-rpath,{tmp_path / 'lib'}",
        *LIBPYTHON,
        str(tmp_path / "lib"),
        str(tmp_path / "include"),
    ]


def test_module_entry_point_runs() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "aimux_ops.native"], capture_output=True, text=True, check=False
    )
    assert r.returncode == 2 and "usage: python -m aimux_ops.native" in r.stderr
