"""The typed Python API is generated (#29): a new params field reaches ``generate_text``'s
keywords by ``make schema``, and ``make check-schema`` fails until it is regenerated."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

from aimux_ops.codegen import INPUTS, generate

REPO = Path(__file__).resolve().parents[1]
GENERATED = "aimux_ops/api/_generated.py"


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_new_params_field_is_a_keyword_after_make_schema(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(
        REPO / "aimux_ops", root / "aimux_ops", ignore=shutil.ignore_patterns("__pycache__")
    )
    for rel in [*generate(REPO), *INPUTS]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    models = root / "aimux_ops" / "ops" / "models.py"
    text = models.read_text(encoding="utf-8")
    anchor = "    seed: int | None = None\n"
    assert anchor in text
    models.write_text(
        text.replace(anchor, anchor + "    new_knob: Literal['a', 'b'] | None = None\n", 1),
        encoding="utf-8",
    )

    check = _run(root, "-m", "aimux_ops.codegen", "--check")
    assert check.returncode == 1 and f"codegen drift: {GENERATED}" in check.stderr, check.stderr
    assert _run(root, "-m", "aimux_ops.codegen", "--write").returncode == 0
    assert _run(root, "-m", "aimux_ops.codegen", "--check").returncode == 0

    generated = (root / GENERATED).read_text(encoding="utf-8")
    assert 'new_knob: Literal["a", "b"] | str | NotGiven | None = NOT_GIVEN' in generated
    assert '("newKnob", new_knob)' in generated
    probe = _run(
        root,
        "-c",
        "import inspect, aimux_ops; "
        "print(sorted(p for p in inspect.signature(aimux_ops.generate_text).parameters))",
    )
    assert probe.returncode == 0 and "'new_knob'" in probe.stdout, probe.stderr
    # the repository's own module is the one generated from its models
    assert "new_knob" not in inspect.signature(__import__("aimux_ops").generate_text).parameters
