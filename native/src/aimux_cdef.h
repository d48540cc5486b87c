/* What Python sees of the shim (lib.*) and the callbacks the shim calls (extern "Python").
 * Parsed by cffi's cdef parser (native/build_libaimux.py), not by a C compiler. */
typedef struct aimux_error aimux_error_t;

char *_aimux_strndup(const char *s, size_t n);
aimux_error_t *_aimux_err_unpack(const char *buf, size_t len); /* aimux_ops/wire/packed.py */
#define _AIMUX_PACKED_ROOT_SIZE ...
aimux_error_t *_aimux_err_early(int which, const char *message, const char *argument);
#define _AIMUX_EARLY_RUNTIME_INIT ...
#define _AIMUX_EARLY_INTERNAL ...
const char *_aimux_paths(void);
void _aimux_note_interrupt(void);

/* the C queue of a stream opened through the C ABI (aimux_queue.c; its values: aimux_queue.h,
   read before this file) */
void *_aimux_cq_new(uint64_t handle, int notify, size_t low);
void _aimux_cq_unref(void *q);
void _aimux_cq_unregister(uint64_t handle);
void _aimux_cq_after_fork(void);
size_t _aimux_cq_push(void *q, const char *buf, size_t len, size_t n);
size_t _aimux_cq_count(void *q);
void _aimux_cq_flag(void *q, unsigned flag);
void _aimux_cq_unflag(void *q, unsigned flag);
unsigned _aimux_cq_flags(void *q);
int _aimux_cq_want_room(void *q, size_t threshold);
double _aimux_cq_last_read(void *q);
int _aimux_cq_readers(void *q);
int _aimux_cq_reap(void *q, double deadline, const char *event, size_t len);
int _aimux_cq_take(void *q, size_t max, int blocking, char **out, int32_t *ended, int *wake);
void _aimux_cq_free_string(char *s);
/* a stream's host tool answers (aimux_answers.c) */
int _aimux_cq_expect(void *q, const char *id, size_t len);
int _aimux_cq_claim(void *q, const char *id, size_t len);
void _aimux_cq_answers_wake(void *q);
int _aimux_cq_answer_take(void *q, double timeout_s, char **out_id, char **out_json);
void _aimux_rl_enable(void);
void _aimux_rl_set_fd(int wfd);
int _aimux_rl_mark(uint64_t handle);
int _aimux_rl_mark_q(void *q);
void _aimux_rl_forget(uint64_t handle);
size_t _aimux_rl_count(void);
size_t _aimux_rl_take(uint64_t *out, size_t cap);

/* OpenSSL without its exit handler (aimux_shim.c "3. Exit"; aimux_ops.guest.keep_openssl_at_exit) */
int _aimux_openssl_keep(const char *module_path);
int _aimux_owns_runtime(void);
void _aimux_core_lock(int lock); /* the start-up lock, around the core's first load */

extern "Python" int _aimux_py_call(const char *, const char *, char **, aimux_error_t **);
extern "Python" int _aimux_py_stream(const char *, const char *, uint64_t *, aimux_error_t **);
extern "Python" int _aimux_py_stream_next(uint64_t, char **, aimux_error_t **);
extern "Python" int _aimux_py_stream_ctl(uint64_t, int);
extern "Python" int _aimux_py_stream_start(const char *, const char *, uint64_t *, aimux_error_t **);
extern "Python" int _aimux_py_stream_poll(uint64_t, size_t, char **, int32_t *, aimux_error_t **);
extern "Python" int _aimux_py_stream_next_batch(uint64_t, size_t, char **, int32_t *, aimux_error_t **);
extern "Python" int _aimux_py_poll_one(uint64_t, size_t, char **);
extern "Python" int _aimux_py_wake(uint64_t, int);
extern "Python" int _aimux_py_ready(uint64_t *, size_t, size_t *);
extern "Python" int _aimux_py_events_fd(int *, aimux_error_t **);
extern "Python" int _aimux_py_stream_tool_result(uint64_t, const char *, const char *, aimux_error_t **);
extern "Python" int _aimux_py_decode(const char *, aimux_error_t **, aimux_error_t **);
