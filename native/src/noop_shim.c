/* The bench floor: the same cffi embedding, one C->Python->string call and nothing else.
   The interpreter starts as libaimux starts it (aimux_shim.c "starting the embedded runtime"):
   isolated from the host's environment, with the same home, the build's package paths first on
   sys.path (for cffi's backend; no .pth file processed), so floor and library run in the same
   environment (`env -i`, no PYTHONPATH) and the floor is the bare runtime's cost. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
static int _noop_py(const char *, char **);
char *_noop_strndup(const char *s, size_t n)
{
    char *r = (char *)malloc(n + 1);
    if (r == NULL) return NULL;
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

static pthread_once_t _noop_once = PTHREAD_ONCE_INIT;
static int _noop_ready = 0;

static void _noop_start(void)
{
    PyPreConfig pre;
    PyConfig cfg;
    PyStatus st;
    PyObject *path;
    char *copy, *save = NULL, *tok;
    Py_ssize_t at = 0;
    if (Py_IsInitialized()) { /* a host's interpreter: cffi's start only */
        _noop_ready = 1;
        return;
    }
    PyPreConfig_InitIsolatedConfig(&pre);
    pre.utf8_mode = 1;
    if (PyStatus_Exception(Py_PreInitialize(&pre))) return;
    PyConfig_InitIsolatedConfig(&cfg);
    cfg.install_signal_handlers = 0;
    cfg.site_import = 0;
    st = PyConfig_SetBytesString(&cfg, &cfg.home, AIMUX_PYTHON_HOME);
    if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&cfg);
    PyConfig_Clear(&cfg);
    if (PyStatus_Exception(st)) return;
    path = PySys_GetObject("path");
    copy = strdup(AIMUX_BUILD_PATHS);
    for (tok = copy ? strtok_r(copy, ":", &save) : NULL; tok && path;
         tok = strtok_r(NULL, ":", &save)) {
        PyObject *p = PyUnicode_DecodeFSDefault(tok);
        if (p == NULL || PyList_Insert(path, at++, p) < 0) PyErr_Clear();
        Py_XDECREF(p);
    }
    free(copy);
    PyEval_SaveThread();
    _noop_ready = 1;
}

CFFI_DLLEXPORT char *aimux_noop_call(const char *op)
{
    char *out = NULL;
    pthread_once(&_noop_once, _noop_start);
    if (!_noop_ready || cffi_start_python() != 0) return NULL;
    if (_noop_py(op, &out) != 0) return NULL;
    return out;
}
