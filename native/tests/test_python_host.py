"""libaimux inside a host that already runs Python, loaded with ctypes (RTLD_LOCAL, ctypes'
default): the library must use the host's interpreter (no second start), answer calls and errors,
and walk chains. Prints `N passed, N failed`.
Usage: python native/tests/test_python_host.py [libaimux.so]"""

import ctypes
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build", "libaimux.so")
lib = ctypes.CDLL(path)  # mode RTLD_LOCAL
P = ctypes.c_void_p
lib.aimux_call.restype = P
lib.aimux_call.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(P)]
lib.aimux_error_json.restype = P
lib.aimux_error_json.argtypes = [P]
lib.aimux_error_code.restype = ctypes.c_int32
lib.aimux_error_code.argtypes = [P]
lib.aimux_error_cause.restype = P
lib.aimux_error_cause.argtypes = [P]
lib.aimux_error_free.argtypes = [P]
lib.aimux_string_free.argtypes = [P]

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL", what, file=sys.stderr)


def call(op, params):
    out = P()
    err = lib.aimux_call(op, params, ctypes.byref(out))
    result = ctypes.string_at(out.value) if out.value else None
    lib.aimux_string_free(out)
    return err, result


err, res = call(b"aimux.version", b"{}")
check(not err and res and b'"abiVersion":1' in res, "version from a Python host")
err, res = call(b"aimux.version", b'{"bogus":1}')
check(err and lib.aimux_error_code(err) == 301, "301 from a Python host")
cause = lib.aimux_error_cause(err)
check(cause and lib.aimux_error_code(cause) == 0, "source cause walked")
j = lib.aimux_error_json(err)
check(j and ctypes.string_at(j).startswith(b'{"kind":"protocol","code":301,'), "envelope json")
lib.aimux_string_free(j)
lib.aimux_error_free(err)
# the host's interpreter is the one used: the core module is now in this process's sys.modules
check(
    "aimux_ops.boundary.dispatch" in sys.modules,
    "the host interpreter runs the core (no second runtime)",
)

bad = []


def worker():
    for _ in range(200):
        e, r = call(b"aimux.version", b"{}")
        if e or not r:
            bad.append(1)
        e, r = call(b"nope", b"{}")
        if not e or lib.aimux_error_code(e) != 300:
            bad.append(1)
        lib.aimux_error_free(e)


threads = [threading.Thread(target=worker) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check(not bad, f"4 host threads x 400 calls ({len(bad)} wrong)")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
