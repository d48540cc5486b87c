"""The day-one program in Python, on an installed wheel (dist-tests/steps/42-wheels.sh).

1) a replayed generate_text; 2) the same prompt streamed (a replayed stream_text); 3) a failing
call (a closed loopback port) whose cause chain ends in ConnectionRefusedError. It also says
which interpreter ran it and that the wheel's compiled parts (the stream chunk reader, libaimux)
came from the installed package. Usage: day_one.py <recording.jsonl>; exit status 0 when all
three behave. Lines as dist-tests/c/consumer.c prints them (lib.sh checks both).
"""

import json
import sys
from pathlib import Path

import aimux_ops
import aimux_ops.native
from aimux_ops._speedups import _cchunks
from aimux_ops.errors import APICallError

site = Path(aimux_ops.__file__).resolve().parent.parent
print(f"python {sys.version_info.major}.{sys.version_info.minor}, aimux_ops from {site}")
for part in (Path(_cchunks.__file__), aimux_ops.native.library()):
    if site not in part.resolve().parents:
        sys.exit(f"{part} is not in the installed package")
print(f"compiled: {Path(_cchunks.__file__).name}, {aimux_ops.native.library().name}")

model: aimux_ops.ModelSpec = {
    "provider": "openai",
    "modelId": "gpt-4o-mini",
    "baseURL": "http://127.0.0.1:1/v1",
}
replay = {"mode": "replay", "path": sys.argv[1]}
ok = True

result = aimux_ops.generate_text(model=model, prompt="Say hello in one word.", recording=replay)
if result.text == "Hello!":
    print("replay ok:", json.dumps({"text": result.text}, separators=(",", ":")))
else:
    print("replay FAILED:", result.text)
    ok = False

text, finish = "", ""
with aimux_ops.stream_text(model=model, prompt="Say hello in one word.", recording=replay) as s:
    for event in s:
        if isinstance(event, aimux_ops.TextDeltaEvent):
            text += event.text
        elif isinstance(event, aimux_ops.FinishEvent):
            finish = str(event.finish_reason)
if text == "Hello!" and finish == "stop":
    print(f'stream ok: text-delta events "{text}", then finish ({finish})')
else:
    print(f'stream FAILED: text "{text}", finish "{finish}"')
    ok = False

try:
    aimux_ops.generate_text(model={**model, "apiKey": "sk-test"}, prompt="hi", max_retries=0)
    print("chain FAILED: unexpected success")
    ok = False
except APICallError as err:
    names: list[str] = []
    cause: BaseException | None = err
    while cause is not None:
        names.append(type(cause).__name__)
        cause = cause.__cause__
    print("error chain:", " -> ".join(names))
    if names[-1] == "ConnectionRefusedError" and isinstance(err.__cause__, BaseException):
        print("chain ok: ends in ConnectionRefusedError")
    else:
        print("chain FAILED: ends in", names[-1])
        ok = False
sys.exit(0 if ok else 1)
