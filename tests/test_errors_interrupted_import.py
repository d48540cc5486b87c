"""A host's KeyboardInterrupt during the catalogue's lazy import leaves a working catalogue.

The errors load on the first failure (cold start). A Python host's SIGINT can land in the middle
of that import: Python then forgets the half-run module, and the next failure imports it again.
Found under load by the SIGINT guest test (``TypeError: duplicate error name``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json, sys

    fired = False

    def interrupt(frame, event, arg):
        # in errors/protocol.py's module body, once UnknownOpError is registered and before
        # InvalidParamsError is: the half-run module a SIGINT at that moment leaves behind
        global fired
        if fired or event != "call" or frame.f_code.co_name != "<module>":
            return None
        if not frame.f_code.co_filename.endswith("errors/protocol.py"):
            return None

        def line(frame, event, arg):
            global fired
            if not fired and "UnknownOpError" in frame.f_globals:
                fired = True
                raise KeyboardInterrupt
            return line

        return line

    sys.settrace(interrupt)
    from aimux_ops.boundary import dispatch

    try:
        dispatch.call_json("no.such.op", b"{}")
    except KeyboardInterrupt:
        interrupted = True
    else:
        interrupted = False
    sys.settrace(None)
    assert "aimux_ops.errors.protocol" not in sys.modules  # Python forgot the half-run module

    result, envelope = dispatch.call_json("no.such.op", b"{}")
    from aimux_ops import errors
    from aimux_ops.errors import _base

    names = [(c.kind, c.error_name) for c in errors.catalogue()]
    print(json.dumps({
        "interrupted": interrupted,
        "envelope": json.loads(envelope),
        "unique": len(names) == len(set(names)),
        "current": all(
            getattr(sys.modules[c.__module__], c.__qualname__) is c for c in errors.catalogue()
        ),
        "lookup": _base._BY_NAME[("protocol", "UnknownOpError")] is errors.UnknownOpError,
    }))
    """
)


def test_catalogue_imports_again_after_an_interrupted_import() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["interrupted"] is True
    assert report["envelope"]["error"]["name"] == "UnknownOpError"
    assert report["envelope"]["kind"] == "protocol"
    assert report["unique"] and report["current"] and report["lookup"]
