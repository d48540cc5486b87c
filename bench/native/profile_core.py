"""Where the time of the native bench goes on the Python side (appended to bench/native-results.md).

Measures, in-process and without the C boundary, the core pieces one libaimux call runs:
``dispatch.call_json`` for the version call and for an unknown op (the error built and raised by
``_resolve``, projected by ``envelope.project``), the shim's extra step for an error
(``chain_links`` of the envelope just projected: its nodes reused), and beside them a params
failure and bytes from elsewhere (parsed). Medians of 7 repeats.
Usage: python bench/native/profile_core.py [results.md]
"""

from __future__ import annotations

import statistics
import sys
import timeit

from aimux_ops.boundary import dispatch
from aimux_ops.wire.envelope import chain_links, project


def ns(stmt, n: int = 5000, **names) -> float:
    runs = timeit.repeat(stmt, number=n, repeat=7, globals=names)
    return statistics.median(runs) / n * 1e9


def main() -> None:
    _, env = dispatch.call_json(b"no-such-op", b"{}")
    assert env is not None
    try:
        dispatch._resolve(b"no-such-op", "call")
    except Exception as exc:  # noqa: BLE001
        err = exc
    call = dispatch.call_json
    version = dispatch._resolve(b"aimux.version", "call")
    bad = b'{"bogus1":1}'
    try:
        dispatch._validate(version, bad)
    except Exception as exc:  # noqa: BLE001
        invalid = exc
    resolve = "try:\n    r(b'no-such-op', 'call')\nexcept Exception:\n    pass"
    rows = [
        (
            "call_json(aimux.version) (the core's pure-op cache)",
            ns("c(b'aimux.version', b'{}')", c=call),
        ),
        (
            "call_json(no-such-op) (the error built, raised and projected)",
            ns("c(b'no-such-op', b'{}')", c=call),
        ),
        (
            "  of which the op looked up, the error built and raised (dispatch._resolve)",
            ns(resolve, r=dispatch._resolve),
        ),
        (
            "  of which envelope.project of that error",
            ns("p(e)", p=project, e=err),
        ),
        (
            "project + chain_links of a built error (the walk, then its nodes reused)",
            ns("c(p(e))", c=chain_links, p=project, e=err),
        ),
        (
            "call_json(aimux.version, bad params) (301 + its cause: the bad params row)",
            ns("c(b'aimux.version', p)", c=call, p=bad),
        ),
        (
            "  of which dispatch._validate (pydantic's validation, the violations, the raise)",
            ns(
                "try:\n    v(s, p)\nexcept Exception:\n    pass",
                v=dispatch._validate,
                s=version,
                p=bad,
            ),
        ),
        (
            "    of which pydantic's own validation failing (model_validate + ValidationError)",
            ns(
                "try:\n    m(d)\nexcept Exception:\n    pass",
                m=version.params.model_validate,
                d={"bogus1": 1},
            ),
        ),
        (
            "  of which envelope.project(InvalidParamsError) (the walk: two nodes, violations)",
            ns("p(e)", p=project, e=invalid),
        ),
        (
            "chain_links(envelope bytes from elsewhere) (aimux_error_from_json's path: parsed)",
            ns("c(bytes(e))", c=chain_links, e=env),
        ),
    ]
    out = ["", "## Where the time goes (Python side, in-process, no C boundary)", "",
           "| piece | median ns/call |", "|---|---:|"]  # fmt: skip
    out += [f"| {name} | {v:.0f} |" for name, v in rows]
    out += [
        "",
        "Read with the table above: a libaimux call costs the floor (C->Python crossing, GIL, "
        "argument and result copies) plus the core's `call_json`. Every error, the dispatch "
        "boundary's own included, is built, raised and projected once by `envelope.project`; "
        "the shim packs the links `chain_links` reads from the nodes just projected.",
        "",
    ]
    text = "\n".join(out)
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "a", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
