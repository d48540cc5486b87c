"""Where the time of the native bench goes on the Python side (appended to bench/native-results.md).

Measures, in-process and without the C boundary, the core pieces one libaimux call runs:
``dispatch.call_json`` for the version call and for an unknown op, and the shim's extra step for an
error, ``envelope.chain_links`` (the native chain, in the same crossing: right after the
projection it walks the nodes just built; bytes from elsewhere are parsed). Medians of 7 repeats.
Usage: python bench/native/profile_core.py [results.md]
"""

from __future__ import annotations

import statistics
import sys
import timeit

from aimux_ops import dispatch
from aimux_ops.envelope import chain_links, project


def ns(stmt, n: int = 5000, **names) -> float:
    runs = timeit.repeat(stmt, number=n, repeat=7, globals=names)
    return statistics.median(runs) / n * 1e9


def main() -> None:
    _, env = dispatch.call_json(b"no.such.op", b"{}")
    assert env is not None
    try:
        dispatch._resolve(b"no.such.op", "call")
    except Exception as exc:  # noqa: BLE001
        err = exc
    call = dispatch.call_json
    rows = [
        ("call_json(aimux.version) (the core's pure-op cache)",
         ns("c(b'aimux.version', b'{}')", c=call)),
        ("call_json(no.such.op) (the error + its envelope; raised only inside a handler)",
         ns("c(b'no.such.op', b'{}')", c=call)),
        ("  of which the UnknownOpError (dispatch._find_op, not raised)",
         ns("f(b'no.such.op', 'call')", f=dispatch._find_op)),
        ("  of which envelope.project(UnknownOpError)", ns("p(e)", p=project, e=err)),
        ("project + chain_links (the shim's path: the nodes just projected, not parsed)",
         ns("c(p(e))", c=chain_links, p=project, e=err)),
        ("chain_links(envelope bytes from elsewhere) (aimux_error_from_json's path: parsed)",
         ns("c(e)", c=chain_links, e=env)),
    ]
    out = ["", "## Where the time goes (Python side, in-process, no C boundary)", "",
           "| piece | median ns/call |", "|---|---:|"]  # fmt: skip
    out += [f"| {name} | {v:.0f} |" for name, v in rows]
    out += ["",
            "Read with the table above: a libaimux call costs the floor (C->Python crossing, GIL, "
            "argument and result copies) plus the core's `call_json`; an error adds `chain_links` "
            "(the nodes the projection just built, one packed buffer, one C call building "
            "every node). The error round trip is dominated by the core: building the error "
            "(`dispatch._find_op`) and projecting it (`project`).",
            ""]
    text = "\n".join(out)
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "a", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
