/* The shim as one translation unit, for the strict syntax check of `make lint`: the prelude cffi
 * would provide, the shim, then the `extern "Python"` callbacks cffi would define. */
#include "shim_prelude.h"

#include "aimux_shim.c"

static int _aimux_py_call(const char *op, const char *params, char **out, aimux_error_t **err)
{
    (void)op, (void)params, (void)out, (void)err;
    return -1;
}
static int _aimux_py_stream(const char *op, const char *params, uint64_t *out, aimux_error_t **err)
{
    (void)op, (void)params, (void)out, (void)err;
    return -1;
}
static int _aimux_py_stream_next(uint64_t h, char **out, aimux_error_t **err)
{
    (void)h, (void)out, (void)err;
    return -1;
}
static int _aimux_py_stream_ctl(uint64_t h, int free_it)
{
    (void)h, (void)free_it;
    return -1;
}
static int _aimux_py_stream_tool_result(uint64_t h, const char *id, const char *answer,
                                        aimux_error_t **err)
{
    (void)h, (void)id, (void)answer, (void)err;
    return -1;
}
static int _aimux_py_decode(const char *text, aimux_error_t **out, aimux_error_t **err)
{
    (void)text, (void)out, (void)err;
    return -1;
}
static int _aimux_py_stream_start(const char *op, const char *params, uint64_t *out,
                                  aimux_error_t **err)
{
    (void)op, (void)params, (void)out, (void)err;
    return -1;
}
static int _aimux_py_stream_poll(uint64_t h, size_t max, char **out, int32_t *ended,
                                 aimux_error_t **err)
{
    (void)h, (void)max, (void)out, (void)ended, (void)err;
    return -1;
}
static int _aimux_py_stream_next_batch(uint64_t h, size_t max, char **out, int32_t *ended,
                                       aimux_error_t **err)
{
    (void)h, (void)max, (void)out, (void)ended, (void)err;
    return -1;
}
static int _aimux_py_ready(uint64_t *out, size_t capacity, size_t *count)
{
    (void)out, (void)capacity, (void)count;
    return -1;
}
static int _aimux_py_poll_one(uint64_t h, size_t max, char **out)
{
    (void)h, (void)max, (void)out;
    return -1;
}
static int _aimux_py_wake(uint64_t h, int what)
{
    (void)h, (void)what;
    return -1;
}
static int _aimux_py_events_fd(int *out, aimux_error_t **err)
{
    (void)out, (void)err;
    return -1;
}
