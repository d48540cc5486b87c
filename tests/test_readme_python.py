"""The README's Python "First program" (#29), as a user would run it: copied out of the checkout,
type-checked with ``mypy --strict``, and run against the fault server (the OpenAI wire format:
generate, stream, a 429 with ``retry-after``, a refused connection). ``make test-dist`` runs it
again against the installed wheel (``dist-tests/steps/55-python-first.sh``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from fault_server import FaultServer
from helpers import ROOT

#: the 429 the program's third call meets (its BUSY_MODEL): retry-after 0 s, every attempt
BUSY = "fault:mode=status;status=429;retry_after=0;message=Rate limit reached"


def first_program() -> str:
    """The README's code block under "### First program"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### First program", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None, "README: no python block under ### First program"
    return found.group(1)


#: misuses of the typed API that mypy must report (each line's error code)
MISUSES = """\
import aimux_ops

model: aimux_ops.ModelSpec = {"provider": "openai", "modelId": "m"}
result = aimux_ops.generate_text(model=model, prompt="hi")
tokens: str = result.usage.total_tokens  # [assignment]
for event in aimux_ops.stream_text(model=model, prompt="hi"):
    print(event.text)  # [union-attr]
aimux_ops.generate_text(model=model, promt="hi")  # [call-arg]
aimux_ops.generate_text(model={"provider": "openai"}, prompt="hi")  # [typeddict-item]
"""


def _mypy(tmp_path: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / name).write_text(source, encoding="utf-8")
    mypy = Path(sys.executable).with_name("mypy")
    return subprocess.run(
        [str(mypy), "--strict", "--no-incremental", "--no-error-summary", name],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},  # the editable install's finder: the source
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_first_program_type_checks_with_mypy_strict(tmp_path: Path) -> None:
    done = _mypy(tmp_path, "first.py", first_program())
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_reports_each_misuse_of_the_typed_api(tmp_path: Path) -> None:
    done = _mypy(tmp_path, "misuse.py", MISUSES)
    reported = {
        (int(line.split(":")[1]), line.rsplit("[", 1)[1].rstrip("]"))
        for line in done.stdout.splitlines()
        if ": error: " in line
    }
    expected = {
        (n, line.rsplit("# [", 1)[1].rstrip("]"))
        for n, line in enumerate(MISUSES.splitlines(), 1)
        if "# [" in line
    }
    assert expected <= reported, done.stdout


def test_the_first_program_runs_outside_the_checkout(tmp_path: Path) -> None:
    (tmp_path / "first.py").write_text(first_program(), encoding="utf-8")
    server = FaultServer(0).start()
    try:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-first-program",
            "BUSY_MODEL": BUSY,
        }
        done = subprocess.run(
            [sys.executable, "first.py"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [
        "generate: Hello! stop 14",
        "Hello!",
        "rate limited: 429 maxRetriesExceeded",
        "refused: ConnectionRefusedError True",
    ], done.stdout
