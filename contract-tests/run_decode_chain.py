"""Runs decode-chain testees over every contract vector (protobuf-conformance style).

    python contract-tests/run_decode_chain.py [--failure-lists=DIR] bindings/python/decode-chain [more testees…]

Each testee is started once, in its long-lived mode (``decode-chain --lines``): the runner writes
one envelope per line on its stdin (the vector's ``envelopeText`` when it has one, else its
``envelope`` as compact JSON) and reads one answer line per envelope (DESIGN.md "decode-chain"):

    {"chain": [{"kind","code","name","message"}, ...], "root": {"retryable", "retryAfterMs"}}
    {"rejected": {"code": 202, "message": "..."}}      when the decoder refuses the envelope

and compares it with the vector's ``chain`` and ``root``, or its ``rejected`` code. A testee's
known failures are listed, one vector key per line, in ``failure_lists/<lang>.txt`` (``#``
comments allowed; ``<lang>`` is the testee's directory name): a listed vector that fails is reported but not counted; a listed vector that
now passes is a failure (remove it from the list). Exits 1 on any failure and when a testee is
missing or dies.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import jsonschema

HERE = Path(__file__).resolve().parent


def load_vectors() -> list[tuple[str, dict[str, Any]]]:
    schema = json.loads((HERE / "vector.schema.json").read_text())
    vectors = []
    for path in sorted((HERE / "vectors").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(doc, schema)
        vectors.append((path.stem, doc))
    return vectors


def wire_line(doc: dict[str, Any]) -> str:
    """The envelope as one line of input (JSON text never needs a raw newline)."""
    text = doc.get("envelopeText")
    if text is None:
        text = json.dumps(doc["envelope"], ensure_ascii=False, separators=(",", ":"))
    assert "\n" not in text
    return text


def check(doc: dict[str, Any], answer: Any) -> str | None:
    """None when ``answer`` is what the vector expects, else what differs."""
    if not isinstance(answer, dict):
        return f"answer is not an object: {answer!r}"
    if "rejected" in doc:
        got = answer.get("rejected")
        if not isinstance(got, dict) or got.get("code") != doc["rejected"]:
            return f"expected rejected {doc['rejected']}, got {answer}"
        return None
    if answer.get("chain") != doc["chain"]:
        return f"chain differs\n  want {doc['chain']}\n  got  {answer.get('chain', answer)}"
    if answer.get("root") != doc["root"]:
        return f"root fields differ: want {doc['root']}, got {answer.get('root')}"
    return None


def failure_list(testee: str, lists: Path) -> set[str]:
    lang = Path(testee).resolve().parent.name
    path = lists / f"{lang}.txt"
    if not path.is_file():
        return set()
    keys = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            keys.add(line)
    return keys


def run_testee(
    testee: str, vectors: list[tuple[str, dict[str, Any]]]
) -> tuple[list[str | None], str]:
    """One process for every vector: a result per vector (None: passed) and the testee's stderr."""
    proc = subprocess.Popen(
        [testee, "--lines"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin and proc.stdout and proc.stderr
    err_chunks: list[bytes] = []
    drain = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)  # type: ignore[union-attr]
    drain.start()

    def feed() -> None:
        try:
            for _, doc in vectors:
                proc.stdin.write((wire_line(doc) + "\n").encode())  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    results: list[str | None] = []
    for name, doc in vectors:
        line = proc.stdout.readline()
        if not line:
            results.append(f"{name}: no answer (the testee ended)")
            continue
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            results.append(f"{name}: answer is not JSON: {line[:300]!r}")
            continue
        bad = check(doc, answer)
        results.append(f"{name}: {bad}" if bad else None)
    extra = proc.stdout.read()
    code = proc.wait(timeout=120)
    feeder.join(5)
    drain.join(5)
    stderr = b"".join(err_chunks).decode(errors="replace")
    if extra.strip():
        results.append(f"extra output after the last answer: {extra[:300]!r}")
    if code != 0:
        results.append(f"exit {code}: {stderr[-500:]}")
    return results, stderr


def main(argv: list[str]) -> int:
    lists = HERE / "failure_lists"
    if argv and argv[0].startswith("--failure-lists="):
        lists = Path(argv[0].split("=", 1)[1])
        argv = argv[1:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    vectors = load_vectors()
    passed = failed = expected = 0
    for testee in argv:
        if not Path(testee).is_file():
            print(f"{testee}: missing", file=sys.stderr)
            failed += len(vectors)
            continue
        known = failure_list(testee, lists)
        unknown_keys = known - {name for name, _ in vectors}
        results, _ = run_testee(testee, vectors)
        bad = 0
        for i, r in enumerate(results):
            name = vectors[i][0] if i < len(vectors) else None
            if name in known:
                if r is None:
                    print(
                        f"{testee} {name}: passes but is in the failure list: remove it",
                        file=sys.stderr,
                    )
                    bad += 1
                else:
                    expected += 1
                continue
            if r is not None:
                print(f"{testee} {r}", file=sys.stderr)
                bad += 1
        for key in sorted(unknown_keys):
            print(f"{testee}: failure list names an unknown vector {key}", file=sys.stderr)
            bad += 1
        ok = sum(
            1
            for i, r in enumerate(results[: len(vectors)])
            if r is None and vectors[i][0] not in known
        )
        passed += ok
        failed += bad
        print(
            f"{testee}: {ok}/{len(vectors)} vectors"
            + (f" ({len(known)} known failures)" if known else "")
        )
    print(f"vectors: {passed} passed, {failed} failed, {expected} known failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
