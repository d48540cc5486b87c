/* libaimux: the C side of the aimux C ABI (native/aimux.h) over the embedded Python core.
 *
 * Owns aimux_error_t (one allocation per chain node), starting the embedded interpreter, and
 * every exported aimux_* function. It calls into Python through the `extern "Python"` callbacks
 * declared in aimux_cdef.h and defined by aimux_embed.py. Not compiled on its own: cffi's
 * embedding build (native/build_libaimux.py) includes it into the generated module, after
 * Python.h and cffi's embedding prelude (which define CFFI_DLLEXPORT and cffi_start_python).
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "aimux.h"
#include "aimux_early.h"
#include "aimux_packed.h"

#define AIMUX_MSG_MAX 1024

/* Python-side callbacks (defined by the init code with @ffi.def_extern). */
static int _aimux_py_call(const char *, const char *, char **, aimux_error_t **);
static int _aimux_py_stream(const char *, const char *, uint64_t *, aimux_error_t **);
static int _aimux_py_stream_next(uint64_t, char **, aimux_error_t **);
static int _aimux_py_stream_ctl(uint64_t, int);
static int _aimux_py_decode(const char *, aimux_error_t **, aimux_error_t **);
static int _aimux_py_stream_start(const char *, const char *, uint64_t *, aimux_error_t **);
static int _aimux_py_stream_poll(uint64_t, size_t, char **, int32_t *, aimux_error_t **);
static int _aimux_py_stream_next_batch(uint64_t, size_t, char **, int32_t *, aimux_error_t **);
static int _aimux_py_ready(uint64_t *, size_t, size_t *);
static int _aimux_py_events_fd(int *, aimux_error_t **);
static int _aimux_py_wake(uint64_t, int);
static int _aimux_py_poll_one(uint64_t, size_t, char **);
static int _aimux_py_stream_tool_result(uint64_t, const char *, const char *, aimux_error_t **);

/* One node of the chain: one allocation holding the struct and its strings. kind / name /
   status_code / retryable / retry_after_ms are decided once, by the core
   (aimux_ops.wire.packed.pack of envelope.chain_links) or by _aimux_err_early: the accessors never
   read JSON. */
struct aimux_error {
    int32_t code;
    int32_t status_code;    /* error.statusCode (a RetryError's: its last attempt's); 0: none */
    int retryable;          /* root only (0 on a cause) */
    int64_t retry_after_ms; /* root only; -1: absent */
    const char *kind;       /* NUL-terminated: "aimux", …, or "source" */
    const char *name;       /* NUL-terminated, or NULL: error.name / a source node's type */
    const char *message;    /* NUL-terminated UTF-8 */
    const char *json;       /* NUL-terminated: the envelope (root) or the node JSON */
    size_t kind_len, name_len, message_len, json_len;
    struct aimux_error *cause; /* owned */
};

static struct aimux_error _aimux_oom = {_AIMUX_OOM_CODE,
                                        0,
                                        0,
                                        -1,
                                        _AIMUX_OOM_KIND,
                                        _AIMUX_OOM_NAME,
                                        _AIMUX_OOM_MSG,
                                        _AIMUX_OOM_JSON,
                                        sizeof(_AIMUX_OOM_KIND) - 1,
                                        sizeof(_AIMUX_OOM_NAME) - 1,
                                        sizeof(_AIMUX_OOM_MSG) - 1,
                                        sizeof(_AIMUX_OOM_JSON) - 1,
                                        NULL};

/* One allocation for a node: kind and name copied (name == NULL: the node has no name), room
   for a message of msg_len and a JSON text of json_len bytes, NUL-terminated, for the caller to
   fill in. */
static aimux_error_t *_aimux_node_alloc(int32_t code, const char *kind, size_t kind_len,
                                        const char *name, size_t name_len, size_t msg_len,
                                        size_t json_len)
{
    struct aimux_error *e;
    char *p;
    if (name == NULL) name_len = 0;
    e = (struct aimux_error *)malloc(sizeof(struct aimux_error) + kind_len + 1 + name_len + 1 +
                                     msg_len + 1 + json_len + 1);
    if (e == NULL) return NULL;
    p = (char *)(e + 1);
    e->kind = p;
    e->kind_len = kind_len;
    memcpy(p, kind, kind_len);
    p[kind_len] = 0;
    p += kind_len + 1;
    e->name = name ? p : NULL;
    e->name_len = name_len;
    if (name) memcpy(p, name, name_len);
    p[name_len] = 0;
    p += name_len + 1;
    e->message = p;
    e->message_len = msg_len;
    p[msg_len] = 0;
    p += msg_len + 1;
    e->json = p;
    e->json_len = json_len;
    p[json_len] = 0;
    e->code = code;
    e->status_code = 0;
    e->retryable = 0;
    e->retry_after_ms = -1;
    e->cause = NULL;
    return e;
}

/* name == NULL: the node has no name. Strings are copied (each NUL-terminated). */
static aimux_error_t *_aimux_node_new(int32_t code, const char *kind, size_t kind_len,
                                      const char *name, size_t name_len, const char *msg,
                                      size_t msg_len, const char *json, size_t json_len)
{
    aimux_error_t *e = _aimux_node_alloc(code, kind, kind_len, name, name_len, msg_len, json_len);
    if (e == NULL) return NULL;
    memcpy((char *)e->message, msg, msg_len);
    memcpy((char *)e->json, json, json_len);
    return e;
}

static void _aimux_chain_free(aimux_error_t *e)
{
    while (e != NULL && e != &_aimux_oom) { /* the out-of-memory sentinel is never freed */
        aimux_error_t *next = e->cause;
        free(e);
        e = next;
    }
}

/* A chain packed by the core (aimux_ops/wire/packed.py, the layout's one definition; its types and
   offsets are generated into aimux_packed.h): the root's header, then per node, root first, a
   link header and its kind, name, message and JSON bytes. One allocation per node. NULL when
   out of memory or malformed. */
#define _AIMUX_PACKED_GET(var, buf, at) memcpy(&(var), (buf) + (at), sizeof(var))
aimux_error_t *_aimux_err_unpack(const char *buf, size_t len)
{
    aimux_error_t *root = NULL, **tail = &root;
    size_t off = _AIMUX_PACKED_ROOT_SIZE;
    _aimux_packed_root_retryable_t retryable;
    _aimux_packed_root_retry_after_ms_t after;
    if (len < _AIMUX_PACKED_ROOT_SIZE) return NULL;
    _AIMUX_PACKED_GET(retryable, buf, _AIMUX_PACKED_ROOT_RETRYABLE);
    _AIMUX_PACKED_GET(after, buf, _AIMUX_PACKED_ROOT_RETRY_AFTER_MS);
    while (off < len) {
        _aimux_packed_link_code_t code;
        _aimux_packed_link_status_code_t status;
        _aimux_packed_link_kind_len_t kl;
        _aimux_packed_link_name_len_t nl;
        _aimux_packed_link_message_len_t ml;
        _aimux_packed_link_json_len_t jl;
        const char *at = buf + off;
        size_t need, nlen;
        aimux_error_t *n;
        if (len - off < _AIMUX_PACKED_LINK_SIZE) goto bad;
        _AIMUX_PACKED_GET(code, at, _AIMUX_PACKED_LINK_CODE);
        _AIMUX_PACKED_GET(status, at, _AIMUX_PACKED_LINK_STATUS_CODE);
        _AIMUX_PACKED_GET(kl, at, _AIMUX_PACKED_LINK_KIND_LEN);
        _AIMUX_PACKED_GET(nl, at, _AIMUX_PACKED_LINK_NAME_LEN);
        _AIMUX_PACKED_GET(ml, at, _AIMUX_PACKED_LINK_MESSAGE_LEN);
        _AIMUX_PACKED_GET(jl, at, _AIMUX_PACKED_LINK_JSON_LEN);
        off += _AIMUX_PACKED_LINK_SIZE;
        nlen = nl == _AIMUX_PACKED_NO_NAME ? 0 : (size_t)nl;
        need = (size_t)kl + nlen + (size_t)ml + (size_t)jl;
        if (len - off < need) goto bad;
        n = _aimux_node_new(code, buf + off, kl,
                            nl == _AIMUX_PACKED_NO_NAME ? NULL : buf + off + kl, nlen,
                            buf + off + kl + nlen, ml, buf + off + kl + nlen + ml, jl);
        if (n == NULL) goto bad;
        n->status_code = status < 0 ? 0 : status;
        off += need;
        *tail = n;
        tail = &n->cause;
    }
    if (root == NULL) return NULL;
    root->retryable = retryable != 0;
    root->retry_after_ms = after < 0 ? -1 : after;
    return root;
bad:
    _aimux_chain_free(root);
    return NULL;
}

#include "aimux_buf.h"
#include "aimux_queue.c"
#include "aimux_answers.c"

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
        for (j = 1; j < k; j++)
            if (((unsigned char)s[i + j] >> 6) != 2) return i;
        i += k;
    }
    return i;
}

/* An envelope the shim builds itself, before (or without) the Python core: `which` is an
   _AIMUX_EARLY_* entry of the generated table (aimux_early.h: code, kind and error.name from the
   catalogue): 204 for NULL out-pointers, 207 when the runtime cannot start, 208 for failures of
   the shim itself. Every other error is projected by the core. Never NULL. */
aimux_error_t *_aimux_err_early(int which, const char *message, const char *argument)
{
    static const char cut[] = "\xe2\x80\xa6[truncated]";
    const struct _aimux_early *t = &_aimux_early_errors[which];
    _aimux_buf b = {0}, m = {0};
    size_t n = message ? strlen(message) : 0, keep = _aimux_utf8_prefix(message, n, AIMUX_MSG_MAX);
    int truncated = keep < n;
    aimux_error_t *e;
    if (truncated) keep = _aimux_utf8_prefix(message, n, AIMUX_MSG_MAX - (sizeof cut - 1));
    _aimux_buf_put(&m, message ? message : "", keep);
    if (truncated) _aimux_buf_put(&m, cut, sizeof cut - 1);
    if (m.oom || m.p == NULL) {
        free(m.p);
        return &_aimux_oom;
    }
    _aimux_buf_str(&b, "{\"kind\":\"");
    _aimux_buf_str(&b, t->kind);
    _aimux_buf_str(&b, "\",\"code\":");
    _aimux_buf_int(&b, t->code);
    _aimux_buf_str(&b, ",\"message\":");
    _aimux_buf_json_string(&b, m.p, m.len);
    _aimux_buf_str(&b, ",\"error\":{\"name\":");
    _aimux_buf_json_string(&b, t->name, strlen(t->name));
    if (argument != NULL) {
        _aimux_buf_str(&b, ",\"argument\":");
        _aimux_buf_json_string(&b, argument, strlen(argument));
    }
    _aimux_buf_str(&b, "},\"retryable\":false");
    if (truncated) _aimux_buf_str(&b, ",\"truncated\":[\"message\"]");
    _aimux_buf_str(&b, "}");
    if (b.oom) {
        free(b.p);
        free(m.p);
        return &_aimux_oom;
    }
    e = _aimux_node_new(t->code, t->kind, strlen(t->kind), t->name, strlen(t->name), m.p, m.len,
                        b.p, b.len);
    free(b.p);
    free(m.p);
    return e ? e : &_aimux_oom;
}

static aimux_error_t *_aimux_null_arg(const char *argument)
{
    char msg[128] = "argument `";
    strncat(msg, argument, 64);
    strcat(msg, "` must not be NULL");
    return _aimux_err_early(_AIMUX_EARLY_NULL_ARGUMENT, msg, argument);
}

/* --- starting the embedded runtime ------------------------------------------------------- */
static int _aimux_started = 0; /* the start-up ran (_aimux_runtime) */
static int _aimux_ready = 0;
static char _aimux_init_msg[4 * AIMUX_MSG_MAX]; /* each 207 bounds and marks it */
static char *_aimux_path_list = NULL;

const char *_aimux_paths(void) { return _aimux_path_list ? _aimux_path_list : ""; }

static void _aimux_init_fail(const char *a, const char *b)
{
    _aimux_init_msg[0] = 0;
    strncat(_aimux_init_msg,
            "the embedded Python runtime cannot start: ", sizeof _aimux_init_msg - 1);
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
    Py_XDECREF(s);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
}

/* --- where the runtime comes from (relocatable installs; docs/DESIGN.md "Installing") -------
   Recorded at build time by build_libaimux.py:
   AIMUX_PAYLOAD_REL  the Python payload (aimux_ops and its dependencies), relative to the
                      directory of this library's file; "" in a development build
   AIMUX_BUILD_PATHS  development builds only: the build venv's site-packages and the checkout
   AIMUX_PYTHON_HOME  the build interpreter's home: a fallback only (AIMUX_HOME_FIXED forces it) */
#ifndef AIMUX_PAYLOAD_REL
#define AIMUX_PAYLOAD_REL ""
#endif
#ifndef AIMUX_BUILD_PATHS
#define AIMUX_BUILD_PATHS ""
#endif
#ifndef AIMUX_HOME_FIXED
#define AIMUX_HOME_FIXED 0
#endif
#define _AIMUX_STR2(x) #x
#define _AIMUX_STR(x)  _AIMUX_STR2(x)
#define _AIMUX_PYVER   _AIMUX_STR(PY_MAJOR_VERSION) "." _AIMUX_STR(PY_MINOR_VERSION)

static char _aimux_home[PATH_MAX];

/* Appends a, b, c to the init message (cut at its size). */
static void _aimux_init_append(const char *a, const char *b, const char *c)
{
    const char *parts[3] = {a, b, c};
    size_t len = strlen(_aimux_init_msg), i;
    for (i = 0; i < 3; i++) {
        size_t n = strlen(parts[i]);
        if (n > sizeof _aimux_init_msg - 1 - len) n = sizeof _aimux_init_msg - 1 - len;
        memcpy(_aimux_init_msg + len, parts[i], n);
        len += n;
    }
    _aimux_init_msg[len] = 0;
}

static int _aimux_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The real directory of the object file that defines `sym` (this library, libpython). */
static int _aimux_dir_of(const void *sym, char *out, size_t n)
{
    Dl_info info;
    char real[PATH_MAX], *slash;
    if (dladdr(sym, &info) == 0 || info.dli_fname == NULL) return 0;
    if (realpath(info.dli_fname, real) == NULL) return 0;
    slash = strrchr(real, '/');
    if (slash == NULL || (size_t)(slash - real) >= n) return 0;
    *slash = 0;
    strcpy(out, real[0] ? real : "/");
    return 1;
}

/* The process must run the CPython minor version this library was built for: another one (a
   host that embeds Python 3.12, say) would fail later with a misleading error, or abort. */
static int _aimux_check_python_version(void)
{
    const char *v = Py_GetVersion();
    size_t want = strlen(_AIMUX_PYVER);
    if (strncmp(v, _AIMUX_PYVER, want) != 0 || (v[want] != '.' && v[want] != ' ' && v[want] != 0)) {
        char msg[300];
        const char *dot = strchr(v, '.');
        int full = (int)strcspn(v, " "),
            xy = dot ? (int)(dot + 1 - v + strcspn(dot + 1, ". ")) : full;
        if (full > 40) full = 40;
        if (xy > full) xy = full;
        snprintf(msg, sizeof msg,
                 "libaimux was built for Python " _AIMUX_PYVER " but this process "
                 "runs Python %.*s; use a libaimux built for Python %.*s (make install "
                 "PYTHON=python%.*s, or pip install aimux-ops in that Python's environment)",
                 full, v, xy, v, xy, v);
        _aimux_init_fail(msg, NULL);
        return 0;
    }
    return 1;
}

/* The package paths (':'-separated, malloc'd): $AIMUX_PYTHONPATH, else the payload at
   <this library's directory>/AIMUX_PAYLOAD_REL, else (development builds) the recorded paths.
   NULL with the init message set when an installed library cannot find its payload. */
static char *_aimux_find_payload(void)
{
    const char *env = getenv("AIMUX_PYTHONPATH");
    char dir[PATH_MAX], payload[PATH_MAX + sizeof AIMUX_PAYLOAD_REL + 1];
    char probe[PATH_MAX + sizeof "/aimux_ops/__init__.py"];
    char *r;
    if (env != NULL && env[0] != 0) return strdup(env);
    if (AIMUX_PAYLOAD_REL[0] == 0) return strdup(AIMUX_BUILD_PATHS);
    if (!_aimux_dir_of((const void *)_aimux_home, dir, sizeof dir)) {
        _aimux_init_fail("cannot locate libaimux's own file (dladdr failed), so not its Python "
                         "payload either; set AIMUX_PYTHONPATH",
                         NULL);
        return NULL;
    }
    snprintf(payload, sizeof payload, "%s/%s", dir, AIMUX_PAYLOAD_REL);
    r = realpath(payload, NULL);
    snprintf(probe, sizeof probe, "%s/aimux_ops/__init__.py", r ? r : dir);
    if (r == NULL || !_aimux_exists(probe)) {
        _aimux_init_fail("libaimux cannot find its Python payload (aimux_ops and its "
                         "dependencies): no ",
                         r ? probe : payload);
        _aimux_init_append(" (reinstall with `make install`, which puts the payload there, "
                           "or `pip install aimux-ops`; or set AIMUX_PYTHONPATH)",
                           "", "");
        free(r);
        return NULL;
    }
    return r;
}

/* The Python home: the prefix of the libpython this process loaded (<home>/lib/libpythonX.Y.so or
   <home>/lib/<multiarch>/...; the one whose lib/pythonX.Y/os.py exists), else the home recorded
   at build time. So the pyenv build also runs on Debian's libpython3.11, and the reverse. */
static const char *_aimux_find_home(void)
{
    static const char *const libs[] = {"lib", "lib64"};
    char dir[PATH_MAX], probe[PATH_MAX + 64];
    int up;
    size_t i;
    if (AIMUX_HOME_FIXED || !_aimux_dir_of((const void *)&Py_IsInitialized, dir, sizeof dir))
        return AIMUX_PYTHON_HOME;
    for (up = 0; up < 2; up++) {
        char *slash = strrchr(dir, '/');
        if (slash == NULL || slash == dir) break;
        *slash = 0;
        for (i = 0; i < sizeof libs / sizeof libs[0]; i++) {
            snprintf(probe, sizeof probe, "%s/%s/python" _AIMUX_PYVER "/os.py", dir, libs[i]);
            if (_aimux_exists(probe)) {
                snprintf(_aimux_home, sizeof _aimux_home, "%s", dir);
                return _aimux_home;
            }
        }
    }
    return AIMUX_PYTHON_HOME;
}

/* --- the library as a guest (DESIGN.md "The library as a guest") ------------------------- */

/* 1. Signal neutrality: every disposition and the calling thread's mask, recorded before the
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
#define SA_RESTORER 0x04000000 /* added by the C library to every action it sets: not a choice */
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

/* 2. Fork: CPython's after-fork handling for a C-level fork() of the host, around the fork
      with the interpreter lock taken (nothing half-done in the interpreter is copied), then the
      reset hooks. Python's own os.fork() does this itself: it holds the lock when it forks, and
      then the handlers stand aside. The reset hooks are Python's, aimux_ops.guest.on_fork_child
      (run by PyOS_AfterFork_Child): the shim's C state needs none.
      - The start-up lock is held across the fork too (taken first, as the start-up takes it
        before the interpreter lock), so a child never copies a runtime half started.
      - A thread state this thread did not have before the fork is kept in the child: the
        forking thread is the child's only thread, and PyOS_AfterFork_Child deleted every other
        one. Deleting it as well would leave the interpreter with no thread state at all, and
        CPython (3.11, 3.12) then reuses the interpreter's initial thread state, still marked
        initialized: "Fatal Python error: init_threadstate: thread state already initialized"
        at the child's first call. */
static __thread int _aimux_fork_held = 0;   /* this fork took the interpreter lock */
static __thread int _aimux_fork_start = 0;  /* this fork took the start-up lock */
static __thread int _aimux_fork_new_ts = 0; /* ... and made this thread's state */
static __thread int _aimux_starting = 0;    /* this thread runs the start-up */
static __thread PyGILState_STATE _aimux_fork_gil;
static pthread_mutex_t _aimux_start_mu = PTHREAD_MUTEX_INITIALIZER;

static void _aimux_fork_prepare(void)
{
    _aimux_fork_held = 0;
    _aimux_fork_start = 0;
    /* a thread inside the interpreter (a Python host's os.fork(), subprocess in the start-up)
       forks as CPython does it: nothing to add */
    if (_aimux_starting || (Py_IsInitialized() && PyGILState_Check())) return;
    pthread_mutex_lock(&_aimux_start_mu);
    _aimux_fork_start = 1;
    if (!_aimux_ready || !Py_IsInitialized()) return;
    _aimux_fork_new_ts = PyGILState_GetThisThreadState() == NULL;
    _aimux_fork_gil = PyGILState_Ensure();
    PyOS_BeforeFork();
    _aimux_fork_held = 1;
}

static void _aimux_fork_parent(void)
{
    if (_aimux_fork_held) {
        _aimux_fork_held = 0;
        PyOS_AfterFork_Parent();
        PyGILState_Release(_aimux_fork_gil);
    }
    if (_aimux_fork_start) {
        _aimux_fork_start = 0;
        pthread_mutex_unlock(&_aimux_start_mu);
    }
}

static void _aimux_fork_child(void)
{
    if (_aimux_fork_held) {
        _aimux_fork_held = 0;
        PyOS_AfterFork_Child(); /* runs os.register_at_fork(after_in_child=...) hooks */
        if (_aimux_fork_new_ts)
            PyEval_SaveThread(); /* the child's only thread state stays: see above */
        else
            PyGILState_Release(_aimux_fork_gil);
    }
    if (_aimux_fork_start) {
        _aimux_fork_start = 0;
        pthread_mutex_unlock(&_aimux_start_mu); /* locked by this thread, the only one */
    }
}

static void _aimux_install_atfork(void)
{
    pthread_atfork(_aimux_fork_prepare, _aimux_fork_parent, _aimux_fork_child);
}

/* The core loads on the first call that needs it (aimux_embed.py), under the start-up lock like
   the start-up itself: a fork waits until it is done, so no child inherits a half-loaded core.
   Taken without the GIL (cffi releases it around this call); never while starting. */
void _aimux_core_lock(int lock)
{
    if (lock)
        pthread_mutex_lock(&_aimux_start_mu);
    else
        pthread_mutex_unlock(&_aimux_start_mu);
}

/* 3. Exit: a host may end (return from main, exit()) while the core's threads still run (the
      stream loop mid-event, the reaper, a host thread inside a call): an embedded interpreter is
      never finalized, so nothing stops them, and exit() runs the C exit handlers under them.
      OpenSSL's (OPENSSL_cleanup, registered with atexit by its first initialization) frees the
      tables they use, with or without the interpreter lock (a hash, a TLS read): a SIGSEGV in
      the loop thread, about one run in 20 of test_guest streams200. So the first initialization
      in this process is ours, without that handler (OPENSSL_INIT_NO_ATEXIT, what a long-lived
      process embedding OpenSSL does): aimux_ops.guest.keep_openssl_at_exit calls this with the
      path of the extension module (_hashlib or _ssl) about to load OpenSSL, before it does; the
      module's own libcrypto is the one initialized. The memory is the process's until it ends.
      When the host initialized OpenSSL first, its handler stays: that is the host's choice. */
#define _AIMUX_OPENSSL_INIT_NO_ATEXIT 0x00080000UL /* OpenSSL 1.1.1 and 3: crypto.h */

static int _aimux_own_runtime = 0; /* the interpreter is ours (not a Python host's) */

int _aimux_owns_runtime(void) { return _aimux_own_runtime; }

int _aimux_openssl_keep(const char *module_path)
{
    typedef int (*init_fn)(uint64_t, const void *);
    void *mod, *sym;
    if (module_path == NULL) return 0;
    mod = dlopen(module_path, RTLD_NOW | RTLD_LOCAL); /* kept: Python imports it next */
    if (mod == NULL) return 0;
    sym = dlsym(mod, "OPENSSL_init_crypto"); /* in the module's own libcrypto */
    if (sym == NULL) return 0;
    return ((init_fn)sym)(_AIMUX_OPENSSL_INIT_NO_ATEXIT, NULL);
}

/* Imports `_signal` now (GIL not held), so no later lazy import can install a handler: its first
   import is what installs Python's SIGINT handler (`signal` only wraps it, and would import
   `enum` on the cold start's path). */
static void _aimux_import_signal(void)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *mod = PyImport_ImportModule("_signal");
    if (mod == NULL) PyErr_Clear();
    Py_XDECREF(mod);
    PyGILState_Release(gil);
}

/* Loads and starts the interpreter and the core (the body of _aimux_start). */
static void _aimux_start_runtime(void)
{
    Dl_info info;
    const char *home;
    PyGILState_STATE gil;
    PyObject *sys_path, *mod;

    if (!_aimux_check_python_version()) return;

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

    _aimux_path_list = _aimux_find_payload();
    if (_aimux_path_list == NULL) {
        if (_aimux_init_msg[0] == 0) _aimux_init_fail("out of memory", NULL);
        return;
    }

    /* 2. Start the interpreter ourselves (unless the host already runs one): isolated from the
          host's environment, with the home of the loaded libpython, and with a status instead of
          Py_FatalError when it cannot start. */
    if (!Py_IsInitialized()) {
        PyStatus st;
        PyPreConfig pre;
        PyConfig cfg;
        const char *pm = getenv("PYTHONMALLOC");
        PyPreConfig_InitIsolatedConfig(&pre);
        pre.utf8_mode = 1;
        if (pm != NULL) { /* honoured so the library can run under valgrind */
            if (strcmp(pm, "malloc") == 0)
                pre.allocator = PYMEM_ALLOCATOR_MALLOC;
            else if (strcmp(pm, "malloc_debug") == 0)
                pre.allocator = PYMEM_ALLOCATOR_MALLOC_DEBUG;
            else if (strcmp(pm, "debug") == 0)
                pre.allocator = PYMEM_ALLOCATOR_DEBUG;
        }
        st = Py_PreInitialize(&pre);
        if (PyStatus_Exception(st)) {
            _aimux_init_fail("Py_PreInitialize: ", st.err_msg ? st.err_msg : "failed");
            return;
        }
        PyConfig_InitIsolatedConfig(&cfg);
        cfg.install_signal_handlers = 0;
        cfg.site_import = 0; /* the interpreter's own site-packages and their .pth files are the
                                installation's, not ours: the payload's paths come in step 3 */
        home = _aimux_find_home();
        st = PyConfig_SetBytesString(&cfg, &cfg.home, home);
        if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&cfg);
        PyConfig_Clear(&cfg);
        if (PyStatus_Exception(st)) {
            _aimux_init_fail("Py_InitializeFromConfig: ", st.err_msg ? st.err_msg : "failed");
            _aimux_init_append(" (Python home ", home, ")");
            return;
        }
        _aimux_own_runtime = 1;
        PyEval_SaveThread();      /* release the GIL: every call takes it with PyGILState_Ensure */
        _aimux_import_signal();   /* at once: Python's SIGINT handler lives microseconds, */
        _aimux_restore_signals(); /* not for the whole start-up */
    }

    /* 3. Put the recorded package paths first on sys.path (the init code then processes their
          .pth files) and check that cffi's backend imports, with the reason if it does not. */
    gil = PyGILState_Ensure();
    sys_path = PySys_GetObject("path");
    if (sys_path != NULL && PyList_Check(sys_path)) {
        char *copy = strdup(_aimux_path_list), *save = NULL, *tok;
        Py_ssize_t at = 0;
        for (tok = copy ? strtok_r(copy, ":", &save) : NULL; tok;
             tok = strtok_r(NULL, ":", &save)) {
            PyObject *p = PyUnicode_DecodeFSDefault(tok);
            if (p == NULL) {
                PyErr_Clear();
                continue;
            }
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
        /* the payload's paths, where aimux_ops and its dependencies were looked for (the
           interpreter's own site-packages are not: no site import) */
        _aimux_init_append(" (aimux_ops and its dependencies are looked for in ", _aimux_path_list,
                           ")");
        PyGILState_Release(gil);
        return;
    }
    Py_DECREF(mod);
    PyGILState_Release(gil);

    /* 4. cffi's own start-up: creates the module and runs the init code (which records, rather
          than raises, a failure to import the core). */
    if (cffi_start_python() != 0) {
        _aimux_init_fail("the cffi embedding init failed (cffi_start_python() returned -1; "
                         "the traceback was printed to stderr)",
                         NULL);
        return;
    }
    _aimux_import_signal(); /* in a shared interpreter too: no later import changes anything */
    _aimux_ready = 1;
}

/* Run once (pthread_once): the guest checks around the runtime's start-up. */
/* Once the runtime runs, this library stays mapped until the process ends (RTLD_NODELETE):
   the interpreter's threads (the stream loop, the reaper) call into its code, e.g. the C queues,
   and a host's loader may dlclose it at exit (Node does, while those threads still run). */
static void _aimux_pin(void)
{
    Dl_info info;
    if (dladdr((void *)&aimux_abi_version, &info) != 0 && info.dli_fname != NULL)
        (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static void _aimux_start(void)
{
    _aimux_save_signals();
    _aimux_start_runtime();
    _aimux_restore_signals();
    if (_aimux_ready) _aimux_pin();
}

/* Starts the runtime once, under the start-up lock (not pthread_once: a fork holds that lock,
   so a child sees a runtime either not started or started, never half-way). */
static pthread_once_t _aimux_atfork_once = PTHREAD_ONCE_INIT;
static aimux_error_t *_aimux_runtime(void)
{
    if (!__atomic_load_n(&_aimux_started, __ATOMIC_ACQUIRE)) {
        /* the fork handlers before the start-up lock is first taken: a fork between the two
           copied that lock held by a thread the child does not have (its first call waited
           forever, test_guest fork-anytime); from here on a fork waits for the start-up */
        pthread_once(&_aimux_atfork_once, _aimux_install_atfork);
        pthread_mutex_lock(&_aimux_start_mu);
        if (!_aimux_started) {
            _aimux_starting = 1;
            _aimux_start();
            _aimux_starting = 0;
            __atomic_store_n(&_aimux_started, 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&_aimux_start_mu);
    }
    if (_aimux_ready) return NULL;
    return _aimux_err_early(_AIMUX_EARLY_RUNTIME_INIT, _aimux_init_msg, NULL);
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
        PyErr_SetInterrupt(); /* no GIL needed; a no-op when Python does not handle SIGINT */
    }
    if (err != NULL) return err;
    if (rc != 0)
        return _aimux_err_early(_AIMUX_EARLY_INTERNAL,
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
    if ((err = _aimux_after(rc, err)) != NULL) {
        free(res);
        return err;
    }
    if (res == NULL)
        return _aimux_err_early(_AIMUX_EARLY_INTERNAL,
                                "the core returned neither a result nor an error", NULL);
    *out_result_json = res;
    return NULL;
}

/* aimux_stream and aimux_stream_start: open a stream with the core's `open_fn` */
typedef int (*_aimux_open_fn)(const char *, const char *, uint64_t *, aimux_error_t **);

static aimux_error_t *_aimux_open_stream(_aimux_open_fn open_fn, const char *op,
                                         const char *params_json, uint64_t *out_stream)
{
    aimux_error_t *err;
    uint64_t h = 0;
    int rc;
    if (out_stream == NULL) return _aimux_null_arg("out_stream");
    *out_stream = 0;
    if ((err = _aimux_runtime()) != NULL) return err;
    rc = open_fn(op, params_json, &h, &err);
    if ((err = _aimux_after(rc, err)) != NULL) return err;
    if (h == 0)
        return _aimux_err_early(_AIMUX_EARLY_INTERNAL,
                                "the core returned neither a handle nor an error", NULL);
    *out_stream = h;
    return NULL;
}

CFFI_DLLEXPORT aimux_error_t *aimux_stream(const char *op, const char *params_json,
                                           uint64_t *out_stream)
{
    return _aimux_open_stream(_aimux_py_stream, op, params_json, out_stream);
}

/* A read from the stream's C queue (aimux_queue.c), without the interpreter lock: _AIMUX_T_PY
   when the stream has no C queue (or the Python side must answer), else the queue's answer. */
static int _aimux_fast_take(uint64_t stream, size_t max, int blocking, char **out, int32_t *ended)
{
    _aimux_q *q = _aimux_q_get(stream);
    int st, wake = 0;
    if (q == NULL) return _AIMUX_T_PY;
    st = _aimux_cq_take(q, max, blocking, out, ended, &wake);
    if (wake & _AIMUX_W_RELIST) (void)_aimux_rl_mark_q(q); /* (not once freed) */
    _aimux_cq_unref(q);
    /* rare: a full queue drained (the producer waits in Python) */
    if (wake & _AIMUX_W_ROOM) (void)_aimux_py_wake(stream, _AIMUX_W_ROOM);
    return st;
}

CFFI_DLLEXPORT aimux_error_t *aimux_stream_next(uint64_t stream, char **out_event_json)
{
    aimux_error_t *err;
    char *ev = NULL;
    int32_t ended = 0;
    int rc;
    if (out_event_json == NULL) return _aimux_null_arg("out_event_json");
    *out_event_json = NULL;
    if ((err = _aimux_runtime()) != NULL) return err;
    switch (_aimux_fast_take(stream, 0, 1, &ev, &ended)) {
    case _AIMUX_T_DATA: *out_event_json = ev; return NULL;
    case _AIMUX_T_END: return NULL;
    case _AIMUX_T_OOM: return &_aimux_oom;
    default: break;
    }
    rc = _aimux_py_stream_next(stream, &ev, &err);
    if ((err = _aimux_after(rc, err)) != NULL) {
        free(ev);
        return err;
    }
    *out_event_json = ev; /* NULL: ended */
    return NULL;
}

/* aimux_stream_cancel (release = 0) and aimux_stream_free (release = 1): no error to report */
static void _aimux_stream_ctl(uint64_t stream, int release)
{
    aimux_error_t *err = _aimux_runtime();
    if (err != NULL) {
        aimux_error_free(err);
        return;
    }
    (void)_aimux_py_stream_ctl(stream, release);
}

CFFI_DLLEXPORT aimux_error_t *aimux_stream_tool_result(uint64_t stream, const char *tool_call_id,
                                                       const char *answer_json)
{
    aimux_error_t *err;
    _aimux_q *q;
    int rc;
    if (tool_call_id == NULL) return _aimux_null_arg("tool_call_id");
    if (answer_json == NULL) return _aimux_null_arg("answer_json");
    if ((err = _aimux_runtime()) != NULL) return err;
    if ((q = _aimux_q_get(stream)) != NULL) { /* a plain output for a call awaited: taken here */
        int taken = _aimux_cq_answer_fast(q, tool_call_id, answer_json);
        _aimux_cq_unref(q);
        if (taken) return NULL;
    }
    err = NULL;
    rc = _aimux_py_stream_tool_result(stream, tool_call_id, answer_json, &err);
    return _aimux_after(rc, err);
}

CFFI_DLLEXPORT void aimux_stream_cancel(uint64_t stream) { _aimux_stream_ctl(stream, 0); }

CFFI_DLLEXPORT void aimux_stream_free(uint64_t stream) { _aimux_stream_ctl(stream, 1); }

/* --- event-driven streams ------------------------------------------------------------------ */
CFFI_DLLEXPORT aimux_error_t *aimux_events_fd(int *out_fd)
{
    aimux_error_t *err;
    int fd = -1, rc;
    if (out_fd == NULL) return _aimux_null_arg("out_fd");
    *out_fd = -1;
    if ((err = _aimux_runtime()) != NULL) return err;
    rc = _aimux_py_events_fd(&fd, &err);
    if ((err = _aimux_after(rc, err)) != NULL) return err;
    if (fd < 0)
        return _aimux_err_early(_AIMUX_EARLY_INTERNAL, "the core returned no events fd", NULL);
    *out_fd = fd;
    return NULL;
}

CFFI_DLLEXPORT aimux_error_t *aimux_stream_start(const char *op, const char *params_json,
                                                 uint64_t *out_stream)
{
    return _aimux_open_stream(_aimux_py_stream_start, op, params_json, out_stream);
}

CFFI_DLLEXPORT aimux_error_t *aimux_ready(uint64_t *out_streams, size_t capacity, size_t *out_count)
{
    aimux_error_t *err;
    size_t n = 0;
    int rc;
    if (out_count == NULL) return _aimux_null_arg("out_count");
    *out_count = 0;
    if (out_streams == NULL && capacity > 0) return _aimux_null_arg("out_streams");
    if (capacity == 0) return NULL;
    if ((err = _aimux_runtime()) != NULL) return err;
    if (_aimux_rl_native) { /* the ready list is kept in C (aimux_queue.c) */
        *out_count = _aimux_rl_take(out_streams, capacity);
        return NULL;
    }
    rc = _aimux_py_ready(out_streams, capacity, &n);
    if ((err = _aimux_after(rc, NULL)) != NULL) return err;
    *out_count = n > capacity ? capacity : n;
    return NULL;
}

/* aimux_stream_poll (never blocks) and aimux_stream_next_batch (waits): the stream's C queue,
   else the core's `batch_fn` */
typedef int (*_aimux_batch_fn)(uint64_t, size_t, char **, int32_t *, aimux_error_t **);

static aimux_error_t *_aimux_stream_batch(_aimux_batch_fn batch_fn, int blocking, uint64_t stream,
                                          size_t max_events, char **out_events_json,
                                          int32_t *out_ended)
{
    aimux_error_t *err;
    char *batch = NULL;
    int32_t ended = AIMUX_STREAM_OPEN;
    int rc;
    if (out_events_json != NULL) *out_events_json = NULL; /* both set on entry (aimux.h) */
    if (out_ended != NULL) *out_ended = AIMUX_STREAM_OPEN;
    if (out_events_json == NULL) return _aimux_null_arg("out_events_json");
    if (out_ended == NULL) return _aimux_null_arg("out_ended");
    if ((err = _aimux_runtime()) != NULL) return err;
    switch (_aimux_fast_take(stream, max_events ? max_events : 1, blocking, &batch, &ended)) {
    case _AIMUX_T_DATA:
    case _AIMUX_T_END:
    case _AIMUX_T_EMPTY:
        *out_events_json = batch;
        *out_ended = ended ? AIMUX_STREAM_ENDED : AIMUX_STREAM_OPEN;
        return NULL;
    case _AIMUX_T_OOM: return &_aimux_oom;
    default: break;
    }
    rc = batch_fn(stream, max_events, &batch, &ended, &err);
    if ((err = _aimux_after(rc, err)) != NULL) {
        free(batch);
        return err; /* the stream is over either way (see aimux.h) */
    }
    *out_events_json = batch;
    *out_ended = ended ? AIMUX_STREAM_ENDED : AIMUX_STREAM_OPEN;
    return NULL;
}

CFFI_DLLEXPORT aimux_error_t *aimux_stream_poll(uint64_t stream, size_t max_events,
                                                char **out_events_json, int32_t *out_ended)
{
    return _aimux_stream_batch(_aimux_py_stream_poll, 0, stream, max_events, out_events_json,
                               out_ended);
}

CFFI_DLLEXPORT aimux_error_t *aimux_stream_next_batch(uint64_t stream, size_t max_events,
                                                      char **out_events_json, int32_t *out_ended)
{
    return _aimux_stream_batch(_aimux_py_stream_next_batch, 1, stream, max_events, out_events_json,
                               out_ended);
}

/* One entry of aimux_poll_ready: [stream, ended, events|null, null] from the stream's C queue,
   else from the core (which also answers the open failure, and skips a freed stream). */
static void _aimux_poll_entry(_aimux_buf *b, uint64_t h, size_t max_events)
{
    char *batch = NULL, *entry = NULL, num[24];
    int32_t ended = 0;
    int i = 23;
    switch (_aimux_fast_take(h, max_events ? max_events : 1, 0, &batch, &ended)) {
    case _AIMUX_T_DATA:
    case _AIMUX_T_END:
    case _AIMUX_T_EMPTY:
        num[i] = 0;
        do {
            num[--i] = (char)('0' + h % 10);
            h /= 10;
        } while (h);
        _aimux_buf_put(b, b->len > 1 ? ",[" : "[", b->len > 1 ? 2 : 1);
        _aimux_buf_str(b, num + i);
        _aimux_buf_str(b, ended ? ",1," : ",0,");
        _aimux_buf_str(b, batch ? batch : "null");
        _aimux_buf_str(b, ",null]");
        free(batch);
        return;
    case _AIMUX_T_OOM: b->oom = 1; return;
    default: break;
    }
    if (_aimux_py_poll_one(h, max_events, &entry) != 0) b->oom = 1;
    if (entry != NULL) {
        if (b->len > 1) _aimux_buf_put(b, ",", 1);
        _aimux_buf_str(b, entry);
        free(entry);
    }
}

CFFI_DLLEXPORT aimux_error_t *aimux_poll_ready(size_t max_events, char **out_json)
{
    aimux_error_t *err;
    _aimux_buf b = {0};
    uint64_t ready[256];
    size_t n, i;
    int rc;
    if (out_json == NULL) return _aimux_null_arg("out_json");
    *out_json = NULL;
    if ((err = _aimux_runtime()) != NULL) return err;
    _aimux_buf_put(&b, "[", 1);
    do { /* every listed handle leaves the list, oldest first */
        n = 0;
        if (_aimux_rl_native) {
            n = _aimux_rl_take(ready, sizeof ready / sizeof ready[0]);
        } else {
            rc = _aimux_py_ready(ready, sizeof ready / sizeof ready[0], &n);
            if ((err = _aimux_after(rc, NULL)) != NULL) {
                free(b.p);
                return err;
            }
        }
        for (i = 0; i < n; i++) _aimux_poll_entry(&b, ready[i], max_events);
    } while (n == sizeof ready / sizeof ready[0]);
    if (b.oom) {
        free(b.p);
        return &_aimux_oom;
    }
    if (b.len <= 1) { /* no stream listed (or none still there) */
        free(b.p);
        return NULL;
    }
    _aimux_buf_put(&b, "]", 1);
    if (b.oom) {
        free(b.p);
        return &_aimux_oom;
    }
    *out_json = b.p;
    return NULL;
}

CFFI_DLLEXPORT int32_t aimux_error_code(const aimux_error_t *err) { return err ? err->code : 0; }

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
    if ((err = _aimux_after(rc, err)) != NULL) {
        aimux_error_free(dec);
        return err;
    }
    if (dec == NULL)
        return _aimux_err_early(_AIMUX_EARLY_INTERNAL, "the envelope decoded to no error", NULL);
    *out_error = dec;
    return NULL;
}

/* --- kind / name / root fields: what the node was built with, never re-read from JSON ----- */
CFFI_DLLEXPORT char *aimux_error_kind(const aimux_error_t *err)
{
    return err ? _aimux_strndup(err->kind, err->kind_len) : NULL;
}

CFFI_DLLEXPORT char *aimux_error_name(const aimux_error_t *err)
{
    return err && err->name ? _aimux_strndup(err->name, err->name_len) : NULL;
}

CFFI_DLLEXPORT int aimux_error_retryable(const aimux_error_t *err)
{
    return err ? err->retryable : 0;
}

CFFI_DLLEXPORT int64_t aimux_error_retry_after_ms(const aimux_error_t *err)
{
    return err ? err->retry_after_ms : -1;
}

CFFI_DLLEXPORT int32_t aimux_error_status_code(const aimux_error_t *err)
{
    return err ? err->status_code : 0;
}
