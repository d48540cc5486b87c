"""Where the time of the native bench goes on the Python side (appended to bench/native-results.md).

Measures, in-process and without the C boundary, the core pieces one libaimux call runs:
``dispatch.call_json`` for the version call and for an unknown op (answered from its values: looked
up, then ``envelope.answer``), the shim's extra step for an error (``chain_packed``), and beside
them the path of an error that is built (``_find_op`` + ``project``, then ``chain_links``; bytes
from elsewhere are parsed). Medians of 7 repeats.
Usage: python bench/native/profile_core.py [results.md]
"""

from __future__ import annotations

import statistics
import sys
import timeit

from aimux_ops import dispatch
from aimux_ops.envelope import answer, chain_links, chain_packed, project


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
    unbuilt = dispatch._look_up(b"no-such-op", "call")
    assert isinstance(unbuilt, tuple)
    call = dispatch.call_json
    version = dispatch._find_op(b"aimux.version", "call")
    assert not isinstance(version, BaseException)
    bad = b'{"bogus1":1}'
    try:
        dispatch._validate(version, bad)
    except Exception as exc:  # noqa: BLE001
        invalid = exc
    rows = [
        (
            "call_json(aimux.version) (the core's pure-op cache)",
            ns("c(b'aimux.version', b'{}')", c=call),
        ),
        (
            "call_json(no-such-op) (the error answered from its values, never built)",
            ns("c(b'no-such-op', b'{}')", c=call),
        ),
        (
            "  of which the op looked up, the error's values (dispatch._look_up)",
            ns("f(b'no-such-op', 'call')", f=dispatch._look_up),
        ),
        (
            "  of which envelope.answer (the C writer: envelope and packed chain)",
            ns("a(*u)", a=answer, u=unbuilt),
        ),
        (
            "  + chain_packed of that envelope (the shim's next step: kept, not walked)",
            ns("p(e)", p=chain_packed, e=env),
        ),
        (
            "the same error built (_find_op), then envelope.project (as errors raised elsewhere)",
            ns("p(f(b'no-such-op', 'call'))", p=project, f=dispatch._find_op),
        ),
        (
            "project + chain_links of a built error (the walk, then its nodes packed)",
            ns("c(p(e))", c=chain_links, p=project, e=err),
        ),
        (
            "call_json(aimux.version, bad params) (301 + its cause: the new bad params row)",
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
            ns("c(e)", c=chain_links, e=env),
        ),
    ]
    out = ["", "## Where the time goes (Python side, in-process, no C boundary)", "",
           "| piece | median ns/call |", "|---|---:|"]  # fmt: skip
    out += [f"| {name} | {v:.0f} |" for name, v in rows]
    out += [
        "",
        "Read with the table above: a libaimux call costs the floor (C->Python crossing, GIL, "
        "argument and result copies) plus the core's `call_json`. An error the core raises "
        "at its own boundary (unknown op, wrong mode) is answered from its values: "
        "`envelope.answer` writes the envelope and the shim's packed chain in C without "
        'building the error (DESIGN.md "Errors answered from their values"). Every other '
        "error is built and walked (`project`), its nodes then packed.",
        "",
    ]
    text = "\n".join(out)
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "a", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
