"""Runs decode-chain testees over every contract vector (protobuf-conformance style).

    python contract-tests/run_decode_chain.py bindings/python/decode-chain [more testees…]

Each testee gets one vector's envelope on stdin and must print the vector's ``chain``
(compared as parsed JSON). Prints one line per failure and ``N passed, N failed``; exits 1 on any
failure, and when a testee is missing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema

HERE = Path(__file__).resolve().parent


def load_vectors() -> list[tuple[str, dict]]:
    schema = json.loads((HERE / "vector.schema.json").read_text())
    vectors = []
    for path in sorted((HERE / "vectors").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(doc, schema)
        vectors.append((path.name, doc))
    return vectors


def run_one(testee: str, name: str, doc: dict) -> str | None:
    try:
        proc = subprocess.run(
            [testee],
            input=json.dumps(doc["envelope"], ensure_ascii=False).encode(),
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{testee} {name}: could not run: {exc}"
    if proc.returncode != 0:
        return f"{testee} {name}: exit {proc.returncode}: {proc.stderr.decode(errors='replace')[-500:]}"
    try:
        got = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return f"{testee} {name}: output is not JSON: {proc.stdout[:300]!r}"
    if got != doc["chain"]:
        return f"{testee} {name}: chain differs\n  want {doc['chain']}\n  got  {got}"
    return None


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    vectors = load_vectors()
    passed = failed = 0
    for testee in argv:
        if not Path(testee).is_file():
            print(f"{testee}: missing", file=sys.stderr)
            failed += len(vectors)
            continue
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda v, t=testee: run_one(t, *v), vectors))
        bad = [r for r in results if r]
        for r in bad:
            print(r, file=sys.stderr)
        passed += len(results) - len(bad)
        failed += len(bad)
        print(f"{testee}: {len(results) - len(bad)}/{len(results)} vectors")
    print(f"vectors: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
