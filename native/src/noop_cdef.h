/* The bench floor's cdef (see noop_shim.c). */
char *_noop_strndup(const char *s, size_t n);
extern "Python" int _noop_py(const char *, char **);
