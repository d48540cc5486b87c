"""libaimux loaded by a host running another CPython version (ctypes, RTLD_LOCAL): every call is
a 207 whose message names both versions; nothing aborts. Run by `make -C native test` with each
other CPython found (pyenv 3.10 / 3.12 / 3.13); stdlib only, so it runs on any of them. When the
host has cffi, it is imported first (its backend is what aborted before the check existed).

    python3.X native/tests/test_foreign_python.py native/build/libaimux.so [--expect-cffi]
"""

import ctypes
import re
import sys

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def main():
    lib_path = sys.argv[1]
    try:
        import _cffi_backend  # noqa: F401  (a host with cffi loaded)

        with_cffi = True
    except ImportError:
        with_cffi = False
    check(with_cffi or "--expect-cffi" not in sys.argv, "this host has cffi (--expect-cffi)")
    host = "{}.{}".format(*sys.version_info[:2])
    lib = ctypes.CDLL(lib_path)  # RTLD_LOCAL, as ctypes does by default
    maps = open("/proc/self/maps").read()
    embedded = sorted(set(re.findall(r"libpython(3\.\d+)\.so", maps)) - {host})
    check(len(embedded) == 1, f"the library's libpython is loaded beside the host's: {embedded}")
    lib_version = embedded[0] if embedded else "?"

    lib.aimux_call.restype = ctypes.c_void_p
    lib.aimux_call.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.aimux_stream.restype = ctypes.c_void_p
    lib.aimux_stream.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]
    lib.aimux_error_code.restype = ctypes.c_int32
    lib.aimux_error_code.argtypes = [ctypes.c_void_p]
    lib.aimux_error_message.restype = ctypes.c_void_p
    lib.aimux_error_message.argtypes = [ctypes.c_void_p]
    lib.aimux_error_free.argtypes = [ctypes.c_void_p]
    lib.aimux_string_free.argtypes = [ctypes.c_void_p]

    def message(err):
        m = lib.aimux_error_message(err)
        text = ctypes.string_at(m).decode("utf-8")
        lib.aimux_string_free(m)
        return text

    for attempt in range(2):  # the second call answers the same 207 (the start-up ran once)
        out = ctypes.c_void_p()
        err = lib.aimux_call(b"aimux.version", b"{}", ctypes.byref(out))
        check(err is not None, f"call {attempt}: an error, not a success")
        if err is None:
            continue
        code = lib.aimux_error_code(err)
        text = message(err)
        lib.aimux_error_free(err)
        check(code == 207, f"call {attempt}: code 207, got {code} ({text})")
        check(
            f"Python {host}." in text and f"Python {lib_version}" in text,
            f"call {attempt}: the message names both versions ({host}, {lib_version}): {text}",
        )
        check(not out.value, f"call {attempt}: no result")
    handle = ctypes.c_uint64(7)
    err = lib.aimux_stream(b"stream_text", b"{}", ctypes.byref(handle))
    check(err is not None and lib.aimux_error_code(err) == 207, "a stream is a 207 too")
    check(handle.value == 0, "no handle")
    lib.aimux_error_free(err)
    print(
        f"foreign Python host {host} (cffi {'loaded' if with_cffi else 'absent'}) "
        f"with libaimux on {lib_version}: {len(failures)} failed"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
