"""The one generator (``aimux_ops.codegen``): adding an error is one Python change, everything
else regenerates; the C constants compile; names map the same way in every language."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aimux_ops.codegen import INPUTS, OWNED_DIRS, generate
from aimux_ops.codegen.go import go_name
from aimux_ops.errors import catalogue

REPO = Path(__file__).resolve().parent.parent

THROWAWAY = '''

class ThrowawayBindingError(BindingError, code=299):
    """A variant that exists only in this test."""

    detail: str | None = None
'''


def _codegen(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "aimux_ops.codegen", "--root", str(root), *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_a_new_error_is_one_python_change_and_everything_else_regenerates(tmp_path: Path) -> None:
    generated = generate(REPO)
    root = tmp_path / "repo"
    shutil.copytree(
        REPO / "aimux_ops", root / "aimux_ops", ignore=shutil.ignore_patterns("__pycache__")
    )
    for rel in [*generated, *INPUTS]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    assert _codegen(root, "--check").returncode == 0
    before = _snapshot(root)

    # the one hand-written change: declare the error
    errors_file = root / "aimux_ops" / "errors" / "binding.py"
    errors_file.write_text(errors_file.read_text(encoding="utf-8") + THROWAWAY, encoding="utf-8")

    check = _codegen(root, "--check")
    assert check.returncode == 1
    drifted = {
        line.split("codegen drift: ", 1)[1].split(" ", 1)[0]
        for line in check.stderr.splitlines()
        if line.startswith("codegen drift: ")
    }
    java = "bindings/java/src/generated/java/dev/aimux/errors"
    expected = {
        "schema/manifest.json",
        "schema/errors/binding/ThrowawayBindingError.schema.json",
        "native/aimux_codes.h",
        "bindings/go/aimux_codes.h",
        "bindings/go/zz_generated.go",
        "bindings/node/src/generated/variants.js",
        "bindings/node/src/generated/variants.d.ts",
        f"{java}/AimuxErrorType.java",
        f"{java}/ThrowawayBindingError.java",
        f"{java}/ThrowawayBindingException.java",
        f"{java}/ThrowawayBindingCauseException.java",
        "docs/DESIGN.md",
    }
    assert expected <= drifted, sorted(expected - drifted)

    wrote = _codegen(root, "--write")
    assert wrote.returncode == 0, wrote.stderr
    assert _codegen(root, "--check").returncode == 0
    after = _snapshot(root)
    changed = {rel for rel in after if before.get(rel) != after[rel]}
    hand_written = {rel for rel in changed if rel.startswith("aimux_ops/")}
    assert hand_written == {"aimux_ops/errors/binding.py"}
    assert changed - hand_written == drifted

    text = {rel: after[rel].decode("utf-8") for rel in changed}
    assert "#define AIMUX_CODE_THROWAWAY_BINDING" in text["native/aimux_codes.h"]
    assert "CodeThrowawayBinding" in text["bindings/go/zz_generated.go"]
    assert (
        "export class ThrowawayBindingError extends AimuxError"
        in text["bindings/node/src/generated/variants.js"]
    )
    assert "BINDING_THROWAWAY_BINDING" in text[f"{java}/AimuxErrorType.java"]
    assert (
        "| binding | 299 | THROWAWAY_BINDING | ThrowawayBindingError | detail |"
        in text["docs/DESIGN.md"]
    )


def test_generated_files_are_committed_and_current() -> None:
    generated = generate(REPO)
    for rel, data in generated.items():
        assert (REPO / rel).read_bytes() == data, f"{rel} drifted: run `make schema`"
    for d in OWNED_DIRS:
        for p in (REPO / d).rglob("*"):
            if p.is_file():
                assert p.relative_to(REPO).as_posix() in generated, f"{p} is not generated"


def test_a_c_program_uses_the_codes_from_aimux_h(tmp_path: Path) -> None:
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.fail("no C compiler")
    src = tmp_path / "codes.c"
    src.write_text(
        '#include <stdio.h>\n#include "aimux.h"\n'
        "int main(void) {\n"
        '    printf("%d %d %s %s %s\\n", AIMUX_CODE_API_CALL, AIMUX_CODE_INVALID_UTF8,\n'
        "           aimux_code_kind(AIMUX_CODE_RETRY), aimux_code_kind(AIMUX_CODE_WRONG_MODE),\n"
        '           aimux_code_kind(0) ? "?" : "null");\n'
        "    return 0;\n}\n",
        encoding="utf-8",
    )
    exe = tmp_path / "codes"
    subprocess.run(
        [
            cc,
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{REPO / 'native'}",
            str(src),
            "-o",
            str(exe),
        ],
        check=True,
    )
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["11", "201", "aimux", "protocol", "null"]
    codes = (REPO / "native" / "aimux_codes.h").read_text(encoding="utf-8")
    for cls in catalogue():
        assert f"#define AIMUX_CODE_{cls.constant} " in codes


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("statusCode", "StatusCode"),
        ("modelId", "ModelID"),
        ("API_CALL", "APICall"),
        ("aimux", "Aimux"),
        ("responseHeaders", "ResponseHeaders"),
        ("baseURL", "BaseURL"),
        ("timeoutMs", "TimeoutMs"),
        ("INVALID_UTF8", "InvalidUTF8"),
    ],
)
def test_go_names(name: str, want: str) -> None:
    assert go_name(name) == want
