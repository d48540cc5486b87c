/* The bench floor: the same cffi embedding, one C->Python->string call and nothing else. */
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
/* The bench host starts Python through libaimux first; this only needs cffi's own start. */
CFFI_DLLEXPORT char *aimux_noop_call(const char *op)
{
    char *out = NULL;
    if (cffi_start_python() != 0) return NULL;
    if (_noop_py(op, &out) != 0) return NULL;
    return out;
}
