/* libaimux: the C side of the aimux C ABI (native/aimux.h) over the embedded Python core.
 *
 * Owns aimux_error_t (one allocation per chain node), starting the embedded interpreter, and
 * every exported aimux_* function. It calls into Python through the `extern "Python"` callbacks
 * declared in aimux_cdef.h and defined by aimux_embed.py. Not compiled on its own: cffi's
 * embedding build (native/build_libaimux.py) includes it into the generated module, after
 * Python.h and cffi's embedding prelude (which define CFFI_DLLEXPORT and cffi_start_python).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "aimux.h"

#define AIMUX_MSG_MAX 1024

/* Python-side callbacks (defined by the init code with @ffi.def_extern). */
static int _aimux_py_call(const char *, const char *, char **, aimux_error_t **);
static int _aimux_py_stream(const char *, const char *, uint64_t *, aimux_error_t **);
static int _aimux_py_stream_next(uint64_t, char **, aimux_error_t **);
static int _aimux_py_stream_ctl(uint64_t, int);
static int _aimux_py_decode(const char *, aimux_error_t **, aimux_error_t **);

/* One node of the chain: one allocation holding the struct, the message and the JSON. */
struct aimux_error {
    int32_t code;
    int is_static;              /* the out-of-memory sentinel: never freed */
    const char *message;        /* NUL-terminated UTF-8 */
    const char *json;           /* NUL-terminated: the envelope (root) or the node JSON */
    size_t message_len, json_len;
    struct aimux_error *cause;  /* owned */
};

#define _AIMUX_OOM_MSG "out of memory in libaimux"
#define _AIMUX_OOM_JSON "{\"kind\":\"binding\",\"code\":208,\"message\":\"" _AIMUX_OOM_MSG \
    "\",\"error\":{\"name\":\"InternalError\"},\"retryable\":false}"
static struct aimux_error _aimux_oom = {
    208, 1, _AIMUX_OOM_MSG, _AIMUX_OOM_JSON,
    sizeof(_AIMUX_OOM_MSG) - 1, sizeof(_AIMUX_OOM_JSON) - 1, NULL
};

static aimux_error_t *_aimux_node_new(int32_t code, const char *msg, size_t msg_len,
                                      const char *json, size_t json_len)
{
    struct aimux_error *e = (struct aimux_error *)malloc(
        sizeof(struct aimux_error) + msg_len + 1 + json_len + 1);
    char *p;
    if (e == NULL) return NULL;
    p = (char *)(e + 1);
    memcpy(p, msg, msg_len); p[msg_len] = 0;
    memcpy(p + msg_len + 1, json, json_len); p[msg_len + 1 + json_len] = 0;
    e->code = code; e->is_static = 0;
    e->message = p; e->message_len = msg_len;
    e->json = p + msg_len + 1; e->json_len = json_len;
    e->cause = NULL;
    return e;
}

static void _aimux_chain_free(aimux_error_t *e)
{
    while (e != NULL && !e->is_static) {
        aimux_error_t *next = e->cause;
        free(e);
        e = next;
    }
}

/* A chain packed by Python: repeated {int32 code, uint32 msg_len, uint32 json_len, msg, json},
   root first. One allocation per node. NULL when out of memory or malformed. */
aimux_error_t *_aimux_err_unpack(const char *buf, size_t len)
{
    aimux_error_t *root = NULL, **tail = &root;
    size_t off = 0;
    while (off < len) {
        int32_t code; uint32_t ml, jl; aimux_error_t *n;
        if (len - off < 12) goto bad;
        memcpy(&code, buf + off, 4); memcpy(&ml, buf + off + 4, 4); memcpy(&jl, buf + off + 8, 4);
        off += 12;
        if (len - off < (size_t)ml + (size_t)jl) goto bad;
        n = _aimux_node_new(code, buf + off, ml, buf + off + ml, jl);
        if (n == NULL) goto bad;
        off += (size_t)ml + jl;
        *tail = n; tail = &n->cause;
    }
    return root;
bad:
    _aimux_chain_free(root);
    return NULL;
}

char *_aimux_strndup(const char *s, size_t n)
{
    char *r = (char *)malloc(n + 1);
    if (r == NULL) return NULL;
    memcpy(r, s, n); r[n] = 0;
    return r;
}

/* --- a tiny growable buffer and a JSON string escaper (no printf) ------------------------ */
typedef struct { char *p; size_t len, cap; int oom; } _aimux_buf;

static void _aimux_buf_put(_aimux_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        char *p;
        while (cap < b->len + n + 1) cap *= 2;
        p = (char *)realloc(b->p, cap);
        if (p == NULL) { b->oom = 1; return; }
        b->p = p; b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}
static void _aimux_buf_str(_aimux_buf *b, const char *s) { _aimux_buf_put(b, s, strlen(s)); }
static void _aimux_buf_int(_aimux_buf *b, int32_t v)
{
    char tmp[16]; int i = 15; uint32_t u = v < 0 ? (uint32_t)(-(int64_t)v) : (uint32_t)v;
    tmp[i] = 0;
    do { tmp[--i] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) tmp[--i] = '-';
    _aimux_buf_str(b, tmp + i);
}
static void _aimux_buf_json_string(_aimux_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i, start = 0;
    _aimux_buf_put(b, "\"", 1);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\' || c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            _aimux_buf_put(b, s + start, i - start);
            if (c == '"') _aimux_buf_put(b, "\\\"", 2);
            else if (c == '\\') _aimux_buf_put(b, "\\\\", 2);
            else if (c == '\n') _aimux_buf_put(b, "\\n", 2);
            else if (c == '\t') _aimux_buf_put(b, "\\t", 2);
            else _aimux_buf_put(b, esc, 6);
            start = i + 1;
        }
    }
    _aimux_buf_put(b, s + start, n - start);
    _aimux_buf_put(b, "\"", 1);
}

/* Length of a valid-UTF-8 prefix of s[0..n) cut at <= max bytes on a character boundary;
   invalid bytes end the prefix (the shim's own messages are ASCII; this is a guard). */
static size_t _aimux_utf8_prefix(const char *s, size_t n, size_t max)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        size_t j;
        if (k == 0 || i + k > n || i + k > max) break;
        for (j = 1; j < k; j++) if (((unsigned char)s[i + j] >> 6) != 2) return i;
        i += k;
    }
    return i;
}

/* A binding-domain envelope built in C (204 for NULL out-pointers, 207 when the runtime cannot
   start, 208 for failures of the shim itself). Never NULL. */
aimux_error_t *_aimux_err_simple(int32_t code, const char *name, const char *message,
                                 const char *argument)
{
    static const char cut[] = "\xe2\x80\xa6[truncated]";
    _aimux_buf b = {0}, m = {0};
    size_t n = message ? strlen(message) : 0, keep = _aimux_utf8_prefix(message, n, AIMUX_MSG_MAX);
    int truncated = keep < n;
    aimux_error_t *e;
    if (truncated) keep = _aimux_utf8_prefix(message, n, AIMUX_MSG_MAX - (sizeof cut - 1));
    _aimux_buf_put(&m, message ? message : "", keep);
    if (truncated) _aimux_buf_put(&m, cut, sizeof cut - 1);
    if (m.oom || m.p == NULL) { free(m.p); return &_aimux_oom; }
    _aimux_buf_str(&b, "{\"kind\":\"");
    _aimux_buf_str(&b, code >= 300 && code < 400 ? "protocol" : code >= 200 && code < 300 ? "binding"
                       : code >= 100 && code < 200 ? "recording" : "aimux");
    _aimux_buf_str(&b, "\",\"code\":");
    _aimux_buf_int(&b, code);
    _aimux_buf_str(&b, ",\"message\":");
    _aimux_buf_json_string(&b, m.p, m.len);
    _aimux_buf_str(&b, ",\"error\":{\"name\":");
    _aimux_buf_json_string(&b, name, strlen(name));
    if (argument != NULL) {
        _aimux_buf_str(&b, ",\"argument\":");
        _aimux_buf_json_string(&b, argument, strlen(argument));
    }
    _aimux_buf_str(&b, "},\"retryable\":false");
    if (truncated) _aimux_buf_str(&b, ",\"truncated\":[\"message\"]");
    _aimux_buf_str(&b, "}");
    if (b.oom) { free(b.p); free(m.p); return &_aimux_oom; }
    e = _aimux_node_new(code, m.p, m.len, b.p, b.len);
    free(b.p); free(m.p);
    return e ? e : &_aimux_oom;
}

static aimux_error_t *_aimux_null_arg(const char *argument)
{
    char msg[128] = "argument `";
    strncat(msg, argument, 64);
    strcat(msg, "` must not be NULL");
    return _aimux_err_simple(204, "NullArgumentError", msg, argument);
}

/* --- starting the embedded runtime ------------------------------------------------------- */
static pthread_once_t _aimux_once = PTHREAD_ONCE_INIT;
static int _aimux_ready = 0;
static char _aimux_init_msg[AIMUX_MSG_MAX];
static char *_aimux_path_list = NULL;

const char *_aimux_paths(void) { return _aimux_path_list ? _aimux_path_list : ""; }

static void _aimux_init_fail(const char *a, const char *b)
{
    _aimux_init_msg[0] = 0;
    strncat(_aimux_init_msg, "the embedded Python runtime cannot start: ", sizeof _aimux_init_msg - 1);
    strncat(_aimux_init_msg, a, sizeof _aimux_init_msg - 1 - strlen(_aimux_init_msg));
    if (b) strncat(_aimux_init_msg, b, sizeof _aimux_init_msg - 1 - strlen(_aimux_init_msg));
}

/* Describes the pending Python exception into the init message (GIL held). */
static void _aimux_init_fail_pyerr(const char *what)
{
    PyObject *t, *v, *tb, *s = NULL;
    const char *txt = NULL;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (v) s = PyObject_Str(v);
    if (s) txt = PyUnicode_AsUTF8(s);
    if (txt == NULL) PyErr_Clear();
    _aimux_init_fail(what, txt ? txt : "(no details)");
    Py_XDECREF(s); Py_XDECREF(t); Py_XDECREF(v); Py_XDECREF(tb);
}

/* --- the library as a guest (DESIGN.md "The library as a guest") ------------------------- */

/* 1. A foreign Python: a host whose global symbols already hold another CPython version (a
      python3.12 process loading us through ctypes). Our Py_* references would bind to *its*
      interpreter (global scope first), and cffi aborts. Checked before any Py_* call. */
static int _aimux_foreign_python(void)
{
    const char *(*host_version)(void);
    const char *v;
    int major = 0, minor = 0;
    size_t n;
    *(void **)(&host_version) = dlsym(RTLD_DEFAULT, "Py_GetVersion");
    if (host_version == NULL) return 0;      /* no Python in the global scope */
    v = host_version();
    if (v == NULL || sscanf(v, "%d.%d", &major, &minor) != 2) return 0;
    if (major == PY_MAJOR_VERSION && minor == PY_MINOR_VERSION) return 0;   /* shared: fine */
    for (n = 0; v[n] && v[n] != ' ' && n < 32; n++) {}
    snprintf(_aimux_init_msg, sizeof _aimux_init_msg,
             "the embedded Python runtime cannot start: this process already runs CPython %.*s, "
             "and libaimux embeds CPython " PY_VERSION "; two CPython versions cannot share one "
             "process (load libaimux from a process without Python, or from a CPython %d.%d host)",
             (int)n, v, PY_MAJOR_VERSION, PY_MINOR_VERSION);
    return 1;
}

/* 2. Signal neutrality: every disposition and the calling thread's mask, recorded before the
      runtime starts and put back after it (and after `signal` is imported, whose module init
      installs Python's SIGINT handler when SIGINT is at its default, even with
      install_signal_handlers = 0). */
#ifndef _AIMUX_NSIG
#define _AIMUX_NSIG 65
#endif
static struct sigaction _aimux_sig_saved[_AIMUX_NSIG];
static unsigned char _aimux_sig_valid[_AIMUX_NSIG];
static sigset_t _aimux_mask_saved;

static void _aimux_save_signals(void)
{
    int i;
    for (i = 1; i < _AIMUX_NSIG; i++)
        _aimux_sig_valid[i] = sigaction(i, NULL, &_aimux_sig_saved[i]) == 0;
    pthread_sigmask(SIG_SETMASK, NULL, &_aimux_mask_saved);
}

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000   /* added by the C library to every action it sets: not a choice */
#endif
static int _aimux_same_action(const struct sigaction *a, const struct sigaction *b)
{
    if ((a->sa_flags & ~SA_RESTORER) != (b->sa_flags & ~SA_RESTORER)) return 0;
    if (a->sa_flags & SA_SIGINFO) return a->sa_sigaction == b->sa_sigaction;
    return a->sa_handler == b->sa_handler;
}

static void _aimux_restore_signals(void)
{
    int i;
    struct sigaction now;
    for (i = 1; i < _AIMUX_NSIG; i++) {
        if (!_aimux_sig_valid[i] || sigaction(i, NULL, &now) != 0) continue;
        if (!_aimux_same_action(&now, &_aimux_sig_saved[i]))
            sigaction(i, &_aimux_sig_saved[i], NULL);
    }
    pthread_sigmask(SIG_SETMASK, &_aimux_mask_saved, NULL);
}

/* 3. Fork: CPython's after-fork handling for a C-level fork() of the host, around the fork
      with the interpreter lock taken (nothing half-done in the interpreter is copied), then the
      reset hooks. Python's own os.fork() does this itself: it holds the lock when it forks, and
      then the handlers stand aside. Hooks: Python's are aimux_ops.guest.on_fork_child (run by
      PyOS_AfterFork_Child); C state registers here with _aimux_on_fork_child. */
#define _AIMUX_FORK_HOOKS_MAX 16
static void (*_aimux_fork_hooks[_AIMUX_FORK_HOOKS_MAX])(void);
static int _aimux_fork_hook_count = 0;
static __thread int _aimux_fork_held = 0;
static __thread PyGILState_STATE _aimux_fork_gil;

/* Registers a C function run in the child of every fork, after the Python hooks (GIL held).
   Call it from _aimux_start (under its pthread_once). 0, or -1 when the table is full. */
int _aimux_on_fork_child(void (*hook)(void))
{
    if (_aimux_fork_hook_count >= _AIMUX_FORK_HOOKS_MAX) return -1;
    _aimux_fork_hooks[_aimux_fork_hook_count++] = hook;
    return 0;
}

static void _aimux_fork_prepare(void)
{
    _aimux_fork_held = 0;
    if (!_aimux_ready || !Py_IsInitialized() || PyGILState_Check()) return;
    _aimux_fork_gil = PyGILState_Ensure();
    PyOS_BeforeFork();
    _aimux_fork_held = 1;
}

static void _aimux_fork_parent(void)
{
    if (!_aimux_fork_held) return;
    _aimux_fork_held = 0;
    PyOS_AfterFork_Parent();
    PyGILState_Release(_aimux_fork_gil);
}

static void _aimux_fork_child(void)
{
    int i;
    if (!_aimux_fork_held) return;
    _aimux_fork_held = 0;
    PyOS_AfterFork_Child();   /* runs os.register_at_fork(after_in_child=...) hooks */
    for (i = 0; i < _aimux_fork_hook_count; i++) _aimux_fork_hooks[i]();
    PyGILState_Release(_aimux_fork_gil);
}

static void _aimux_install_atfork(void)
{
    pthread_atfork(_aimux_fork_prepare, _aimux_fork_parent, _aimux_fork_child);
}

/* Imports `signal` now (GIL not held), so no later lazy import can install a handler. */
static void _aimux_import_signal(void)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *mod = PyImport_ImportModule("signal");
    if (mod == NULL) PyErr_Clear();
    Py_XDECREF(mod);
    PyGILState_Release(gil);
}

/* Loads and starts the interpreter and the core (the body of _aimux_start). */
static void _aimux_start_runtime(void)
{
    Dl_info info;
    const char *env;
    PyGILState_STATE gil;
    PyObject *sys_path, *mod;

    /* 1. libpython's symbols must be global, or every C extension the interpreter imports fails
          with "undefined symbol: PyExc_..." when the host loaded us with RTLD_LOCAL. */
    if (dladdr((void *)&Py_IsInitialized, &info) == 0 || info.dli_fname == NULL) {
        _aimux_init_fail("cannot locate libpython (dladdr failed)", NULL);
        return;
    }
    if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL) == NULL) {
        const char *why = dlerror();
        /* A host whose executable carries the interpreter (a statically linked python3) exports
           its symbols globally already: re-opening the executable fails, and is not needed. */
        if (dlsym(RTLD_DEFAULT, "PyExc_SystemError") == NULL) {
            _aimux_init_fail("cannot make libpython global: ", why ? why : info.dli_fname);
            return;
        }
    }

    env = getenv("AIMUX_PYTHONPATH");
    _aimux_path_list = strdup(env != NULL && env[0] != 0 ? env : AIMUX_BUILD_PATHS);
    if (_aimux_path_list == NULL) { _aimux_init_fail("out of memory", NULL); return; }

    /* 2. Start the interpreter ourselves (unless the host already runs one): isolated from the
          host's environment, with the home recorded at build time, and with a status instead of
          Py_FatalError when it cannot start. */
    if (!Py_IsInitialized()) {
        PyStatus st;
        PyPreConfig pre;
        PyConfig cfg;
        const char *pm = getenv("PYTHONMALLOC");
        PyPreConfig_InitIsolatedConfig(&pre);
        pre.utf8_mode = 1;
        if (pm != NULL) {   /* honoured so the library can run under valgrind */
            if (strcmp(pm, "malloc") == 0) pre.allocator = PYMEM_ALLOCATOR_MALLOC;
            else if (strcmp(pm, "malloc_debug") == 0) pre.allocator = PYMEM_ALLOCATOR_MALLOC_DEBUG;
            else if (strcmp(pm, "debug") == 0) pre.allocator = PYMEM_ALLOCATOR_DEBUG;
        }
        st = Py_PreInitialize(&pre);
        if (PyStatus_Exception(st)) {
            _aimux_init_fail("Py_PreInitialize: ", st.err_msg ? st.err_msg : "failed");
            return;
        }
        PyConfig_InitIsolatedConfig(&cfg);
        cfg.install_signal_handlers = 0;
        st = PyConfig_SetBytesString(&cfg, &cfg.home, AIMUX_PYTHON_HOME);
        if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&cfg);
        PyConfig_Clear(&cfg);
        if (PyStatus_Exception(st)) {
            _aimux_init_fail("Py_InitializeFromConfig: ", st.err_msg ? st.err_msg : "failed");
            return;
        }
        PyEval_SaveThread();   /* release the GIL: every call takes it with PyGILState_Ensure */
        _aimux_import_signal();     /* at once: Python's SIGINT handler lives microseconds, */
        _aimux_restore_signals();   /* not for the whole start-up */
    }

    /* 3. Put the recorded package paths first on sys.path (the init code then processes their
          .pth files) and check that cffi's backend imports, with the reason if it does not. */
    gil = PyGILState_Ensure();
    sys_path = PySys_GetObject("path");
    if (sys_path != NULL && PyList_Check(sys_path)) {
        char *copy = strdup(_aimux_path_list), *save = NULL, *tok;
        Py_ssize_t at = 0;
        for (tok = copy ? strtok_r(copy, ":", &save) : NULL; tok; tok = strtok_r(NULL, ":", &save)) {
            PyObject *p = PyUnicode_DecodeFSDefault(tok);
            if (p == NULL) { PyErr_Clear(); continue; }
            if (PySequence_Contains(sys_path, p) != 1) {
                if (PyList_Insert(sys_path, at++, p) < 0) PyErr_Clear();
            }
            Py_DECREF(p);
        }
        free(copy);
    }
    mod = PyImport_ImportModule("_cffi_backend");
    if (mod == NULL) {
        _aimux_init_fail_pyerr("cannot import _cffi_backend (cffi): ");
        PyGILState_Release(gil);
        return;
    }
    Py_DECREF(mod);
    PyGILState_Release(gil);

    /* 4. cffi's own start-up: creates the module and runs the init code (which records, rather
          than raises, a failure to import the core). */
    if (cffi_start_python() != 0) {
        _aimux_init_fail("the cffi embedding init failed (cffi_start_python() returned -1; "
                         "the traceback was printed to stderr)", NULL);
        return;
    }
    _aimux_import_signal();   /* in a shared interpreter too: no later import changes anything */
    _aimux_ready = 1;
}

/* Run once (pthread_once): the guest checks around the runtime's start-up. */
static void _aimux_start(void)
{
    if (_aimux_foreign_python()) return;
    _aimux_save_signals();
    _aimux_start_runtime();
    _aimux_restore_signals();
    if (_aimux_ready) _aimux_install_atfork();
}

static aimux_error_t *_aimux_runtime(void)
{
    pthread_once(&_aimux_once, _aimux_start);
    if (_aimux_ready) return NULL;
    return _aimux_err_simple(207, "RuntimeInitError", _aimux_init_msg, NULL);
}

/* A KeyboardInterrupt ended the call (a Python host sharing the interpreter handles SIGINT):
   noted by the Python side, handed back to the host by _aimux_after once the callback returned
   (raising it inside the callback would only interrupt the callback itself). */
static __thread int _aimux_interrupt_pending = 0;
void _aimux_note_interrupt(void) { _aimux_interrupt_pending = 1; }

/* rc != 0: the Python callback raised past its own handler (or ran out of memory). */
static aimux_error_t *_aimux_after(int rc, aimux_error_t *err)
{
    if (_aimux_interrupt_pending) {
        _aimux_interrupt_pending = 0;
        PyErr_SetInterrupt();   /* no GIL needed; a no-op when Python does not handle SIGINT */
    }
    if (err != NULL) return err;
    if (rc != 0)
        return _aimux_err_simple(208, "InternalError",
                                 "unexpected failure in the Python side of libaimux", NULL);
    return NULL;
}

/* --- the exported ABI --------------------------------------------------------------------- */
CFFI_DLLEXPORT uint32_t aimux_abi_version(void) { return AIMUX_ABI_VERSION; }

CFFI_DLLEXPORT aimux_error_t *aimux_call(const char *op, const char *params_json,
                                         char **out_result_json)
{
    aimux_error_t *err;
    char *res = NULL;
    int rc;
    if (out_result_json == NULL) return _aimux_null_arg("out_result_json");
    *out_result_json = NULL;
    if ((err = _aimux_runtime()) != NULL) return err;
    rc = _aimux_py_call(op, params_json, &res, &err);
    if ((err = _aimux_after(rc, err)) != NULL) { free(res); return err; }
    if (res == NULL)
        return _aimux_err_simple(208, "InternalError", "the core returned neither a result nor an error", NULL);
    *out_result_json = res;
    return NULL;
}

CFFI_DLLEXPORT aimux_error_t *aimux_stream(const char *op, const char *params_json,
                                           uint64_t *out_stream)
{
    aimux_error_t *err;
    uint64_t h = 0;
    int rc;
    if (out_stream == NULL) return _aimux_null_arg("out_stream");
    *out_stream = 0;
    if ((err = _aimux_runtime()) != NULL) return err;
    rc = _aimux_py_stream(op, params_json, &h, &err);
    if ((err = _aimux_after(rc, err)) != NULL) return err;
    if (h == 0)
        return _aimux_err_simple(208, "InternalError", "the core returned neither a handle nor an error", NULL);
    *out_stream = h;
    return NULL;
}

CFFI_DLLEXPORT aimux_error_t *aimux_stream_next(uint64_t stream, char **out_event_json)
{
    aimux_error_t *err;
    char *ev = NULL;
    int rc;
    if (out_event_json == NULL) return _aimux_null_arg("out_event_json");
    *out_event_json = NULL;
    if ((err = _aimux_runtime()) != NULL) return err;
    rc = _aimux_py_stream_next(stream, &ev, &err);
    if ((err = _aimux_after(rc, err)) != NULL) { free(ev); return err; }
    *out_event_json = ev;   /* NULL: ended */
    return NULL;
}

CFFI_DLLEXPORT void aimux_stream_cancel(uint64_t stream)
{
    aimux_error_t *err = _aimux_runtime();
    if (err != NULL) { aimux_error_free(err); return; }
    (void)_aimux_py_stream_ctl(stream, 0);
}

CFFI_DLLEXPORT void aimux_stream_free(uint64_t stream)
{
    aimux_error_t *err = _aimux_runtime();
    if (err != NULL) { aimux_error_free(err); return; }
    (void)_aimux_py_stream_ctl(stream, 1);
}

CFFI_DLLEXPORT int32_t aimux_error_code(const aimux_error_t *err)
{
    return err ? err->code : 0;
}

CFFI_DLLEXPORT char *aimux_error_message(const aimux_error_t *err)
{
    return err ? _aimux_strndup(err->message, err->message_len) : NULL;
}

CFFI_DLLEXPORT char *aimux_error_json(const aimux_error_t *err)
{
    return err ? _aimux_strndup(err->json, err->json_len) : NULL;
}

CFFI_DLLEXPORT const aimux_error_t *aimux_error_cause(const aimux_error_t *err)
{
    return err ? err->cause : NULL;
}

CFFI_DLLEXPORT void aimux_error_free(aimux_error_t *err) { _aimux_chain_free(err); }

CFFI_DLLEXPORT void aimux_string_free(char *s) { free(s); }

CFFI_DLLEXPORT aimux_error_t *aimux_error_from_json(const char *envelope_json,
                                                    aimux_error_t **out_error)
{
    aimux_error_t *err, *dec = NULL;
    int rc;
    if (out_error == NULL) return _aimux_null_arg("out_error");
    *out_error = NULL;
    if (envelope_json == NULL) return _aimux_null_arg("envelope_json");
    if ((err = _aimux_runtime()) != NULL) return err;
    rc = _aimux_py_decode(envelope_json, &dec, &err);
    if ((err = _aimux_after(rc, err)) != NULL) { aimux_error_free(dec); return err; }
    if (dec == NULL)
        return _aimux_err_simple(208, "InternalError", "the envelope decoded to no error", NULL);
    *out_error = dec;
    return NULL;
}

/* --- kind / name without a JSON library: a scanner over the node's (valid) JSON ----------- */
static const char *_aimux_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}
static const char *_aimux_skip_string(const char *p)   /* p at '"' */
{
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1]) p++;
    return *p == '"' ? p + 1 : NULL;
}
static const char *_aimux_skip_value(const char *p)
{
    int depth = 0;
    p = _aimux_ws(p);
    do {
        if (*p == 0) return NULL;
        if (*p == '"') { p = _aimux_skip_string(p); if (!p) return NULL; continue; }
        if (*p == '{' || *p == '[') depth++;
        else if (*p == '}' || *p == ']') { if (--depth < 0) return NULL; }
        else if (depth == 0) {   /* a scalar at top level: read to its end */
            while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' &&
                   *p != '\t' && *p != '\r') p++;
            return p;
        }
        p++;
    } while (depth > 0);
    return p;
}
/* The value of member `key` of the object at p, or NULL. Keys are compared raw. */
static const char *_aimux_member(const char *p, const char *key)
{
    size_t kl = strlen(key);
    p = _aimux_ws(p);
    if (*p != '{') return NULL;
    p = _aimux_ws(p + 1);
    while (*p == '"') {
        const char *k = p + 1, *end = _aimux_skip_string(p);
        if (end == NULL) return NULL;
        p = _aimux_ws(end);
        if (*p != ':') return NULL;
        p = _aimux_ws(p + 1);
        if ((size_t)(end - 1 - k) == kl && memcmp(k, key, kl) == 0) return p;
        p = _aimux_skip_value(p);
        if (p == NULL) return NULL;
        p = _aimux_ws(p);
        if (*p != ',') return NULL;
        p = _aimux_ws(p + 1);
    }
    return NULL;
}
static unsigned _aimux_hex4(const char *p)
{
    unsigned v = 0; int i;
    for (i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0xFFFFFFFFu;
    }
    return v;
}
/* A malloc'd UTF-8 copy of the JSON string at p, or NULL if p is not a string. */
static char *_aimux_string_dup(const char *p)
{
    const char *end;
    char *out, *o;
    if (p == NULL || *p != '"' || (end = _aimux_skip_string(p)) == NULL) return NULL;
    out = o = (char *)malloc((size_t)(end - p) + 1);
    if (out == NULL) return NULL;
    for (p++; p < end - 1; p++) {
        if (*p != '\\') { *o++ = *p; continue; }
        p++;
        switch (*p) {
        case 'n': *o++ = '\n'; break;
        case 't': *o++ = '\t'; break;
        case 'r': *o++ = '\r'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'u': {
            unsigned cp = (p + 4 < end) ? _aimux_hex4(p + 1) : 0xFFFFFFFFu;
            if (cp == 0xFFFFFFFFu) { *o++ = '?'; break; }
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && p + 6 < end && p[1] == '\\' && p[2] == 'u') {
                unsigned lo = _aimux_hex4(p + 3);
                if (lo >= 0xDC00 && lo < 0xE000) { cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00); p += 6; }
            }
            if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;
            if (cp < 0x80) *o++ = (char)cp;
            else if (cp < 0x800) { *o++ = (char)(0xC0 | (cp >> 6)); *o++ = (char)(0x80 | (cp & 63)); }
            else if (cp < 0x10000) { *o++ = (char)(0xE0 | (cp >> 12)); *o++ = (char)(0x80 | ((cp >> 6) & 63)); *o++ = (char)(0x80 | (cp & 63)); }
            else { *o++ = (char)(0xF0 | (cp >> 18)); *o++ = (char)(0x80 | ((cp >> 12) & 63)); *o++ = (char)(0x80 | ((cp >> 6) & 63)); *o++ = (char)(0x80 | (cp & 63)); }
            break;
        }
        default: *o++ = *p; break;   /* \" \\ \/ */
        }
    }
    *o = 0;
    return out;
}

CFFI_DLLEXPORT char *aimux_error_kind(const aimux_error_t *err)
{
    const char *k;
    char *r;
    if (err == NULL) return NULL;
    k = _aimux_member(err->json, "kind");
    if (k == NULL) return _aimux_strndup("source", 6);
    r = _aimux_string_dup(k);
    return r ? r : _aimux_strndup("unknown", 7);
}

CFFI_DLLEXPORT char *aimux_error_name(const aimux_error_t *err)
{
    const char *e;
    if (err == NULL) return NULL;
    if (_aimux_member(err->json, "kind") == NULL)
        return _aimux_string_dup(_aimux_member(err->json, "type"));
    e = _aimux_member(err->json, "error");
    return e ? _aimux_string_dup(_aimux_member(e, "name")) : NULL;
}
