/* libaimux: a stream's host tool answers (aimux_stream_tool_result, CONTRACT §2.2), kept beside
 * its C queue (aimux_queue.c).
 *
 * The tool loop (aimux_ops/ops/answers.py ToolAnswers) announces each host call it will wait
 * for (_aimux_cq_expect) and waits here without the interpreter lock (_aimux_cq_answer_take).
 * An answer that is plainly `{"output": V}` for a call announced and not answered yet is taken
 * here, on the host's thread, without the interpreter lock (_aimux_cq_answer_fast): the host
 * never waits for a thread of the core, and the loop wakes with the lock free. Every other
 * answer (an error or a failure layer, text this file cannot prove orjson reads as it is, an
 * unknown or answered call, a cancelled stream) goes to the Python side, which answers it as
 * ever and, when it takes it, queues it here too (_aimux_cq_claim): the loop takes every answer
 * in the order they came, from one place.
 *
 * V is taken here only when it is JSON of a conservative shape orjson reads as written: ASCII
 * strings without \u escapes or control characters, numbers of at most 15 digits (and an
 * exponent of at most 2), nesting depth at most 32. Anything else is the Python side's.
 *
 * Included by aimux_shim.c after aimux_queue.c (one translation unit).
 */
#include <errno.h>

typedef struct _aimux_ans { /* one answer come, not taken yet */
    struct _aimux_ans *next;
    char *id;
    char *json; /* NULL: taken by the Python side, which holds it */
} _aimux_ans;

typedef struct _aimux_exp { /* one call announced */
    struct _aimux_exp *next;
    char *id;
    size_t id_len;
    int answered;
} _aimux_exp;

typedef struct _aimux_answers _aimux_answers;
struct _aimux_answers {
    pthread_cond_t cv; /* CLOCK_MONOTONIC: the loop's deadline is time.monotonic() */
    _aimux_exp *expected;
    _aimux_ans *head, *tail;
    int woken; /* a cancel: the wait ends, no answer is taken here */
};

static void _aimux_answers_free(_aimux_answers *a)
{
    _aimux_exp *e;
    _aimux_ans *n;
    if (a == NULL) return;
    for (e = a->expected; e != NULL;) {
        _aimux_exp *next = e->next;
        free(e->id);
        free(e);
        e = next;
    }
    for (n = a->head; n != NULL;) {
        _aimux_ans *next = n->next;
        free(n->id);
        free(n->json);
        free(n);
        n = next;
    }
    pthread_cond_destroy(&a->cv);
    free(a);
}

/* q->answers, made on first use (q->mu held); NULL when out of memory. */
static _aimux_answers *_aimux_answers_of(_aimux_q *q)
{
    pthread_condattr_t attr;
    _aimux_answers *a = q->answers;
    if (a != NULL) return a;
    a = (_aimux_answers *)calloc(1, sizeof *a);
    if (a == NULL) return NULL;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cv, &attr);
    pthread_condattr_destroy(&attr);
    q->answers = a;
    return a;
}

static _aimux_exp *_aimux_exp_find(_aimux_answers *a, const char *id, size_t len)
{
    _aimux_exp *e;
    for (e = a->expected; e != NULL; e = e->next)
        if (e->id_len == len && memcmp(e->id, id, len) == 0) return e;
    return NULL;
}

/* Queue an answer of `e` (q->mu held; `json` owned by the queue from now on): 0 out of memory. */
static int _aimux_ans_push(_aimux_answers *a, _aimux_exp *e, char *json)
{
    _aimux_ans *n = (_aimux_ans *)calloc(1, sizeof *n);
    if (n != NULL) n->id = _aimux_strndup(e->id, e->id_len);
    if (n == NULL || n->id == NULL) {
        free(n);
        free(json);
        return 0;
    }
    n->json = json;
    e->answered = 1;
    if (a->tail != NULL)
        a->tail->next = n;
    else
        a->head = n;
    a->tail = n;
    pthread_cond_broadcast(&a->cv);
    return 1;
}

/* The loop will wait for an answer to `id`: 1, or 0 when out of memory. */
int _aimux_cq_expect(void *p, const char *id, size_t len)
{
    _aimux_q *q = (_aimux_q *)p;
    _aimux_answers *a;
    _aimux_exp *e;
    int ok = 0;
    pthread_mutex_lock(&q->mu);
    a = _aimux_answers_of(q);
    if (a != NULL && (e = _aimux_exp_find(a, id, len)) != NULL) {
        e->answered = 0; /* announced again (a provider reusing ids across steps): awaited */
        ok = 1;
    } else if (a != NULL && (e = (_aimux_exp *)calloc(1, sizeof *e)) != NULL) {
        e->id = _aimux_strndup(id, len);
        e->id_len = len;
        if (e->id != NULL) {
            e->next = a->expected;
            a->expected = e;
            ok = 1;
        } else {
            free(e);
        }
    }
    pthread_mutex_unlock(&q->mu);
    return ok;
}

/* The Python side took an answer to `id` (it holds the answer): 1 queued, 2 answered already,
   0 not announced, -1 out of memory. */
int _aimux_cq_claim(void *p, const char *id, size_t len)
{
    _aimux_q *q = (_aimux_q *)p;
    _aimux_answers *a;
    _aimux_exp *e;
    int r = 0;
    pthread_mutex_lock(&q->mu);
    a = q->answers;
    e = a != NULL ? _aimux_exp_find(a, id, len) : NULL;
    if (e != NULL) r = e->answered ? 2 : _aimux_ans_push(a, e, NULL) ? 1 : -1;
    pthread_mutex_unlock(&q->mu);
    return r;
}

/* A cancel: the loop's wait ends, and no answer is taken here from now on. */
void _aimux_cq_answers_wake(void *p)
{
    _aimux_q *q = (_aimux_q *)p;
    _aimux_answers *a;
    pthread_mutex_lock(&q->mu);
    a = _aimux_answers_of(q);
    if (a != NULL) {
        a->woken = 1;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&q->mu);
}

/* The oldest answer not taken yet, waiting up to `timeout_s` seconds for one (< 0: no bound,
   0: no wait): 1 with *out_id and *out_json (NULL: the Python side's; both freed with
   _aimux_cq_free_string), or 0 (none: the time ran out, or a cancel woke the wait). */
int _aimux_cq_answer_take(void *p, double timeout_s, char **out_id, char **out_json)
{
    _aimux_q *q = (_aimux_q *)p;
    _aimux_answers *a;
    _aimux_ans *n;
    struct timespec until;
    int r = 0;
    *out_id = *out_json = NULL;
    if (timeout_s > 0) {
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)timeout_s;
        until.tv_nsec += (long)((timeout_s - (double)(time_t)timeout_s) * 1e9);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&q->mu);
    a = _aimux_answers_of(q);
    while (a != NULL && a->head == NULL && !a->woken && timeout_s != 0) {
        if (timeout_s < 0)
            pthread_cond_wait(&a->cv, &q->mu);
        else if (pthread_cond_timedwait(&a->cv, &q->mu, &until) == ETIMEDOUT)
            break;
    }
    if (a != NULL && (n = a->head) != NULL) {
        a->head = n->next;
        if (a->head == NULL) a->tail = NULL;
        *out_id = n->id;
        *out_json = n->json;
        free(n);
        r = 1;
    }
    pthread_mutex_unlock(&q->mu);
    return r;
}

/* --- the fast path's JSON: what orjson reads as written (see the top of this file) --------- */
static const char *_aimux_js_ws(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
    return s;
}

static const char *_aimux_js_string(const char *s) /* at '"': past the closing one, or NULL */
{
    for (s++;; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"') return s + 1;
        if (c == '\\') {
            s++;
            if (*s == 0 || strchr("\"\\/bfnrt", *s) == NULL) return NULL; /* (\u: Python's) */
        } else if (c < 0x20 || c > 0x7e) {
            return NULL; /* the end of the text, a control character, or not ASCII */
        }
    }
}

static const char *_aimux_js_digits(const char *s, int max)
{
    int n = 0;
    while (*s >= '0' && *s <= '9') {
        if (++n > max) return NULL;
        s++;
    }
    return n > 0 ? s : NULL;
}

static const char *_aimux_js_number(const char *s)
{
    if (*s == '-') s++;
    if (*s == '0')
        s++;
    else if ((s = _aimux_js_digits(s, 15)) == NULL)
        return NULL;
    if (*s == '.' && (s = _aimux_js_digits(s + 1, 15)) == NULL) return NULL;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        s = _aimux_js_digits(s, 2);
    }
    return s;
}

/* One JSON value at `s` (after whitespace): past its end, or NULL when not of the shape. */
static const char *_aimux_js_value(const char *s, int depth)
{
    char close;
    s = _aimux_js_ws(s);
    switch (*s) {
    case '"': return _aimux_js_string(s);
    case 't': return strncmp(s, "true", 4) == 0 ? s + 4 : NULL;
    case 'f': return strncmp(s, "false", 5) == 0 ? s + 5 : NULL;
    case 'n': return strncmp(s, "null", 4) == 0 ? s + 4 : NULL;
    case '[':
    case '{':
        if (depth >= 32) return NULL;
        close = *s == '[' ? ']' : '}';
        s = _aimux_js_ws(s + 1);
        if (*s == close) return s + 1;
        for (;;) {
            if (close == '}') { /* a member: "key" : value */
                if (*s != '"' || (s = _aimux_js_string(s)) == NULL) return NULL;
                s = _aimux_js_ws(s);
                if (*s++ != ':') return NULL;
            }
            if ((s = _aimux_js_value(s, depth + 1)) == NULL) return NULL;
            s = _aimux_js_ws(s);
            if (*s == close) return s + 1;
            if (*s != ',') return NULL;
            s = _aimux_js_ws(s + 1);
        }
    default: return *s == '-' || (*s >= '0' && *s <= '9') ? _aimux_js_number(s) : NULL;
    }
}

/* `{"output": V}` and nothing else, V of the shape above. */
static int _aimux_js_plain_output(const char *s)
{
    s = _aimux_js_ws(s);
    if (*s != '{') return 0;
    s = _aimux_js_ws(s + 1);
    if (strncmp(s, "\"output\"", 8) != 0) return 0;
    s = _aimux_js_ws(s + 8);
    if (*s != ':' || (s = _aimux_js_value(s + 1, 1)) == NULL) return 0;
    s = _aimux_js_ws(s);
    return *s == '}' && *_aimux_js_ws(s + 1) == 0;
}

/* aimux_stream_tool_result's fast path (the host's thread, no interpreter lock): 1 when the
   answer was taken here, 0 when the Python side answers it (and says what is wrong, if
   anything is). */
static int _aimux_cq_answer_fast(_aimux_q *q, const char *id, const char *json)
{
    _aimux_answers *a;
    _aimux_exp *e;
    char *copy;
    size_t len = strlen(json);
    int r = 0;
    if (!_aimux_js_plain_output(json)) return 0;
    copy = _aimux_strndup(json, len);
    if (copy == NULL) return 0; /* (the Python side says it is out of memory) */
    pthread_mutex_lock(&q->mu);
    a = q->answers;
    if (a != NULL && !a->woken && !(q->flags & _AIMUX_Q_FREED)) {
        e = _aimux_exp_find(a, id, strlen(id));
        if (e != NULL && !e->answered) {
            r = _aimux_ans_push(a, e, copy);
            copy = NULL; /* (the queue's, or freed by a push out of memory) */
        }
    }
    pthread_mutex_unlock(&q->mu);
    free(copy);
    return r;
}
