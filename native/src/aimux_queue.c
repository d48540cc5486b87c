/* libaimux: the C queue of a stream opened through the C ABI.
 *
 * The producer (the thread that reads the stream's op, aimux_ops/streams/stream.py QueuedStream)
 * serializes each batch of events once, as one JSON array, and pushes the bytes here. Consumers
 * (aimux_stream_next, aimux_stream_next_batch, aimux_stream_poll, aimux_poll_ready, and the
 * Python side's own reads) take from the queue under its mutex without the interpreter lock.
 * They go into Python only when the queue is empty and the stream needs the Python side: the
 * failed open of an event-driven stream, or events that could not be serialized on the fast
 * path (they then stay in the Python queue). The end, a cancel (reported once the op's cleanup
 * ran), the reaper's terminal event and the high-water mark are answered here with the same
 * rules as the Python queue; a producer waiting for room is woken through Python (rare: only
 * when a consumer brings a full queue down to the low-water mark).
 *
 * Handles are found in a registry (open addressing keyed by handle); each queue is reference
 * counted (the registry, the Python stream, and every consumer inside a call), so a free racing a
 * blocked read never frees memory in use. After fork() the child starts with an empty registry
 * (_aimux_cq_after_fork, a Python on_fork_child hook): the parent's handles are 203 there.
 *
 * Included by aimux_shim.c (one translation unit; it uses only aimux_buf.h of the shim, and the
 * shim uses its functions: no name goes the other way).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include "aimux_buf.h"
#include "aimux_queue.h"

typedef struct _aimux_qnode {
    struct _aimux_qnode *next;
    char *buf;  /* "[e1,e2,...]", NUL-terminated */
    size_t len; /* of buf, without the NUL */
    size_t pos; /* where the next event starts (1: untouched) */
    size_t n;   /* events left */
} _aimux_qnode;

struct _aimux_answers; /* the stream's host tool answers (aimux_answers.c) */
static void _aimux_answers_free(struct _aimux_answers *a);

typedef struct _aimux_q {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int refs;
    uint64_t handle;
    _aimux_qnode *head, *tail;
    size_t count; /* events queued */
    size_t low;   /* the low-water mark */
    unsigned flags;
    int notify;   /* event-driven (aimux_stream_start): relisted when a batch leaves events */
    int readers;  /* consumers blocked in a take (the reaper never closes a stream being read) */
    char *reaped; /* the reaper's terminal event, answered once */
    size_t reaped_len;
    double last_read;               /* CLOCK_MONOTONIC seconds (Python's time.monotonic) */
    struct _aimux_answers *answers; /* made by the tool loop's first use (NULL: none) */
} _aimux_q;

static double _aimux_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- the registry: handle -> queue ----------------------------------------------------------- */
static struct {
    pthread_mutex_t mu;
    _aimux_q **slots;
    size_t cap, used; /* cap: a power of 2 (or 0) */
} _aimux_qr = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

static size_t _aimux_qr_hash(uint64_t h, size_t cap)
{
    return (size_t)((h * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static size_t _aimux_qr_find(uint64_t h) /* lock held, cap > 0: its slot, or an empty one */
{
    size_t i = _aimux_qr_hash(h, _aimux_qr.cap);
    while (_aimux_qr.slots[i] != NULL && _aimux_qr.slots[i]->handle != h)
        i = (i + 1) & (_aimux_qr.cap - 1);
    return i;
}

static int _aimux_qr_grow(void) /* lock held */
{
    size_t cap = _aimux_qr.cap ? _aimux_qr.cap * 2 : 64, i, old = _aimux_qr.cap;
    _aimux_q **was = _aimux_qr.slots;
    _aimux_q **slots = (_aimux_q **)calloc(cap, sizeof *slots);
    if (slots == NULL) return 0;
    _aimux_qr.slots = slots;
    _aimux_qr.cap = cap;
    for (i = 0; i < old; i++)
        if (was[i] != NULL) slots[_aimux_qr_find(was[i]->handle)] = was[i];
    free(was);
    return 1;
}

static void _aimux_q_free(_aimux_q *q)
{
    _aimux_qnode *n = q->head;
    while (n != NULL) {
        _aimux_qnode *next = n->next;
        free(n->buf);
        free(n);
        n = next;
    }
    free(q->reaped);
    _aimux_answers_free(q->answers);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    free(q);
}

/* Drops one reference (the Python stream's is dropped by its cffi gc). */
void _aimux_cq_unref(void *p)
{
    _aimux_q *q = (_aimux_q *)p;
    if (q != NULL && atomic_fetch_sub(&q->refs, 1) == 1) _aimux_q_free(q);
}

/* The queue of `handle` with a reference for the caller, or NULL (not a C-queued stream, freed,
   unknown, or a parent's stream in a forked child). */
static _aimux_q *_aimux_q_get(uint64_t handle)
{
    _aimux_q *q = NULL;
    pthread_mutex_lock(&_aimux_qr.mu);
    if (_aimux_qr.cap > 0) {
        q = _aimux_qr.slots[_aimux_qr_find(handle)];
        if (q != NULL) atomic_fetch_add(&q->refs, 1);
    }
    pthread_mutex_unlock(&_aimux_qr.mu);
    return q;
}

/* A new queue for `handle`, registered; the reference returned is the Python stream's. NULL when
   out of memory (the stream then runs on the Python queue alone). */
void *_aimux_cq_new(uint64_t handle, int notify, size_t low)
{
    _aimux_q *q = (_aimux_q *)calloc(1, sizeof *q);
    if (q == NULL) return NULL;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    atomic_init(&q->refs, 2); /* the registry's and the caller's */
    q->handle = handle;
    q->notify = notify;
    q->low = low;
    q->last_read = _aimux_mono();
    pthread_mutex_lock(&_aimux_qr.mu);
    if ((_aimux_qr.used + 1) * 2 > _aimux_qr.cap && !_aimux_qr_grow()) {
        pthread_mutex_unlock(&_aimux_qr.mu);
        _aimux_q_free(q);
        return NULL;
    }
    _aimux_qr.slots[_aimux_qr_find(handle)] = q;
    _aimux_qr.used++;
    pthread_mutex_unlock(&_aimux_qr.mu);
    return q;
}

void _aimux_rl_forget(uint64_t handle);

/* aimux_stream_free: the handle is stale from now on (the stream was cancelled first); it leaves
   the ready list too. */
void _aimux_cq_unregister(uint64_t handle)
{
    _aimux_q *q = NULL;
    size_t i, j, mask;
    pthread_mutex_lock(&_aimux_qr.mu);
    if (_aimux_qr.cap > 0) {
        mask = _aimux_qr.cap - 1;
        i = _aimux_qr_find(handle);
        q = _aimux_qr.slots[i];
        if (q != NULL) { /* remove, shifting back the run after it (linear probing) */
            _aimux_qr.slots[i] = NULL;
            _aimux_qr.used--;
            for (j = (i + 1) & mask; _aimux_qr.slots[j] != NULL; j = (j + 1) & mask) {
                size_t k = _aimux_qr_hash(_aimux_qr.slots[j]->handle, _aimux_qr.cap);
                int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
                if (!stays) {
                    _aimux_qr.slots[i] = _aimux_qr.slots[j];
                    _aimux_qr.slots[j] = NULL;
                    i = j;
                }
            }
        }
    }
    pthread_mutex_unlock(&_aimux_qr.mu);
    if (q != NULL) { /* no mark lists it from now on (_aimux_rl_mark_q checks under q->mu) */
        pthread_mutex_lock(&q->mu);
        q->flags |= _AIMUX_Q_FREED;
        pthread_mutex_unlock(&q->mu);
    }
    _aimux_rl_forget(handle); /* and it leaves the ready list (a host may never call ready) */
    _aimux_cq_unref(q);
}

/* --- the ready list of event-driven streams (aimux_events_fd, aimux_ready) -------------------
   Kept here once the library runs the core (aio.Notifier delegates to it): aimux_ready and
   aimux_poll_ready take handles without the interpreter lock. One byte is written to the pipe
   when the list goes from empty to non-empty; a handle is listed at most once. */
static struct {
    pthread_mutex_t mu;
    uint64_t *ring; /* the listed handles, oldest first (cap a power of 2) */
    size_t cap, head, len;
    uint64_t *set; /* the same handles, open addressing (0: empty), 2 * cap slots */
    int signalled; /* a byte was written since the list was last emptied */
} _aimux_rl = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, NULL, 0};

/* The pipe's write end (-1: no notifier yet). Atomic, not under the lock: a forked child's
   after-fork hooks set it before the one that gives the list a fresh lock runs. */
static atomic_int _aimux_rl_wfd = -1;

static size_t _aimux_rl_slot(uint64_t h) /* lock held: h's slot, or the empty one for it */
{
    size_t mask = 2 * _aimux_rl.cap - 1, i = _aimux_qr_hash(h, 2 * _aimux_rl.cap);
    while (_aimux_rl.set[i] != 0 && _aimux_rl.set[i] != h) i = (i + 1) & mask;
    return i;
}

static void _aimux_rl_unset(uint64_t h) /* lock held; h is in the set */
{
    size_t mask = 2 * _aimux_rl.cap - 1, i = _aimux_rl_slot(h), j;
    _aimux_rl.set[i] = 0;
    for (j = (i + 1) & mask; _aimux_rl.set[j] != 0; j = (j + 1) & mask) {
        size_t k = _aimux_qr_hash(_aimux_rl.set[j], 2 * _aimux_rl.cap);
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            _aimux_rl.set[i] = _aimux_rl.set[j];
            _aimux_rl.set[j] = 0;
            i = j;
        }
    }
}

static int _aimux_rl_grow(void) /* lock held */
{
    size_t cap = _aimux_rl.cap ? _aimux_rl.cap * 2 : 64, i;
    uint64_t *ring = (uint64_t *)malloc(cap * sizeof *ring);
    uint64_t *set = (uint64_t *)calloc(2 * cap, sizeof *set);
    if (ring == NULL || set == NULL) {
        free(ring);
        free(set);
        return 0;
    }
    for (i = 0; i < _aimux_rl.len; i++)
        ring[i] = _aimux_rl.ring[(_aimux_rl.head + i) & (_aimux_rl.cap - 1)];
    free(_aimux_rl.ring);
    free(_aimux_rl.set);
    _aimux_rl.ring = ring;
    _aimux_rl.set = set;
    _aimux_rl.cap = cap;
    _aimux_rl.head = 0;
    for (i = 0; i < _aimux_rl.len; i++) set[_aimux_rl_slot(ring[i])] = ring[i];
    return 1;
}

/* Set once the core keeps its ready list here (aimux_ops.streams.ready delegates to it). */
static atomic_int _aimux_rl_native;
void _aimux_rl_enable(void) { atomic_store(&_aimux_rl_native, 1); }

/* The notifier's pipe (a new one after a fork). */
void _aimux_rl_set_fd(int wfd) { atomic_store(&_aimux_rl_wfd, wfd); }

/* One byte to the pipe (a full pipe is readable already). */
static void _aimux_rl_write(void)
{
    int fd = atomic_load(&_aimux_rl_wfd);
    if (fd >= 0 && write(fd, "\x01", 1) < 0) { /* EAGAIN: full, so readable already */
    }
}

/* Lists `handle` (a no-op when it is listed); one byte goes to the pipe when the list goes from
   empty to non-empty. -1: out of memory (not listed). */
int _aimux_rl_mark(uint64_t handle)
{
    int write_now = 0;
    size_t i;
    if (handle == 0) return 0;
    pthread_mutex_lock(&_aimux_rl.mu);
    if (_aimux_rl.cap == 0 || _aimux_rl.set[_aimux_rl_slot(handle)] != handle) {
        if (_aimux_rl.len == _aimux_rl.cap && !_aimux_rl_grow()) {
            pthread_mutex_unlock(&_aimux_rl.mu);
            return -1;
        }
        i = _aimux_rl_slot(handle);
        _aimux_rl.set[i] = handle;
        _aimux_rl.ring[(_aimux_rl.head + _aimux_rl.len++) & (_aimux_rl.cap - 1)] = handle;
        if (!_aimux_rl.signalled) _aimux_rl.signalled = write_now = 1;
    }
    pthread_mutex_unlock(&_aimux_rl.mu);
    if (write_now) _aimux_rl_write();
    return 0;
}

/* Lists the stream of queue `p` unless it was freed (checked under the queue's lock, which
   _aimux_cq_unregister takes to set FREED before the handle leaves the list). */
int _aimux_rl_mark_q(void *p)
{
    _aimux_q *q = (_aimux_q *)p;
    int r = 0;
    pthread_mutex_lock(&q->mu);
    if (!(q->flags & _AIMUX_Q_FREED)) r = _aimux_rl_mark(q->handle);
    pthread_mutex_unlock(&q->mu);
    return r;
}

/* `handle` leaves the ready list (a freed stream: nobody polls it). */
void _aimux_rl_forget(uint64_t handle)
{
    size_t mask, i, k;
    if (handle == 0) return;
    pthread_mutex_lock(&_aimux_rl.mu);
    if (_aimux_rl.cap > 0 && _aimux_rl.set[_aimux_rl_slot(handle)] == handle) {
        _aimux_rl_unset(handle);
        mask = _aimux_rl.cap - 1;
        for (i = 0; i < _aimux_rl.len; i++)
            if (_aimux_rl.ring[(_aimux_rl.head + i) & mask] == handle) break;
        for (k = i; k + 1 < _aimux_rl.len; k++) /* the later ones move up by one */
            _aimux_rl.ring[(_aimux_rl.head + k) & mask] =
                _aimux_rl.ring[(_aimux_rl.head + k + 1) & mask];
        if (i < _aimux_rl.len) _aimux_rl.len--;
    }
    pthread_mutex_unlock(&_aimux_rl.mu);
}

/* How many handles the ready list holds (tests, through the core). */
size_t _aimux_rl_count(void)
{
    size_t n;
    pthread_mutex_lock(&_aimux_rl.mu);
    n = _aimux_rl.len;
    pthread_mutex_unlock(&_aimux_rl.mu);
    return n;
}

/* Up to `cap` listed handles, oldest first; each leaves the list. */
size_t _aimux_rl_take(uint64_t *out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&_aimux_rl.mu);
    while (n < cap && _aimux_rl.len > 0) {
        uint64_t h = _aimux_rl.ring[_aimux_rl.head];
        _aimux_rl.head = (_aimux_rl.head + 1) & (_aimux_rl.cap - 1);
        _aimux_rl.len--;
        _aimux_rl_unset(h);
        out[n++] = h;
    }
    if (_aimux_rl.len == 0) _aimux_rl.signalled = 0;
    pthread_mutex_unlock(&_aimux_rl.mu);
    return n;
}

/* In a forked child (before its first call): no queue of the parent. The parent's memory is left
   alone (another parent thread may have held one of its locks at the fork). */
void _aimux_cq_after_fork(void)
{
    pthread_mutex_init(&_aimux_qr.mu, NULL);
    _aimux_qr.slots = NULL;
    _aimux_qr.cap = _aimux_qr.used = 0;
    pthread_mutex_init(&_aimux_rl.mu, NULL); /* and no listed handle, no pipe until a new one */
    _aimux_rl.ring = _aimux_rl.set = NULL;
    _aimux_rl.cap = _aimux_rl.head = _aimux_rl.len = 0;
    _aimux_rl.signalled = 0; /* the pipe: aio's after-fork hook already gave the child its own */
}

/* --- the producer's side (the thread that reads the op) ------------------------------------ */

/* Appends `n` events serialized as one JSON array `buf` (copied). Returns the events queued. */
size_t _aimux_cq_push(void *p, const char *buf, size_t len, size_t n)
{
    _aimux_q *q = (_aimux_q *)p;
    _aimux_qnode *node = (_aimux_qnode *)malloc(sizeof *node);
    char *copy = (char *)malloc(len + 1);
    size_t count;
    if (node == NULL || copy == NULL || len < 2 || n == 0) {
        free(node);
        free(copy);
        return (size_t)-1; /* the Python side keeps the events itself */
    }
    memcpy(copy, buf, len);
    copy[len] = 0;
    node->next = NULL;
    node->buf = copy;
    node->len = len;
    node->pos = 1;
    node->n = n;
    pthread_mutex_lock(&q->mu);
    if (q->flags & (_AIMUX_Q_CANCEL | _AIMUX_Q_DONE)) { /* nobody will read it */
        free(copy);
        free(node);
    } else {
        if (q->tail != NULL)
            q->tail->next = node;
        else
            q->head = node;
        q->tail = node;
        q->count += n;
        pthread_cond_broadcast(&q->cv);
    }
    count = q->count;
    pthread_mutex_unlock(&q->mu);
    return count;
}

size_t _aimux_cq_count(void *p)
{
    _aimux_q *q = (_aimux_q *)p;
    size_t count;
    pthread_mutex_lock(&q->mu);
    count = q->count;
    pthread_mutex_unlock(&q->mu);
    return count;
}

static void _aimux_q_clear(_aimux_q *q) /* lock held */
{
    _aimux_qnode *n = q->head;
    while (n != NULL) {
        _aimux_qnode *next = n->next;
        free(n->buf);
        free(n);
        n = next;
    }
    q->head = q->tail = NULL;
    q->count = 0;
}

/* Sets END, PY or STOPPED (CANCEL also empties the queue) and wakes every blocked reader. */
void _aimux_cq_flag(void *p, unsigned flag)
{
    _aimux_q *q = (_aimux_q *)p;
    pthread_mutex_lock(&q->mu);
    q->flags |= flag;
    if (flag & _AIMUX_Q_CANCEL) _aimux_q_clear(q);
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Clears `flag` (PULL: a stream read on its reader's thread that now has a reader thread of its
   own, or that ended) and wakes every blocked reader. */
void _aimux_cq_unflag(void *p, unsigned flag)
{
    _aimux_q *q = (_aimux_q *)p;
    pthread_mutex_lock(&q->mu);
    q->flags &= ~flag;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* The producer is about to wait for room: 1 (ROOM set: a consumer that brings the queue down to
   the low-water mark reports _AIMUX_W_ROOM) when `threshold` events or more are queued, else 0
   (no wait). */
int _aimux_cq_want_room(void *p, size_t threshold)
{
    _aimux_q *q = (_aimux_q *)p;
    int wait;
    pthread_mutex_lock(&q->mu);
    wait = q->count >= threshold && !(q->flags & (_AIMUX_Q_CANCEL | _AIMUX_Q_DONE));
    if (wait) q->flags |= _AIMUX_Q_ROOM;
    pthread_mutex_unlock(&q->mu);
    return wait;
}

/* The queue's flags now (streams.stream.QueuedStream reads BLOCKED). */
unsigned _aimux_cq_flags(void *p)
{
    _aimux_q *q = (_aimux_q *)p;
    unsigned f;
    pthread_mutex_lock(&q->mu);
    f = q->flags;
    pthread_mutex_unlock(&q->mu);
    return f;
}

/* Consumers blocked in a read of this queue now. */
int _aimux_cq_readers(void *p)
{
    _aimux_q *q = (_aimux_q *)p;
    int n;
    pthread_mutex_lock(&q->mu);
    n = q->readers;
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* The last read's end (or the open), for the reaper. */
double _aimux_cq_last_read(void *p)
{
    _aimux_q *q = (_aimux_q *)p;
    double t;
    pthread_mutex_lock(&q->mu);
    t = q->readers ? 1e300 : q->last_read;
    pthread_mutex_unlock(&q->mu);
    return t;
}

/* The reaper: closes the stream when nobody read it since `deadline` and nobody is reading it
   now. Its events are dropped; `event` (the terminal error event) is its next read. 1: closed. */
int _aimux_cq_reap(void *p, double deadline, const char *event, size_t len)
{
    _aimux_q *q = (_aimux_q *)p;
    int reaped = 0;
    char *copy = _aimux_strndup(event, len);
    if (copy == NULL) return 0; /* tried again at the reaper's next look */
    pthread_mutex_lock(&q->mu);
    if (!q->readers && q->reaped == NULL && !(q->flags & _AIMUX_Q_DONE) &&
        q->last_read <= deadline) {
        _aimux_q_clear(q);
        q->reaped = copy;
        q->reaped_len = len;
        copy = NULL;
        reaped = 1;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    free(copy);
    return reaped;
}

/* --- the consumers' side (any thread, no interpreter lock) ----------------------------------- */

/* The end of the event starting at b[pos]: the index of the ',' or ']' after it (depth 0,
   outside strings). The events are JSON values, so none has a ',' of its own at depth 0. */
static size_t _aimux_event_end(const char *b, size_t pos, size_t len)
{
    int depth = 0;
    size_t i;
    for (i = pos; i < len; i++) {
        char c = b[i];
        if (c == '"') {
            for (i++; i < len && b[i] != '"'; i++)
                if (b[i] == '\\') i++;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) return i;
            depth--;
        } else if (c == ',' && depth == 0) {
            return i;
        }
    }
    return len - 1 > pos ? len - 1 : pos; /* malformed: the rest (never for orjson's output) */
}

static void _aimux_q_pop_head(_aimux_q *q) /* lock held; the head's buffer already handed out */
{
    _aimux_qnode *n = q->head;
    q->head = n->next;
    if (q->head == NULL) q->tail = NULL;
    free(n);
}

/* One event off the queue (count > 0), copied. NULL when out of memory. */
static char *_aimux_q_take_one(_aimux_q *q)
{
    _aimux_qnode *n = q->head;
    size_t end = _aimux_event_end(n->buf, n->pos, n->len);
    char *ev = _aimux_strndup(n->buf + n->pos, end - n->pos);
    if (ev == NULL) return NULL;
    n->pos = end + 1;
    n->n--;
    q->count--;
    if (n->n == 0) {
        free(n->buf);
        _aimux_q_pop_head(q);
    }
    return ev;
}

/* Up to `max` events off the queue (count > 0) as one JSON array. A whole untouched batch is
   handed over as it is (no copy); otherwise the events are copied into a new array. */
static char *_aimux_q_take_batch(_aimux_q *q, size_t max)
{
    _aimux_qnode *n = q->head;
    _aimux_buf b = {0};
    size_t taken = 0;
    if (n->pos == 1 && n->n <= max && (n->next == NULL || n->n == max)) {
        char *whole = n->buf;
        q->count -= n->n;
        _aimux_q_pop_head(q);
        return whole;
    }
    _aimux_buf_put(&b, "[", 1);
    while ((n = q->head) != NULL && taken < max) {
        size_t k, end;
        if (taken) _aimux_buf_put(&b, ",", 1);
        if (n->n <= max - taken) { /* the rest of this batch */
            _aimux_buf_put(&b, n->buf + n->pos, n->len - 1 - n->pos);
            k = n->n;
            end = n->len;
        } else { /* its first max - taken events */
            end = n->pos;
            for (k = 0; k < max - taken; k++) end = _aimux_event_end(n->buf, end, n->len) + 1;
            _aimux_buf_put(&b, n->buf + n->pos, end - 1 - n->pos);
        }
        if (b.oom) break;
        taken += k;
        q->count -= k;
        n->n -= k;
        n->pos = end;
        if (n->n == 0) {
            free(n->buf);
            _aimux_q_pop_head(q);
        }
    }
    _aimux_buf_put(&b, "]", 1);
    if (b.oom) { /* events already taken are lost with the error, as a failed copy in Python */
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* One read: max == 0 takes one event (aimux_stream_next), else up to max events as a JSON array.
   Answers in the order the Python queue does: the reaper's event, the end already seen, a
   cancel, queued events, the Python side, the producer's end; then it blocks (blocking) or
   answers EMPTY. A blocking read that ends because of a cancel returns once the op's cleanup ran.
   `*ended` (batches): no event follows this answer. */
int _aimux_cq_take(void *p, size_t max, int blocking, char **out, int32_t *ended, int *wake)
{
    _aimux_q *q = (_aimux_q *)p;
    int st;
    *out = NULL;
    *ended = 0;
    *wake = 0;
    pthread_mutex_lock(&q->mu);
    if (blocking) q->flags |= _AIMUX_Q_BLOCKED;
    for (;;) {
        if (q->reaped != NULL) {
            char *ev = q->reaped;
            q->reaped = NULL;
            q->flags |= _AIMUX_Q_DONE;
            if (max == 0) {
                *out = ev;
            } else {
                _aimux_buf b = {0};
                _aimux_buf_put(&b, "[", 1);
                _aimux_buf_put(&b, ev, q->reaped_len);
                _aimux_buf_put(&b, "]", 1);
                free(ev);
                *out = b.oom ? (free(b.p), NULL) : b.p;
                *ended = max > 1 || (q->flags & _AIMUX_Q_END);
            }
            st = *out ? _AIMUX_T_DATA : _AIMUX_T_OOM;
            break;
        }
        if (q->flags & _AIMUX_Q_DONE) {
            st = _AIMUX_T_END;
            break;
        }
        if (q->flags & _AIMUX_Q_CANCEL) {
            q->flags |= _AIMUX_Q_DONE;
            st = _AIMUX_T_END;
            break;
        }
        if (q->count > 0) {
            *out = max == 0 ? _aimux_q_take_one(q) : _aimux_q_take_batch(q, max);
            st = *out ? _AIMUX_T_DATA : _AIMUX_T_OOM;
            if (max && q->count == 0 && (q->flags & (_AIMUX_Q_END | _AIMUX_Q_PY)) == _AIMUX_Q_END) {
                q->flags |= _AIMUX_Q_DONE; /* the end is known now: say so with the last batch */
                *ended = 1;
            }
            if ((q->flags & _AIMUX_Q_ROOM) && q->count <= q->low) {
                q->flags &= ~_AIMUX_Q_ROOM;
                *wake |= _AIMUX_W_ROOM;
            }
            /* events left here, or in Python (the fallback): the host must poll again */
            if (max && q->notify && (q->count > 0 || (q->flags & _AIMUX_Q_PY)))
                *wake |= _AIMUX_W_RELIST;
            break;
        }
        if (q->flags & _AIMUX_Q_PY) {
            st = _AIMUX_T_PY;
            break;
        }
        if (q->flags & _AIMUX_Q_PULL) {
            /* the blocking reads read this stream; a poll takes what they brought, and only a
               stream no blocking read has read yet gets its reader thread from the Python side */
            st = blocking || !(q->flags & _AIMUX_Q_BLOCKED) ? _AIMUX_T_PY : _AIMUX_T_EMPTY;
            break;
        }
        if (q->flags & _AIMUX_Q_END) {
            q->flags |= _AIMUX_Q_DONE;
            st = _AIMUX_T_END;
            *ended = 1;
            break;
        }
        if (!blocking) {
            st = _AIMUX_T_EMPTY;
            break;
        }
        q->readers++;
        pthread_cond_wait(&q->cv, &q->mu);
        q->readers--;
    }
    if (st == _AIMUX_T_END) {
        *ended = 1;
        if (blocking && (q->flags & _AIMUX_Q_CANCEL)) {
            /* as in Python: a blocked reader hears the end of a cancelled stream only after the
               op's cleanup ran (a recording already says "cancelled") */
            q->readers++;
            while (!(q->flags & _AIMUX_Q_STOPPED)) pthread_cond_wait(&q->cv, &q->mu);
            q->readers--;
        }
    }
    q->last_read = _aimux_mono();
    pthread_mutex_unlock(&q->mu);
    return st;
}

void _aimux_cq_free_string(char *s) { free(s); }
