/* libaimux: an unknown op answered without the interpreter (docs/DESIGN.md "Unknown ops in C").
 *
 * aimux_call with a name no op has fails with UnknownOpError (300). For a plain name (letters,
 * digits, '.', '_'; up to a length) that error is the same envelope with the name put in: the
 * core hands the shim a template (aimux_ops.unknown_op_template: the pieces of its own
 * projection around a probe name, checked against the projection of other probes), the known
 * op names and the remembered secrets the message could hold once a plain name is in it. With a
 * template armed, aimux_call answers such a name here: no GIL, no Python frame. Everything else
 * (a known name, a name with any other character, a message holding a remembered secret, a
 * longer name) goes to the core as before.
 *
 * The template is withdrawn (disarmed) around every change of what it copies: the core calls
 * _aimux_uo_hold(+1) before it registers an op or remembers a secret and _aimux_uo_hold(-1)
 * after; no template is armed while a change is under way, and one built from a look taken
 * before a change is refused (the generation moved). The next unknown op that reaches the core
 * re-arms it (_aimux_uo_arm_soon, once per change).
 *
 * The lock is a leaf: no thread holding it waits for anything else (the GIL included). It is
 * not held across fork() (a host's own fork handlers may call aimux_call): a forked child starts
 * with a fresh lock and nothing armed (the first unknown op there arms it again), and leaves the
 * parent's template memory alone (a parent thread may have been changing it at the fork).
 *
 * Included by aimux_shim.c (one translation unit); not compiled on its own.
 */

/* One string of the template blob (a view into the held copy). */
typedef struct {
    const char *p;
    size_t n;
} _aimux_uo_str;

static pthread_mutex_t _aimux_uo_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint64_t gen;     /* moved by every change */
    int hold;         /* changes under way: nothing is armed meanwhile */
    int refused;      /* the core declined to arm at this generation: don't ask again */
    atomic_int armed; /* read without the lock first (the common disarmed case costs nothing) */
    char *blob;       /* the held copy of the core's blob (armed only) */
    unsigned char plain[256];
    size_t max_len;
    int32_t code;
    int retryable;
    int64_t after;
    _aimux_uo_str kind, name, msg[2];
    _aimux_uo_str *json; /* n_json pieces: the name goes between each two */
    size_t n_json;
    _aimux_uo_str *known; /* the op names the core knows (they go to the core) */
    size_t n_known;
    _aimux_uo_str *secrets; /* remembered secrets that could be in the message */
    size_t n_secrets;
} _aimux_uo;

/* The template's memory (lock held). */
static void _aimux_uo_drop(void)
{
    atomic_store(&_aimux_uo.armed, 0);
    free(_aimux_uo.blob);
    free(_aimux_uo.json);
    _aimux_uo.blob = NULL;
    _aimux_uo.json = _aimux_uo.known = _aimux_uo.secrets = NULL;
    _aimux_uo.n_json = _aimux_uo.n_known = _aimux_uo.n_secrets = 0;
}

/* +1 before a change of the op registry or the remembered secrets, -1 after it. */
void _aimux_uo_hold(int delta)
{
    pthread_mutex_lock(&_aimux_uo_mu);
    _aimux_uo.gen++;
    _aimux_uo.hold += delta;
    _aimux_uo.refused = 0;
    _aimux_uo_drop();
    pthread_mutex_unlock(&_aimux_uo_mu);
}

/* Reads one {uint32 length, bytes} string of the blob. */
static int _aimux_uo_read(const char *blob, size_t len, size_t *off, _aimux_uo_str *s)
{
    uint32_t n;
    if (len - *off < 4) return 0;
    memcpy(&n, blob + *off, 4);
    *off += 4;
    if (len - *off < n) return 0;
    s->p = blob + *off;
    s->n = n;
    *off += n;
    return 1;
}

/* The core's answer to _aimux_py_unknown_op_arm(gen): a template blob (the format:
   aimux_ops/unknown_op_template.py), or NULL to decline until the next change. Installed only
   when nothing changed since `gen` was handed out and no change is under way. 1: armed. */
int _aimux_uo_arm(uint64_t gen, const char *blob, size_t len)
{
    /* header: int32 code, uint8 retryable, int64 retry_after_ms, uint32 max_len, n_json,
       n_known, n_secrets; then the strings: plain characters, kind, name, the message's two
       pieces, the JSON pieces, the known names, the secrets */
    const size_t head = 4 + 1 + 8 + 4 * 4;
    uint32_t max_len, n_json, n_known, n_secrets;
    _aimux_uo_str plain, *all = NULL;
    char *copy = NULL;
    size_t off = head, i, total;
    uint8_t retryable;
    int ok = 0;
    pthread_mutex_lock(&_aimux_uo_mu);
    if (gen != _aimux_uo.gen || _aimux_uo.hold != 0) goto out; /* a change came in between */
    _aimux_uo_drop();
    if (blob == NULL || len < head) {
        _aimux_uo.refused = 1;
        goto out;
    }
    copy = (char *)malloc(len);
    if (copy == NULL) goto out; /* asked again on the next unknown op */
    memcpy(copy, blob, len);
    memcpy(&_aimux_uo.code, copy, 4);
    memcpy(&retryable, copy + 4, 1);
    memcpy(&_aimux_uo.after, copy + 5, 8);
    memcpy(&max_len, copy + 13, 4);
    memcpy(&n_json, copy + 17, 4);
    memcpy(&n_known, copy + 21, 4);
    memcpy(&n_secrets, copy + 25, 4);
    _aimux_uo.refused = 1; /* unless the blob reads whole */
    if (n_json == 0 || n_json > 64 || n_known > (1u << 20) || n_secrets > 4096 || max_len == 0 ||
        max_len > 4096)
        goto out;
    total = (size_t)n_json + n_known + n_secrets;
    all = (_aimux_uo_str *)malloc(sizeof *all * total);
    if (all == NULL) goto out;
    if (!_aimux_uo_read(copy, len, &off, &plain) ||
        !_aimux_uo_read(copy, len, &off, &_aimux_uo.kind) ||
        !_aimux_uo_read(copy, len, &off, &_aimux_uo.name) ||
        !_aimux_uo_read(copy, len, &off, &_aimux_uo.msg[0]) ||
        !_aimux_uo_read(copy, len, &off, &_aimux_uo.msg[1]))
        goto out;
    for (i = 0; i < total; i++)
        if (!_aimux_uo_read(copy, len, &off, &all[i])) goto out;
    if (off != len) goto out;
    memset(_aimux_uo.plain, 0, sizeof _aimux_uo.plain);
    for (i = 0; i < plain.n; i++) {
        unsigned char c = (unsigned char)plain.p[i];
        if (c == 0 || c >= 0x80) goto out; /* plain characters are ASCII, never NUL */
        _aimux_uo.plain[c] = 1;
    }
    for (i = 0; i < n_secrets; i++)
        if (all[n_json + n_known + i].n == 0) goto out; /* an empty secret would match all */
    _aimux_uo.retryable = retryable != 0;
    _aimux_uo.max_len = max_len;
    _aimux_uo.blob = copy;
    _aimux_uo.json = all;
    _aimux_uo.n_json = n_json;
    _aimux_uo.known = all + n_json;
    _aimux_uo.n_known = n_known;
    _aimux_uo.secrets = all + n_json + n_known;
    _aimux_uo.n_secrets = n_secrets;
    _aimux_uo.refused = 0;
    copy = NULL;
    all = NULL;
    atomic_store(&_aimux_uo.armed, 1);
    ok = 1;
out:
    free(copy);
    free(all);
    pthread_mutex_unlock(&_aimux_uo_mu);
    return ok;
}

/* The unknown op's error for `op`, built from the armed template; NULL when the core must
   answer (nothing armed, not a plain name, a known op, a remembered secret inside, no memory). */
static aimux_error_t *_aimux_uo_answer(const char *op)
{
    struct aimux_error *e = NULL;
    size_t n, i, msg_len, json_len;
    char *p;
    if (op == NULL || !atomic_load_explicit(&_aimux_uo.armed, memory_order_relaxed)) return NULL;
    pthread_mutex_lock(&_aimux_uo_mu);
    if (!atomic_load_explicit(&_aimux_uo.armed, memory_order_relaxed)) goto out;
    for (n = 0; op[n] != 0; n++)
        if (n >= _aimux_uo.max_len || !_aimux_uo.plain[(unsigned char)op[n]]) goto out;
    if (n == 0) goto out;
    for (i = 0; i < _aimux_uo.n_known; i++)
        if (_aimux_uo.known[i].n == n && memcmp(_aimux_uo.known[i].p, op, n) == 0) goto out;
    msg_len = _aimux_uo.msg[0].n + n + _aimux_uo.msg[1].n;
    json_len = (_aimux_uo.n_json - 1) * n;
    for (i = 0; i < _aimux_uo.n_json; i++) json_len += _aimux_uo.json[i].n;
    e = _aimux_node_alloc(_aimux_uo.code, _aimux_uo.kind.p, _aimux_uo.kind.n, _aimux_uo.name.p,
                          _aimux_uo.name.n, msg_len, json_len);
    if (e == NULL) goto out;
    p = (char *)e->message;
    memcpy(p, _aimux_uo.msg[0].p, _aimux_uo.msg[0].n);
    memcpy(p + _aimux_uo.msg[0].n, op, n);
    memcpy(p + _aimux_uo.msg[0].n + n, _aimux_uo.msg[1].p, _aimux_uo.msg[1].n);
    /* a remembered secret in the message (inside the name, or across its ends and the text
       around it): the core scrubs it */
    for (i = 0; i < _aimux_uo.n_secrets; i++)
        if (memmem(p, msg_len, _aimux_uo.secrets[i].p, _aimux_uo.secrets[i].n) != NULL) {
            free(e);
            e = NULL;
            goto out;
        }
    p = (char *)e->json;
    for (i = 0; i < _aimux_uo.n_json; i++) {
        if (i > 0) {
            memcpy(p, op, n);
            p += n;
        }
        memcpy(p, _aimux_uo.json[i].p, _aimux_uo.json[i].n);
        p += _aimux_uo.json[i].n;
    }
    e->retryable = _aimux_uo.retryable;
    e->retry_after_ms = _aimux_uo.after < 0 ? -1 : _aimux_uo.after;
out:
    pthread_mutex_unlock(&_aimux_uo_mu);
    return e;
}

/* After the core answered an unknown op (300): when nothing is armed and the core has not
   declined at this generation, ask it for a template (one extra crossing per change). */
static void _aimux_uo_arm_soon(void)
{
    uint64_t gen;
    int ask;
    if (atomic_load_explicit(&_aimux_uo.armed, memory_order_relaxed)) return;
    pthread_mutex_lock(&_aimux_uo_mu);
    gen = _aimux_uo.gen;
    ask = !atomic_load_explicit(&_aimux_uo.armed, memory_order_relaxed) && !_aimux_uo.refused &&
          _aimux_uo.hold == 0;
    pthread_mutex_unlock(&_aimux_uo_mu);
    if (ask) (void)_aimux_py_unknown_op_arm(gen);
}

/* In a forked child, first of the shim's child handlers: a fresh lock, nothing armed, no change
   under way (the thread that made one is not in the child). The parent's template memory is
   left allocated: a parent thread may have been changing it at the fork. */
static void _aimux_uo_fork_child(void)
{
    pthread_mutex_init(&_aimux_uo_mu, NULL);
    atomic_store(&_aimux_uo.armed, 0);
    _aimux_uo.gen++;
    _aimux_uo.hold = 0;
    _aimux_uo.refused = 0;
    _aimux_uo.blob = NULL;
    _aimux_uo.json = _aimux_uo.known = _aimux_uo.secrets = NULL;
    _aimux_uo.n_json = _aimux_uo.n_known = _aimux_uo.n_secrets = 0;
}
