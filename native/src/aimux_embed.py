"""The Python side of libaimux, run once by cffi_start_python() (cffi's embedding init code).

Defines the ``extern "Python"`` callbacks of aimux_cdef.h over the core
(``aimux_ops.boundary.dispatch``), which loads on the first call that needs it: a first
``aimux.version`` is answered from ``aimux_ops._version`` alone (cold start). It never raises: a
failure to load the core is recorded, and every call answers 207 with it. Not imported as a
module: native/build_libaimux.py embeds this file's text.
"""

# ruff: noqa: BLE001, UP031  (the callbacks must catch everything; %-format keeps bytes-safe text)

from _aimux_cffi import ffi, lib

NULL = ffi.NULL
_init_error = None
_paths = []

#: .pth files of the payload that only cost start-up time here: setuptools' distutils shim (the
#: core never imports distutils) and an editable install of aimux_ops itself (its directory is
#: on the path list already; its finder imports pathlib, re and importlib.util)
_SKIPPED_PTH = ("distutils-precedence.pth", "__editable__.aimux_ops-")


def _add_payload_paths(paths):
    # The shim put the payload's directories first on sys.path (the interpreter runs no site
    # import: its own site-packages are the installation's); their .pth files run here, as
    # site.addsitedir runs them, but for _SKIPPED_PTH. `site` loads only when one is left (and
    # os with it: os's listdir without importing os, for the cold start).
    from posix import listdir

    pending = []
    for d in paths:
        try:
            names = sorted(listdir(d))
        except OSError:
            continue
        pending += [
            (d, n)
            for n in names
            if n.endswith(".pth") and not n.startswith(".") and not n.startswith(_SKIPPED_PTH)
        ]
    if pending:
        import site

        for d, n in pending:
            site.addpackage(d, n, None)


_CORE_FUNCTIONS = {
    "_call_json": "call_json",
    "_stream_json": "stream_json",
    "_stream_next_json": "stream_next_json",
    "_stream_cancel": "stream_cancel",
    "_stream_free": "stream_free",
    "_stream_start": "stream_start_json",
    "_stream_poll": "stream_poll_json",
    "_stream_next_batch": "stream_next_batch_json",
    "_ready": "ready_handles",
    "_poll_one": "poll_entry_json",
    "_wake": "stream_wake",
    "_events_fd": "events_fd",
    "_stream_tool_result": "stream_tool_result_json",
}
_DISPATCH = "aimux_ops.boundary.dispatch"


class _CoreLoadError(Exception):
    """The core did not load when a call first needed it (the calls answer 207)."""


def _load_core(starting=False):
    # The core (the dispatch boundary and what it imports) loads on the first call that needs
    # it, once, under the shim's start-up lock (threads making their first calls at once wait
    # for one load; a fork waits until it is done); each of the callbacks' core functions then
    # takes its stub's place. A failure is kept: every later call answers the same 207.
    global _init_error, _dispatch
    if not starting:  # (the start-up holds the lock already)
        lib._aimux_core_lock(1)
    try:
        if _dispatch is not None:
            return _dispatch
        if _init_error is not None:
            raise _CoreLoadError
        try:
            import importlib

            dispatch = importlib.import_module(_DISPATCH)
            dispatch.use_native_queues(ffi, lib)  # streams opened here get a C queue
        except BaseException as e:
            _init_error = _core_failure(e)
            raise _CoreLoadError from None
        for mine, theirs in _CORE_FUNCTIONS.items():
            _GLOBALS[mine] = getattr(dispatch, theirs)
        _dispatch = dispatch
        return dispatch
    finally:
        if not starting:
            lib._aimux_core_lock(0)


def _stub(mine):
    def load_then_call(*args):
        _load_core()
        return _GLOBALS[mine](*args)

    return load_then_call


_GLOBALS = globals()
# the core's functions the callbacks call (by these globals): stubs until the core loads
_call_json = _stub("_call_json")
_stream_json = _stub("_stream_json")
_stream_next_json = _stub("_stream_next_json")
_stream_cancel = _stub("_stream_cancel")
_stream_free = _stub("_stream_free")
_stream_start = _stub("_stream_start")
_stream_poll = _stub("_stream_poll")
_stream_next_batch = _stub("_stream_next_batch")
_ready = _stub("_ready")
_poll_one = _stub("_poll_one")
_wake = _stub("_wake")
_events_fd = _stub("_events_fd")
_stream_tool_result = _stub("_stream_tool_result")


def _core_failure(e):
    return (
        "cannot load the aimux_ops core from %s: %s: %s"
        % (":".join(_paths) or "?", type(e).__name__, e)
    ).encode("utf-8", "replace")


try:
    _paths = [
        p for p in ffi.string(lib._aimux_paths()).decode("utf-8", "surrogateescape").split(":") if p
    ]
    _add_payload_paths(_paths)
    import sys

    from aimux_ops import guest as _guest
    from aimux_ops._version import VERSION_ANSWER as _VERSION_ANSWER

    if lib._aimux_owns_runtime():  # not in a Python host's interpreter: its OpenSSL, its rules
        # before anything loads OpenSSL: its exit handler would free it under the core's threads
        _guest.keep_openssl_at_exit(lib._aimux_openssl_keep)
    _dispatch = None
    if _DISPATCH in sys.modules:  # a Python host loaded the core already: use it at once
        _load_core(starting=True)
    else:
        _call_stub = _call_json

        def _call_json(op, params, _answer=_VERSION_ANSWER):
            # Cold start: aimux.version is answered before the core loads, with the bytes of
            # the core's own precomputed answer (which no change of the op names replaces)
            if op == b"aimux.version" and params == b"{}" and _init_error is None:
                return _answer, None
            return _call_stub(op, params)

except BaseException as _e:  # recorded, reported by every call as a 207
    _init_error = _core_failure(_e)


# The errors and the envelope walk load on the first failure (cold start: a first successful call
# imports neither).
# Each replaces itself with the core's function on its first call.
def _project(exc):
    global _project
    from aimux_ops.wire.envelope import project as _project

    return _project(exc)


def _chain_links(env):
    global _chain_links
    from aimux_ops.wire.envelope import chain_links as _chain_links

    return _chain_links(env)


class _ErrorsModule:
    def __getattr__(self, name):
        from aimux_ops import errors

        return getattr(errors, name)


_errors = _ErrorsModule()


def _early(which, message, argument=NULL):
    # Only when the core cannot build the error itself (it did not load, or projecting failed).
    return lib._aimux_err_early(which, message.encode("utf-8", "replace"), argument)


def _core_error(exc):
    # An error the shim reports (201, 202, 208) goes through the core's projection like any other.
    try:
        return _chain(_project(exc))
    except MemoryError:
        raise
    except BaseException as e:
        return _early(
            lib._AIMUX_EARLY_INTERNAL,
            "libaimux: cannot project %s: %s: %s" % (type(exc).__name__, type(e).__name__, e),
        )


def _internal(where, exc):
    if isinstance(exc, _CoreLoadError):  # the core did not load: the reason, as a 207
        return lib._aimux_err_early(lib._AIMUX_EARLY_RUNTIME_INIT, _init_error, NULL)
    if isinstance(exc, KeyboardInterrupt):
        # A Python host sharing the interpreter handles SIGINT: the call ends as aborted (never
        # a 208), and the shim hands the interrupt back to the host once the call has returned.
        lib._aimux_note_interrupt()
        return _core_error(_errors.AbortedError("The call was interrupted (SIGINT in the host)."))
    return _core_error(
        _errors.InternalError("libaimux: %s: %s: %s" % (where, type(exc).__name__, exc))
    )


def _packed(walk):
    # The format _aimux_err_unpack reads (aimux_ops/wire/packed.py, its one definition): the root's
    # own retryable and retryAfterMs, then per link its code, kind, name, message and JSON,
    # decided once by chain_links (the C accessors never read JSON).
    global _packed
    from aimux_ops.wire.packed import pack as _packed

    return _packed(walk)


def _chain(env):
    # The envelope and its native chain: one packed buffer, one C call builds every node.
    try:
        buf = _packed(_chain_links(env))
    except BaseException as e:
        return _early(
            lib._AIMUX_EARLY_INTERNAL,
            "libaimux: cannot walk the error envelope: %s: %s" % (type(e).__name__, e),
        )
    err = lib._aimux_err_unpack(buf, len(buf))
    if not err:
        raise MemoryError("cannot allocate the error chain")
    return err


if _init_error is not None:
    # The core did not load: every call answers 207 with the reason.
    def _fail(out_err):
        out_err[0] = lib._aimux_err_early(lib._AIMUX_EARLY_RUNTIME_INIT, _init_error, NULL)
        return 0

    @ffi.def_extern(error=-1)
    def _aimux_py_call(op, params, out_result, out_err):
        return _fail(out_err)

    @ffi.def_extern(error=-1)
    def _aimux_py_stream(op, params, out_stream, out_err):
        return _fail(out_err)

    @ffi.def_extern(error=-1)
    def _aimux_py_stream_next(handle, out_event, out_err):
        return _fail(out_err)

    @ffi.def_extern(error=-1)
    def _aimux_py_stream_ctl(handle, free):
        return 0

    @ffi.def_extern(error=-1)
    def _aimux_py_decode(text, out_decoded, out_err):
        return _fail(out_err)

    @ffi.def_extern(error=-1)
    def _aimux_py_stream_tool_result(handle, tool_call_id, answer, out_err):
        return _fail(out_err)

    @ffi.def_extern(error=-1)
    def _aimux_py_stream_start(op, params, out_stream, out_err):
        return _fail(out_err)

    @ffi.def_extern(error=-1)
    def _aimux_py_stream_poll(handle, max_events, out_batch, out_ended, out_err):
        return _fail(out_err)

    @ffi.def_extern(error=-1)
    def _aimux_py_stream_next_batch(handle, max_events, out_batch, out_ended, out_err):
        return _fail(out_err)

    @ffi.def_extern(error=-1)
    def _aimux_py_ready(out_streams, capacity, out_count):
        return 0

    @ffi.def_extern(error=-1)
    def _aimux_py_poll_one(handle, max_events, out_entry):
        return 0

    @ffi.def_extern(error=-1)
    def _aimux_py_wake(handle, what):
        return 0

    @ffi.def_extern(error=-1)
    def _aimux_py_events_fd(out_fd, out_err):
        return _fail(out_err)

else:
    # The hot paths bind everything they use as default arguments (no global / attribute
    # lookups per call); a NULL `const char *` is falsy and becomes None (the core answers 204).

    @ffi.def_extern(error=-1)
    def _aimux_py_call(
        op,
        params,
        out_result,
        out_err,
        _s=ffi.string,
        _dup=lib._aimux_strndup,
        _unpack=lib._aimux_err_unpack,
    ):
        try:
            res, env = _call_json(_s(op) if op else None, _s(params) if params else None)
            if env is None:
                r = _dup(res, len(res))
                if not r:
                    raise MemoryError("cannot allocate the result")
                out_result[0] = r
            else:
                # _chain(env), inline (one frame less on every failed call): the same steps
                try:
                    buf = _packed(_chain_links(env))
                except BaseException as e:
                    out_err[0] = _early(
                        lib._AIMUX_EARLY_INTERNAL,
                        "libaimux: cannot walk the error envelope: %s: %s" % (type(e).__name__, e),
                    )
                else:
                    err = _unpack(buf, len(buf))
                    if not err:
                        raise MemoryError("cannot allocate the error chain")
                    out_err[0] = err
        except MemoryError:
            raise
        except BaseException as e:
            out_err[0] = _internal("call_json", e)
        return 0

    def _opener(where, name):
        # aimux_stream (waits for the first event) and aimux_stream_start (does not) differ only
        # in the core function they call (by its global's name: a stub until the core loads).
        def callback(op, params, out_stream, out_err, _s=ffi.string, _g=_GLOBALS):
            try:
                # native: the stream's events go to its C queue (read without the GIL)
                handle, env = _g[name](_s(op) if op else None, _s(params) if params else None, True)
                if env is None:
                    out_stream[0] = handle
                else:
                    out_err[0] = _chain(env)
            except MemoryError:
                raise
            except BaseException as e:
                out_err[0] = _internal(where, e)
            return 0

        return callback

    ffi.def_extern(name="_aimux_py_stream", error=-1)(_opener("stream_json", "_stream_json"))
    ffi.def_extern(name="_aimux_py_stream_start", error=-1)(
        _opener("stream_start_json", "_stream_start")
    )

    @ffi.def_extern(error=-1)
    def _aimux_py_stream_next(handle, out_event, out_err, _dup=lib._aimux_strndup):
        try:
            ev, env = _stream_next_json(handle)
            if env is not None:
                out_err[0] = _chain(env)
            elif ev is not None:
                r = _dup(ev, len(ev))
                if not r:
                    raise MemoryError("cannot allocate the event")
                out_event[0] = r
        except MemoryError:
            raise
        except BaseException as e:
            out_err[0] = _internal("stream_next_json", e)
        return 0

    def _batcher(where, name):
        # aimux_stream_poll (never blocks) and aimux_stream_next_batch (waits for a batch) differ
        # only in the core function they call (by its global's name: a stub until it loads).
        def callback(
            handle, max_events, out_batch, out_ended, out_err, _g=_GLOBALS, _dup=lib._aimux_strndup
        ):
            try:
                batch, ended, env = _g[name](handle, max_events)
                out_ended[0] = 1 if ended else 0
                if env is not None:
                    out_err[0] = _chain(env)
                elif batch is not None:
                    r = _dup(batch, len(batch))
                    if not r:
                        raise MemoryError("cannot allocate the batch")
                    out_batch[0] = r
            except MemoryError:
                raise
            except BaseException as e:
                out_err[0] = _internal(where, e)
            return 0

        return callback

    ffi.def_extern(name="_aimux_py_stream_poll", error=-1)(
        _batcher("stream_poll_json", "_stream_poll")
    )
    ffi.def_extern(name="_aimux_py_stream_next_batch", error=-1)(
        _batcher("stream_next_batch_json", "_stream_next_batch")
    )

    @ffi.def_extern(error=-1)
    def _aimux_py_ready(out_streams, capacity, out_count):
        try:
            handles = _ready(capacity)
        except BaseException:
            handles = []
        for i, h in enumerate(handles):
            out_streams[i] = h
        out_count[0] = len(handles)
        return 0

    @ffi.def_extern(error=-1)
    def _aimux_py_poll_one(handle, max_events, out_entry, _dup=lib._aimux_strndup):
        # one entry of aimux_poll_ready for a stream its C queue cannot answer (None: freed)
        try:
            entry = _poll_one(handle, max_events)
        except BaseException:
            entry = None
        if entry is not None:
            r = _dup(entry, len(entry))
            if not r:
                return -1  # out of memory: the shim reports it
            out_entry[0] = r
        return 0

    @ffi.def_extern(error=-1)
    def _aimux_py_wake(handle, what):
        try:
            _wake(handle, what)
        except BaseException:
            pass
        return 0

    @ffi.def_extern(error=-1)
    def _aimux_py_events_fd(out_fd, out_err):
        try:
            out_fd[0] = _events_fd()
        except BaseException as e:
            out_err[0] = _internal("events_fd", e)
        return 0

    @ffi.def_extern(error=-1)
    def _aimux_py_stream_tool_result(handle, tool_call_id, answer, out_err, _s=ffi.string):
        try:
            env = _stream_tool_result(handle, _s(tool_call_id), _s(answer))
            if env is not None:
                out_err[0] = _chain(env)
        except MemoryError:
            raise
        except BaseException as e:
            out_err[0] = _internal("stream_tool_result_json", e)
        return 0

    @ffi.def_extern(error=-1)
    def _aimux_py_stream_ctl(handle, free):
        try:
            (_stream_free if free else _stream_cancel)(handle)
        except BaseException:
            pass
        return 0

    @ffi.def_extern(error=-1)
    def _aimux_py_decode(text, out_decoded, out_err):
        raw = ffi.string(text)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            out_err[0] = _core_error(
                _errors.InvalidUTF8Error(
                    "envelope_json is not valid UTF-8: %s" % e, argument="envelope_json"
                )
            )
            return 0
        try:
            buf = _packed(_chain_links(raw))
        except BaseException as e:
            out_err[0] = _core_error(
                _errors.InvalidWireJSONError(
                    "envelope_json is not an error envelope: %s: %s" % (type(e).__name__, e),
                    argument="envelope_json",
                )
            )
            return 0
        if len(buf) <= lib._AIMUX_PACKED_ROOT_SIZE:  # no link: not a JSON object
            out_err[0] = _core_error(
                _errors.InvalidWireJSONError(
                    "envelope_json is not an error envelope (not a JSON object)",
                    argument="envelope_json",
                )
            )
            return 0
        dec = lib._aimux_err_unpack(buf, len(buf))
        if not dec:
            raise MemoryError("cannot allocate the error chain")
        out_decoded[0] = dec
        return 0
