/* What Python sees of the shim (lib.*) and the callbacks the shim calls (extern "Python").
 * Parsed by cffi's cdef parser (native/build_libaimux.py), not by a C compiler. */
typedef struct aimux_error aimux_error_t;

char *_aimux_strndup(const char *s, size_t n);
aimux_error_t *_aimux_err_unpack(const char *buf, size_t len);
aimux_error_t *_aimux_err_early(int which, const char *message, const char *argument);
#define _AIMUX_EARLY_RUNTIME_INIT ...
#define _AIMUX_EARLY_INTERNAL ...
const char *_aimux_paths(void);
void _aimux_note_interrupt(void);

extern "Python" int _aimux_py_call(const char *, const char *, char **, aimux_error_t **);
extern "Python" int _aimux_py_stream(const char *, const char *, uint64_t *, aimux_error_t **);
extern "Python" int _aimux_py_stream_next(uint64_t, char **, aimux_error_t **);
extern "Python" int _aimux_py_stream_ctl(uint64_t, int);
extern "Python" int _aimux_py_stream_start(const char *, const char *, uint64_t *, aimux_error_t **);
extern "Python" int _aimux_py_stream_poll(uint64_t, size_t, char **, int32_t *, aimux_error_t **);
extern "Python" int _aimux_py_stream_next_batch(uint64_t, size_t, char **, int32_t *, aimux_error_t **);
extern "Python" int _aimux_py_poll_ready(size_t, char **, aimux_error_t **);
extern "Python" int _aimux_py_ready(uint64_t *, size_t, size_t *);
extern "Python" int _aimux_py_events_fd(int *, aimux_error_t **);
extern "Python" int _aimux_py_decode(const char *, aimux_error_t **, aimux_error_t **);
