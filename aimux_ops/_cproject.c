/* aimux_ops._cproject: the envelope projection of the common cause chains, in C.
 *
 * An optional accelerator of aimux_ops/causes.py (capture with the default limits, plus the
 * root's retryable / retryAfterMs of envelope._root) and of envelope._links_of_nodes (the shim's
 * chain links of the nodes just projected). The Python code stays the reference: every function
 * here answers None for anything it does not handle exactly as the Python code would, and the
 * caller then runs the Python code. What is handled (docs/DESIGN.md "The projection in C"):
 *
 * - aimux nodes whose class keeps the base payload_fields and cause_children (no RetryError, no
 *   TimeoutError), no undeclared payload member, field values of exact types: str (ASCII, at most
 *   16 KiB), int, bool, finite float, and lists / dicts of those (ASCII keys without a scrub
 *   anchor, nothing over the 16 KiB bound, no secret-named member holding a string, no string
 *   with a scrub anchor), and a list of simple models as errors.dump_models dumps it;
 * - source nodes of exceptions whose str() is a builtin exception's (BaseException, OSError,
 *   KeyError) over plain arguments (str, int, float, bool, None, or such exceptions), and
 *   SourceError;
 * - messages of at most 1 KiB of ASCII without NUL; one with a URL or a scrub anchor is scrubbed
 *   by the Python scrubber itself (redact.scrub_message), a payload string with an anchor by
 *   redact.scrub_text;
 * - chains cut by the depth limit (16) or a cycle ("cause" marked).
 *
 * project() is envelope._project's whole fast path (walk, orjson.dumps, _last); what the walk
 * decides from a class alone is kept per class while the class's version tag holds (TypeInfo).
 *
 * Everything else (non-ASCII or over-limit texts, anchors inside nested payload values, secret
 * headers, models, exotic __str__ / __repr__, attempts, ...) answers None: Python projects it.
 * An exception raised by a Python callback is cleared (the Python path raises it again) unless it
 * is not an Exception (KeyboardInterrupt, SystemExit): that one propagates.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef AIMUX_CPROJECT_SOURCE_SHA
#define AIMUX_CPROJECT_SOURCE_SHA ""
#endif

#define MESSAGE_BYTES   1024
#define VALUE_BYTES     (16 * 1024)
#define MAX_DEPTH       16  /* Limits.depth */
#define BOUND_DEPTH     16  /* causes._small_bound's nesting bound */
#define LINKS_MAX       256 /* envelope._DECODE_MAX_DEPTH */
#define CODE_MAX        0x7FFFFFFFL
#define PLAIN_EXC_DEPTH 4 /* how deep exception arguments are checked before giving up */

/* Results of the internal steps: OK, FALLBACK (not handled, no Python error set), ERR (a Python
 * error is set). */
enum { ERR = -1, FALLBACK = 0, OK = 1 };

/* What setup() hands over (strong references, kept for the life of the process). */
static PyObject *g_aimux_error;      /* aimux_ops.errors.AimuxError */
static PyObject *g_retry_error;      /* aimux_ops.errors.RetryError */
static PyObject *g_source_error;     /* aimux_ops.errors.SourceError */
static PyObject *g_payload_fields;   /* AimuxError.payload_fields (the function) */
static PyObject *g_cause_children;   /* AimuxError.cause_children (the function) */
static PyObject *g_redact;           /* the aimux_ops.redact module (_secret_list) */
static PyObject *g_scrub_text;       /* redact.scrub_text */
static PyObject *g_scrub_message;    /* redact.scrub_message */
static PyObject *g_is_secret_header; /* redact.is_secret_header */
static PyObject *g_dumps;            /* orjson.dumps */
static PyObject *g_link;             /* envelope.Link (a tuple subclass) */
static PyObject *g_retryable;        /* the AimuxError.retryable property */
static PyObject *g_retry_after_ms;   /* the AimuxError.retry_after_ms property */
static PyObject *g_own_retryable;    /* AimuxError._own_retryable (the function) */
static PyObject *g_own_retry_after;  /* AimuxError._own_retry_after_ms (the function) */
static PyObject *g_envelope_globals; /* aimux_ops.envelope's module dict (its _last) */
static Py_ssize_t g_envelope_max;    /* envelope.ENVELOPE_MAX_BYTES */
/* APICallError's hooks, answered here when nothing of theirs was replaced (root_hook). */
static PyObject *g_api_own_retryable;   /* APICallError._own_retryable (the function) */
static PyObject *g_api_own_retry_after; /* APICallError._own_retry_after_ms (the function) */
static PyObject *g_api_is_retryable;    /* APICallError.is_retryable (the property) */
static PyObject *g_api_headers;         /* APICallError.response_headers (the property) */
static PyObject *g_parse_retry_after;   /* errors.aimux._parse_retry_after_ms (the function) */
static PyObject *g_dump_models;         /* errors._base.dump_models (a list of simple models) */

/* Interned names. */
static PyObject *s_kind, *s_code, *s_message, *s_error, *s_name, *s_cause, *s_truncated, *s_type,
    *s_retryable, *s_retryAfterMs, *s_retry_after_ms, *s_own_retryable, *s_own_retry_after,
    *s_wire_root, *s_getattribute, *s_values, *s_extra, *s_wire, *s_error_name, *s_payload_fields,
    *s_cause_children, *s_module, *s_qualname, *s_secret_list, *s_builtins, *s_retry_name,
    *s_dunder_cause, *s_dunder_context, *s_dunder_suppress, *s_args, *s_last, *s_is_retryable,
    *s_class, *s_response_headers, *s_parse_retry_after, *s_defaults, *s_of_values;

/* The str() / repr() implementations of the builtin exceptions a source node may use. */
static reprfunc base_str, base_repr, oserror_str, keyerror_str;

typedef struct {
    PyObject *secrets; /* redact._secret_list, read once per projection (a tuple of str) */
} Ctx;

/* -- helpers --------------------------------------------------------------------------------- */

/* An error raised by a Python callback: an Exception becomes a fallback (the Python path meets
 * it again), anything else (KeyboardInterrupt, SystemExit) propagates. */
static int settle(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return FALLBACK;
    }
    return ERR;
}

static int ascii_text(PyObject *s) { return PyUnicode_CheckExact(s) && PyUnicode_IS_ASCII(s); }

static const char *ascii_data(PyObject *s) { return (const char *)PyUnicode_DATA(s); }

/* Case-insensitive (ASCII) search for the lower-case `word`. */
static int has_word_ci(const char *s, Py_ssize_t n, const char *word, Py_ssize_t w)
{
    for (Py_ssize_t i = 0; i + w <= n; i++) {
        Py_ssize_t j = 0;
        while (j < w) {
            char c = s[i + j];
            if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
            if (c != word[j]) break;
            j++;
        }
        if (j == w) return 1;
    }
    return 0;
}

/* Whether an anchor (see shaped_anchor) involves the byte at i: "sk-" / "key-" ending at a
 * '-' there (the letters in any case), "bearer" in any case starting there, or, with `urls`,
 * "://" starting there. */
static int anchor_at(const char *s, Py_ssize_t n, Py_ssize_t i, int urls)
{
    char c = s[i];
    if (c == '-') {
        if (i >= 2 && (s[i - 1] | 0x20) == 'k' && (s[i - 2] == 's' || s[i - 2] == 'S')) return 1;
        if (i >= 3 && (s[i - 1] | 0x20) == 'y' && (s[i - 2] | 0x20) == 'e' &&
            (s[i - 3] | 0x20) == 'k')
            return 1;
        return 0;
    }
    if ((c | 0x20) == 'b') return i + 5 < n && has_word_ci(s + i + 1, 5, "earer", 5);
    if (c == ':' && urls) return i + 2 < n && s[i + 1] == '/' && s[i + 2] == '/';
    return 0;
}

/* 0x80 in exactly the zero bytes of v (no carries between bytes). */
static uint64_t exact_zeros(uint64_t v)
{
    const uint64_t lows = 0x7F7F7F7F7F7F7F7FULL;
    return ~(((v & lows) + lows) | v | lows);
}

/* One pass over an ASCII text: 1 when it holds "sk-", "key-", "bearer" in any case
 * (redact._shaped_anchor; _PATTERN_RE ignores case), or, with `urls`, "://". Eight bytes at a
 * time: a word holding no '-', no 'b' / 'B' and (with `urls`) no ':' holds no anchor's last byte
 * of "sk-" / "key-" nor the first of "bearer" / "://"; any other word is looked at byte by byte.
 * (For ASCII letters, c | 0x20 is exactly the lower case.) */
static int shaped_anchor(const char *s, Py_ssize_t n, int urls)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    const uint64_t dashes = ones * (uint64_t)'-', bees = ones * (uint64_t)'b';
    const uint64_t colons = ones * (uint64_t)':', lower = ones * 0x20u;
    for (Py_ssize_t i = 0; i < n; i += 8) {
        Py_ssize_t len = n - i < 8 ? n - i : 8;
        uint64_t x = 0; /* a last, shorter word is padded with NULs: none is a byte looked for */
        if (len == 8)
            memcpy(&x, s + i, 8);
        else
            memcpy(&x, s + i, (size_t)len);
        uint64_t a = x ^ dashes, b = (x | lower) ^ bees;
        /* a byte of zero in a, b or c: the classic test (exact for bytes below 0x80) */
        uint64_t z = ((a - ones) & ~a) | ((b - ones) & ~b);
        if (urls) {
            uint64_t c = x ^ colons;
            z |= (c - ones) & ~c;
        }
        if ((z & highs) == 0) continue;
        /* the exact bytes looked for (the test above may also mark a byte above one): each
         * is looked at where it is; a padding byte is none of them */
        uint64_t m = exact_zeros(a) | exact_zeros(b) | (urls ? exact_zeros(x ^ colons) : 0);
        while (m != 0) {
            if (anchor_at(s, n, i + (__builtin_ctzll(m) >> 3), urls)) return 1;
            m &= m - 1;
        }
    }
    return 0;
}

/* redact.has_anchor of an ASCII text (1: an anchor; a secret list of another shape counts as
 * one, so that Python decides), plus "://" with `urls`. */
static int has_anchor(const Ctx *ctx, const char *s, Py_ssize_t n, int urls)
{
    if (shaped_anchor(s, n, urls)) return 1;
    PyObject *secrets = ctx->secrets;
    Py_ssize_t count = PyTuple_GET_SIZE(secrets);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *secret = PyTuple_GET_ITEM(secrets, i);
        if (!PyUnicode_CheckExact(secret)) return 1; /* not a list this code knows: Python's */
        if (!PyUnicode_IS_ASCII(secret)) continue;   /* never inside an ASCII text */
        Py_ssize_t len = PyUnicode_GET_LENGTH(secret);
        if (len == 0 || memmem(s, (size_t)n, ascii_data(secret), (size_t)len)) return 1;
    }
    return 0;
}

/* getattr(obj, name) for the attributes the walk reads: the instance's own value, else the
 * class's plain (non-descriptor) value, exactly as object.__getattribute__ finds them, without the
 * lookups of a class-level __getattr__ hook (AimuxError has one: it only answers what is not
 * found). Anything else (a descriptor on the class, another __getattribute__, no such attribute)
 * goes through PyObject_GetAttr. New reference or NULL with an error set. */
static getattrofunc hook_getattro;       /* tp_getattro of a class with a Python __getattr__ */
static PyObject *object_getattribute;    /* object.__dict__["__getattribute__"] */
static PyObject *exception_getattribute; /* BaseException.__dict__["__getattribute__"] */

/* Whether the class finds attributes as object.__getattribute__ does (then a __getattr__ hook
 * only answers what is not found). An exception class finds BaseException's own
 * __getattribute__ (BaseException sets tp_getattro, so its __dict__ holds a slot wrapper of its
 * own): it wraps PyObject_GenericGetAttr too. */
static int standard_lookup(PyTypeObject *t)
{
    if (t->tp_getattro == PyObject_GenericGetAttr) return 1;
    if (t->tp_getattro != hook_getattro) return 0;
    PyObject *getattribute = _PyType_Lookup(t, s_getattribute);
    return getattribute == object_getattribute || getattribute == exception_getattribute;
}

/* BaseException's own descriptors of the members the walk reads from the C struct (setup()). */
static PyObject *d_cause, *d_context, *d_suppress_context, *d_args;
static const struct {
    PyObject **descr;
    PyObject **name;
} base_descrs[] = {
    {&d_cause, &s_dunder_cause},
    {&d_context, &s_dunder_context},
    {&d_suppress_context, &s_dunder_suppress},
    {&d_args, &s_args},
};

/* What the walk decides from an exception's class alone, kept per class while the class's
 * version tag is the same: CPython gives a class a new tag after any change to it or to a base
 * (PyType_Modified: an attribute set or deleted, __bases__, a slot), and never reuses a tag; its
 * own method cache (_PyType_Lookup) relies on the same tag. The class is not held: an entry is
 * matched by address and tag together. A class without a valid tag (tags run out) is computed
 * every time. Read anew at every use (info_of), so a class changed in the middle of a walk (a
 * finalizer) is seen changed at the next use, as the lookups it replaces would see it. */
typedef struct {
    PyTypeObject *type;
    unsigned int tag;
    unsigned char standard;  /* standard_lookup */
    unsigned char members;   /* keeps_exception_members */
    unsigned char own_class; /* finds object's __class__: isinstance is the subclass test */
    unsigned char aimux, retry, source; /* subclass of AimuxError, RetryError, SourceError */
    unsigned char keeps_children;       /* finds AimuxError.cause_children */
    unsigned char keeps_fields;         /* finds AimuxError.payload_fields */
    unsigned char keeps_props;          /* finds AimuxError's retryable and retry_after_ms */
    unsigned char own_retryable;        /* finds _own_retryable: 1 AimuxError's, 2 APICallError's */
    unsigned char own_after;            /* finds _own_retry_after_ms: the same */
    unsigned char api_retryable;        /* finds APICallError.is_retryable (the property) */
    unsigned char api_headers;          /* finds APICallError.response_headers (the property) */
    unsigned char answerable;           /* answer() may write it (class_answerable) */
} TypeInfo;

#define TYPE_INFO_SLOTS 64
static TypeInfo type_infos[TYPE_INFO_SLOTS];
static PyObject *object_class; /* object.__dict__["__class__"] */

static int tag_valid(PyTypeObject *t) { return PyType_HasFeature(t, Py_TPFLAGS_VALID_VERSION_TAG); }

static unsigned char which_function(PyTypeObject *t, PyObject *name, PyObject *base, PyObject *api)
{
    PyObject *found = _PyType_Lookup(t, name);
    return found == NULL ? 0 : found == base ? 1 : found == api ? 2 : 0;
}

static unsigned char class_answerable(PyTypeObject *t, const TypeInfo *info);

static TypeInfo compute_info(PyTypeObject *t)
{
    TypeInfo info;
    memset(&info, 0, sizeof info);
    info.type = t;
    info.standard = (unsigned char)standard_lookup(t); /* a lookup: assigns a tag if it can */
    info.tag = t->tp_version_tag;
    int members = 1;
    for (size_t i = 0; i < sizeof base_descrs / sizeof *base_descrs; i++) {
        PyObject *descr = *base_descrs[i].descr;
        if (descr == NULL || _PyType_Lookup(t, *base_descrs[i].name) != descr) members = 0;
    }
    info.members = (unsigned char)members;
    info.own_class = object_class != NULL && _PyType_Lookup(t, s_class) == object_class;
    info.aimux = (unsigned char)PyType_IsSubtype(t, (PyTypeObject *)g_aimux_error);
    info.retry = (unsigned char)PyType_IsSubtype(t, (PyTypeObject *)g_retry_error);
    info.source = (unsigned char)PyType_IsSubtype(t, (PyTypeObject *)g_source_error);
    info.keeps_children = _PyType_Lookup(t, s_cause_children) == g_cause_children;
    info.keeps_fields = _PyType_Lookup(t, s_payload_fields) == g_payload_fields;
    info.keeps_props = _PyType_Lookup(t, s_retryable) == g_retryable &&
                       _PyType_Lookup(t, s_retry_after_ms) == g_retry_after_ms;
    info.own_retryable = which_function(t, s_own_retryable, g_own_retryable, g_api_own_retryable);
    info.own_after = which_function(t, s_own_retry_after, g_own_retry_after, g_api_own_retry_after);
    info.api_retryable =
        g_api_is_retryable != NULL && _PyType_Lookup(t, s_is_retryable) == g_api_is_retryable;
    info.api_headers =
        g_api_headers != NULL && _PyType_Lookup(t, s_response_headers) == g_api_headers;
    info.answerable = class_answerable(t, &info);
    return info;
}

/* Whether _wire is (field, wire name) pairs of exact str, the wire names distinct and none
 * "name": the payload dict the walk builds would otherwise keep one member where the writer
 * writes two. (A tuple of tuples of str: what it answers holds while the class's tag does.) */
static int plain_wire(PyObject *wire)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(wire); i++) {
        PyObject *pair = PyTuple_GET_ITEM(wire, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyUnicode_CheckExact(PyTuple_GET_ITEM(pair, 0)))
            return 0;
        PyObject *key = PyTuple_GET_ITEM(pair, 1);
        if (!PyUnicode_CheckExact(key) || PyUnicode_Compare(key, s_name) == 0) return 0;
        for (Py_ssize_t j = 0; j < i; j++)
            if (PyUnicode_Compare(key, PyTuple_GET_ITEM(PyTuple_GET_ITEM(wire, j), 1)) == 0)
                return 0;
    }
    return 1;
}

/* Whether answer() may stand for cls._of_values, as far as the class alone decides (kept in
 * TypeInfo while the class's version tag holds; answer() still checks the metaclass, which a
 * tag does not follow): the walk would take the built error's node (an AimuxError, not a
 * RetryError nor a SourceError, the base payload_fields and cause_children, BaseException's
 * members, the standard lookup), its root's hooks are AimuxError's (retryable false, no
 * retryAfterMs), it is built by AimuxError's own _of_values (BaseException's __new__, the generic
 * setattr), nothing on the class stands in for the instance's own message and _values, and its
 * _wire is plain (plain_wire). */
static unsigned char class_answerable(PyTypeObject *t, const TypeInfo *info)
{
    if (!info->aimux || info->retry || info->source || !info->standard || !info->members ||
        !info->keeps_children || !info->keeps_fields || !info->keeps_props ||
        info->own_retryable != 1 || info->own_after != 1)
        return 0;
    if (t->tp_setattro != PyObject_GenericSetAttr ||
        t->tp_new != ((PyTypeObject *)PyExc_BaseException)->tp_new)
        return 0;
    PyObject *of_values = _PyType_Lookup(t, s_of_values);
    if (of_values == NULL ||
        of_values != _PyType_Lookup((PyTypeObject *)g_aimux_error, s_of_values))
        return 0;
    if (_PyType_Lookup(t, s_message) != NULL || _PyType_Lookup(t, s_values) != NULL) return 0;
    if (_PyType_Lookup(t, s_extra) != Py_None || _PyType_Lookup(t, s_wire_root) != Py_None)
        return 0;
    PyObject *wire = _PyType_Lookup(t, s_wire);
    return wire != NULL && PyTuple_CheckExact(wire) && plain_wire(wire);
}

/* The class's TypeInfo as it is now. */
static TypeInfo info_of(PyTypeObject *t)
{
    TypeInfo *slot = &type_infos[((uintptr_t)t >> 6) % TYPE_INFO_SLOTS];
    if (slot->type == t && tag_valid(t) && slot->tag == t->tp_version_tag) return *slot;
    TypeInfo info = compute_info(t);
    /* no allocation ran in between: kept only when the tag was valid throughout */
    if (tag_valid(t) && t->tp_version_tag == info.tag) *slot = info;
    return info;
}

/* isinstance(exc, cls) for one of the walk's classes (`sub`: its class is a subclass of cls):
 * the subclass test is the answer when cls's metaclass is type and exc's class finds object's own
 * __class__ through the standard lookup (then exc.__class__ is its type); otherwise the full
 * PyObject_IsInstance (a __class__ of its own may claim another class). */
static int is_instance(PyObject *exc, PyObject *cls, int which)
{
    if (!Py_IS_TYPE(cls, &PyType_Type)) return PyObject_IsInstance(exc, cls);
    TypeInfo info = info_of(Py_TYPE(exc));
    int sub = which == 0 ? info.aimux : which == 1 ? info.retry : info.source;
    if (sub) return 1;
    if (info.own_class && info.standard) return 0;
    return PyObject_IsInstance(exc, cls);
}
enum { IS_AIMUX = 0, IS_RETRY = 1, IS_SOURCE = 2 };

static PyObject *get_attr(PyObject *obj, PyObject *name)
{
    PyTypeObject *t = Py_TYPE(obj);
    if (!info_of(t).standard) return PyObject_GetAttr(obj, name);
    /* held for the whole lookup, as PyObject_GenericGetAttr holds it: a colliding key's __eq__
     * in the instance dict may delete the class attribute */
    PyObject *descr = Py_XNewRef(_PyType_Lookup(t, name));
    if (descr != NULL && Py_TYPE(descr)->tp_descr_get != NULL) {
        Py_DECREF(descr);
        return PyObject_GetAttr(obj, name);
    }
    PyObject **dictptr = _PyObject_GetDictPtr(obj);
    if (dictptr != NULL && *dictptr != NULL) {
        PyObject *dict = Py_NewRef(*dictptr);
        PyObject *v = Py_XNewRef(PyDict_GetItemWithError(dict, name));
        Py_DECREF(dict);
        if (v != NULL || PyErr_Occurred()) {
            Py_XDECREF(descr);
            return v;
        }
    }
    if (descr != NULL) return descr;
    return PyObject_GetAttr(obj, name);
}

/* Whether the instance's own __dict__ holds `name`: 1, 0, or -1 with an error set. */
static int instance_has(PyObject *obj, PyObject *name)
{
    PyObject **dictptr = _PyObject_GetDictPtr(obj);
    if (dictptr == NULL || *dictptr == NULL) return 0;
    PyObject *dict = Py_NewRef(*dictptr);
    int rc = PyDict_Contains(dict, name);
    Py_DECREF(dict);
    return rc;
}

/* Whether err.<own hook> is the class's function of that kind (TypeInfo.own_retryable /
 * own_after: 1 AimuxError's, 2 APICallError's), not shadowed by the instance. */
static int is_own_hook(PyObject *err, PyObject *own_name, unsigned char kind)
{
    TypeInfo info = info_of(Py_TYPE(err));
    unsigned char found = own_name == s_own_retryable ? info.own_retryable : info.own_after;
    if (!info.standard || found != kind) return 0;
    int has = instance_has(err, own_name);
    return has < 0 ? -1 : !has;
}

/* -- texts ----------------------------------------------------------------------------------- */

/* causes._message_text for a message of at most 1 KiB of ASCII without NUL (its fast path);
 * NULL with *status FALLBACK for any other message. */
static PyObject *message_text(const Ctx *ctx, PyObject *raw, int *status)
{
    *status = FALLBACK;
    if (!ascii_text(raw)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(raw);
    const char *s = ascii_data(raw);
    if (n > MESSAGE_BYTES || memchr(s, 0, (size_t)n)) return NULL;
    if (!has_anchor(ctx, s, n, 1)) {
        *status = OK;
        return Py_NewRef(raw);
    }
    PyObject *text = PyObject_CallOneArg(g_scrub_message, raw);
    if (text == NULL) {
        *status = settle();
        return NULL;
    }
    if (PyUnicode_Check(text) && PyUnicode_IS_ASCII(text) &&
        PyUnicode_GET_LENGTH(text) <= MESSAGE_BYTES) {
        *status = OK;
        return text;
    }
    Py_DECREF(text);
    return NULL;
}

/* -- payload values -------------------------------------------------------------------------- */

static int plain_scalar(PyObject *v)
{
    PyTypeObject *t = Py_TYPE(v);
    if (v == Py_None || t == &PyLong_Type || t == &PyBool_Type) return 1;
    return t == &PyFloat_Type && isfinite(PyFloat_AS_DOUBLE(v));
}

/* Whether a member of this (ASCII) name holding a string is redacted (redact.is_secret_header):
 * OK not secret, FALLBACK secret (or undecided), ERR. */
static int member_not_secret(PyObject *key)
{
    static const char *const words[] = {"auth",   "cookie",   "api",       "token",
                                        "secret", "password", "credential"};
    const char *s = ascii_data(key);
    Py_ssize_t n = PyUnicode_GET_LENGTH(key);
    int any = 0;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        if (has_word_ci(s, n, words[i], (Py_ssize_t)strlen(words[i]))) {
            any = 1;
            break;
        }
    }
    if (!any) return OK;
    PyObject *got = PyObject_CallOneArg(g_is_secret_header, key);
    if (got == NULL) return settle();
    int secret = got != Py_False;
    Py_DECREF(got);
    return secret ? FALLBACK : OK;
}

/* causes._small_clean of a list or dict when nothing in it needs scrubbing or redacting: a copy
 * (new lists and dicts, the same strings and numbers) while _small_bound's bound stays within
 * the limit. *bound accumulates the bound. */
static PyObject *small_copy(const Ctx *ctx, PyObject *value, int depth, Py_ssize_t *bound,
                            int *status);

static int small_text(const Ctx *ctx, PyObject *v)
{
    if (!ascii_text(v)) return FALLBACK;
    return has_anchor(ctx, ascii_data(v), PyUnicode_GET_LENGTH(v), 0) ? FALLBACK : OK;
}

static PyObject *small_copy(const Ctx *ctx, PyObject *value, int depth, Py_ssize_t *bound,
                            int *status)
{
    *status = FALLBACK;
    if (depth > BOUND_DEPTH) return NULL;
    int dict = PyDict_CheckExact(value);
    if (!dict && !PyList_CheckExact(value))
        return NULL; /* a tuple, a model, a non-finite float, ...: Python's */
    PyObject *out = dict ? PyDict_New() : PyList_New(0);
    if (out == NULL) {
        *status = ERR;
        return NULL;
    }
    int st = OK;
    Py_ssize_t total = 2;
    Py_ssize_t pos = 0, i = 0;
    for (;;) {
        PyObject *k = NULL, *v;
        if (dict) {
            if (!PyDict_Next(value, &pos, &k, &v)) break;
            /* a key with a scrub anchor is scrubbed by Python (causes._clean) */
            if (!ascii_text(k) || has_anchor(ctx, ascii_data(k), PyUnicode_GET_LENGTH(k), 0)) {
                st = FALLBACK;
                break;
            }
            Py_INCREF(k);
        } else {
            if (i >= PyList_GET_SIZE(value)) break;
            v = PyList_GET_ITEM(value, i++);
        }
        Py_INCREF(v);
        Py_ssize_t klen = k ? PyUnicode_GET_LENGTH(k) : 0;
        PyObject *item = NULL;
        if (PyUnicode_CheckExact(v)) {
            st = small_text(ctx, v);
            if (st == OK && k != NULL) st = member_not_secret(k);
            if (st == OK) {
                Py_ssize_t vlen = PyUnicode_GET_LENGTH(v);
                total += k ? 6 * (klen + vlen) + 6 : 6 * vlen + 3;
                item = Py_NewRef(v);
            }
        } else if (plain_scalar(v)) {
            total += k ? 6 * klen + 28 : 25;
            item = Py_NewRef(v);
        } else {
            Py_ssize_t inner = 0;
            item = small_copy(ctx, v, depth + 1, &inner, &st);
            if (item != NULL) total += k ? 6 * klen + 4 + inner : inner + 1;
        }
        Py_DECREF(v);
        if (item != NULL) {
            int rc = k ? PyDict_SetItem(out, k, item) : PyList_Append(out, item);
            Py_DECREF(item);
            if (rc < 0)
                st = ERR;
            else if (total > VALUE_BYTES)
                st = FALLBACK; /* over the bound: _bounded_value's (Python's) */
        }
        Py_XDECREF(k);
        if (st != OK) break;
    }
    if (st != OK) {
        Py_DECREF(out);
        *status = st;
        return NULL;
    }
    *bound = total;
    *status = OK;
    return out;
}

/* One payload field value as causes._plain_payload gives it (NULL + *status otherwise). */
static PyObject *field_value(const Ctx *ctx, PyObject *value, int *status)
{
    *status = FALLBACK;
    PyTypeObject *t = Py_TYPE(value);
    if (t == &PyUnicode_Type) {
        if (!PyUnicode_IS_ASCII(value) || PyUnicode_GET_LENGTH(value) > VALUE_BYTES) return NULL;
        if (!has_anchor(ctx, ascii_data(value), PyUnicode_GET_LENGTH(value), 0)) {
            *status = OK;
            return Py_NewRef(value);
        }
        PyObject *text = PyObject_CallOneArg(g_scrub_text, value);
        if (text == NULL) {
            *status = settle();
            return NULL;
        }
        *status = OK;
        return text;
    }
    if (t == &PyBool_Type || t == &PyLong_Type) {
        *status = OK;
        return Py_NewRef(value);
    }
    if (t == &PyFloat_Type) {
        if (!isfinite(PyFloat_AS_DOUBLE(value))) return NULL;
        *status = OK;
        return Py_NewRef(value);
    }
    if (t == &PyList_Type || t == &PyDict_Type) {
        Py_ssize_t bound = 0;
        PyObject *out = small_copy(ctx, value, 0, &bound, status);
        if (out != NULL || *status != FALLBACK || t != &PyList_Type || g_dump_models == NULL ||
            PyList_GET_SIZE(value) == 0)
            return out;
        /* causes._plain_payload: a list that is not plain JSON and whose members are all
         * instances of simple models (violations) is what errors.dump_models dumps, then
         * cleaned by _bounded_value (its _small_clean: this copy); dump_models reads the
         * models (no code of theirs runs) and answers None for anything else. A plain first
         * member: not such a list (dump_models would answer None). */
        PyObject *first = PyList_GET_ITEM(value, 0);
        PyTypeObject *ft = Py_TYPE(first);
        if (ft == &PyUnicode_Type || ft == &PyList_Type || ft == &PyDict_Type ||
            plain_scalar(first) || ft == &PyFloat_Type)
            return NULL;
        PyObject *dumped = PyObject_CallOneArg(g_dump_models, value);
        if (dumped == NULL) {
            *status = settle();
            return NULL;
        }
        if (PyList_CheckExact(dumped)) out = small_copy(ctx, dumped, 0, &bound, status);
        Py_DECREF(dumped);
        return out;
    }
    return NULL;
}

/* -- nodes ----------------------------------------------------------------------------------- */

/* node["error"] of an aimux node: {"name": ..., camelCase fields} (causes._plain_payload). */
static int payload(const Ctx *ctx, PyObject *exc, PyObject *node)
{
    if (!info_of(Py_TYPE(exc)).keeps_fields) return FALLBACK;
    int rc = FALLBACK;
    PyObject *extra = NULL, *values = NULL, *wire = NULL, *name = NULL, *error = NULL;
    extra = get_attr(exc, s_extra);
    if (extra == NULL) return settle();
    int truth = PyObject_IsTrue(extra);
    if (truth != 0) {
        rc = truth < 0 ? settle() : FALLBACK;
        goto done;
    }
    values = get_attr(exc, s_values);
    wire = values ? get_attr(exc, s_wire) : NULL;
    name = wire ? get_attr(exc, s_error_name) : NULL;
    if (name == NULL) {
        rc = settle();
        goto done;
    }
    if (!PyDict_CheckExact(values) || !PyTuple_CheckExact(wire) || !PyUnicode_CheckExact(name))
        goto done;
    error = PyDict_New();
    if (error == NULL || PyDict_SetItem(error, s_name, name) < 0) {
        rc = ERR;
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(wire); i++) {
        PyObject *pair = PyTuple_GET_ITEM(wire, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyUnicode_CheckExact(PyTuple_GET_ITEM(pair, 0)) ||
            !PyUnicode_CheckExact(PyTuple_GET_ITEM(pair, 1)))
            goto done;
        PyObject *value = PyDict_GetItemWithError(values, PyTuple_GET_ITEM(pair, 0));
        if (value == NULL) {
            if (PyErr_Occurred()) {
                rc = settle();
                goto done;
            }
            continue;
        }
        if (value == Py_None) continue;
        Py_INCREF(value);
        int st;
        PyObject *out = field_value(ctx, value, &st);
        Py_DECREF(value);
        if (out == NULL) {
            rc = st == ERR ? settle() : st;
            goto done;
        }
        int set = PyDict_SetItem(error, PyTuple_GET_ITEM(pair, 1), out);
        Py_DECREF(out);
        if (set < 0) {
            rc = ERR;
            goto done;
        }
    }
    rc = PyDict_SetItem(node, s_error, error) < 0 ? ERR : OK;
done:
    Py_XDECREF(extra);
    Py_XDECREF(values);
    Py_XDECREF(wire);
    Py_XDECREF(name);
    Py_XDECREF(error);
    return rc;
}

/* Sets a node member to a new reference (stolen). */
static int put(PyObject *node, PyObject *key, PyObject *value)
{
    if (value == NULL) return ERR;
    int rc = PyDict_SetItem(node, key, value);
    Py_DECREF(value);
    return rc < 0 ? ERR : OK;
}

/* The members of an aimux node up to its error payload; *next = __cause__ (new ref or NULL). */
static int aimux_node(const Ctx *ctx, PyObject *exc, PyObject *node, PyObject **next)
{
    int rc = is_instance(exc, g_retry_error, IS_RETRY);
    if (rc != 0) return rc < 0 ? settle() : FALLBACK;
    if (!info_of(Py_TYPE(exc)).keeps_children) return FALLBACK;
    /* an instance's own cause_children / payload_fields (set on the error) is Python's */
    rc = instance_has(exc, s_cause_children);
    if (rc == 0) rc = instance_has(exc, s_payload_fields);
    if (rc != 0) return rc < 0 ? settle() : FALLBACK;
    PyObject *kind = get_attr(exc, s_kind);
    PyObject *code = kind ? get_attr(exc, s_code) : NULL;
    PyObject *raw = code ? get_attr(exc, s_message) : NULL;
    if (raw == NULL) {
        Py_XDECREF(kind);
        Py_XDECREF(code);
        return settle();
    }
    rc = FALLBACK;
    if (PyUnicode_CheckExact(kind) && PyLong_CheckExact(code)) {
        int st;
        PyObject *message = message_text(ctx, raw, &st);
        if (message != NULL) {
            rc = put(node, s_kind, Py_NewRef(kind));
            if (rc == OK) rc = put(node, s_code, Py_NewRef(code));
            if (rc == OK) rc = put(node, s_message, Py_NewRef(message));
            if (rc == OK) rc = payload(ctx, exc, node);
            Py_DECREF(message);
        } else {
            rc = st;
        }
    }
    Py_DECREF(kind);
    Py_DECREF(code);
    Py_DECREF(raw);
    if (rc == OK) *next = PyException_GetCause(exc);
    return rc;
}

/* Whether str() of this exception is a builtin exception's over plain values (no Python code
 * runs, the same text every time). */
static int plain_exception(PyObject *exc, int depth)
{
    PyTypeObject *t = Py_TYPE(exc);
    if (t->tp_repr != base_repr) return 0;
    if (t->tp_str != base_str && t->tp_str != oserror_str && t->tp_str != keyerror_str) return 0;
    if (PyObject_TypeCheck(exc, (PyTypeObject *)PyExc_OSError)) {
        PyOSErrorObject *os = (PyOSErrorObject *)exc;
        PyObject *fields[] = {os->myerrno, os->strerror, os->filename, os->filename2};
        for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
            if (fields[i] != NULL && !PyUnicode_CheckExact(fields[i]) && !plain_scalar(fields[i]))
                return 0;
        }
    }
    PyObject *args = ((PyBaseExceptionObject *)exc)->args;
    if (args == NULL || !PyTuple_CheckExact(args)) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        if (PyUnicode_CheckExact(a) || plain_scalar(a)) continue;
        if (PyExceptionInstance_Check(a) && depth < PLAIN_EXC_DEPTH &&
            plain_exception(a, depth + 1))
            continue;
        return 0;
    }
    return 1;
}

/* causes.exception_type_name of a class: ``package.ClassName`` (``ClassName`` for builtins). */
static PyObject *compute_type_name(PyTypeObject *t)
{
    PyObject *module = PyObject_GetAttr((PyObject *)t, s_module);
    if (module == NULL) return NULL;
    PyObject *qual = PyObject_GetAttr((PyObject *)t, s_qualname);
    if (qual == NULL) {
        Py_DECREF(module);
        return NULL;
    }
    PyObject *out = NULL;
    if (!PyUnicode_CheckExact(module) || !PyUnicode_CheckExact(qual)) {
        PyErr_SetString(PyExc_TypeError, "a class without str __module__ / __qualname__");
        goto done;
    }
    Py_ssize_t dot = PyUnicode_FindChar(module, '.', 0, PyUnicode_GET_LENGTH(module), 1);
    if (dot == -2) goto done;
    PyObject *first = dot < 0 ? Py_NewRef(module) : PyUnicode_Substring(module, 0, dot);
    if (first == NULL) goto done;
    if (PyUnicode_Compare(first, s_builtins) == 0)
        out = Py_NewRef(qual);
    else if (!PyErr_Occurred())
        out = PyUnicode_FromFormat("%U.%U", first, qual);
    Py_DECREF(first);
done:
    Py_DECREF(module);
    Py_DECREF(qual);
    return out;
}

/* Per class: {id(class): (weakref(class), its __module__, its __qualname__, the name)} as last
 * computed; a class whose __module__ or __qualname__ was set since (another object) is computed
 * again, and an entry whose weak reference no longer points at the class (collected: the id may
 * be another class's now) too. The class itself is never held: a local exception class is
 * collected as in pure Python. Classes of other metaclasses are always computed. Bounded: cleared
 * when full. */
static PyObject *g_type_names;
#define TYPE_NAMES_MAX 512

static PyObject *type_name(PyTypeObject *t)
{
    if (Py_TYPE(t) != &PyType_Type) return compute_type_name(t);
    /* strong references for the whole function: an allocation below may run a finalizer that
     * renames the class (frees the old __module__ / __qualname__) */
    PyObject *module, *qual;
    if (PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE)) {
        module = Py_XNewRef(PyDict_GetItemWithError(t->tp_dict, s_module));
        if (module == NULL) return PyErr_Occurred() ? NULL : compute_type_name(t);
        qual = Py_NewRef(((PyHeapTypeObject *)t)->ht_qualname);
    } else {
        module = Py_NewRef(Py_None);
        qual = Py_NewRef(Py_None);
    }
    PyObject *key = NULL, *name = NULL, *held = NULL, *ref = NULL, *entry = NULL;
    if (g_type_names == NULL && (g_type_names = PyDict_New()) == NULL) goto done;
    key = PyLong_FromVoidPtr(t);
    if (key == NULL) goto done;
    held = Py_XNewRef(PyDict_GetItemWithError(g_type_names, key));
    if (held == NULL && PyErr_Occurred()) goto done;
    if (held != NULL && PyWeakref_GetObject(PyTuple_GET_ITEM(held, 0)) == (PyObject *)t &&
        PyTuple_GET_ITEM(held, 1) == module && PyTuple_GET_ITEM(held, 2) == qual) {
        name = Py_NewRef(PyTuple_GET_ITEM(held, 3));
        goto done;
    }
    name = compute_type_name(t);
    if (name == NULL) goto done;
    if (PyDict_GET_SIZE(g_type_names) >= TYPE_NAMES_MAX) PyDict_Clear(g_type_names);
    ref = PyWeakref_NewRef((PyObject *)t, NULL);
    entry = ref ? PyTuple_Pack(4, ref, module, qual, name) : NULL;
    if (entry == NULL || PyDict_SetItem(g_type_names, key, entry) < 0) Py_CLEAR(name);
done:
    Py_XDECREF(entry);
    Py_XDECREF(ref);
    Py_XDECREF(held);
    Py_XDECREF(key);
    Py_DECREF(module);
    Py_DECREF(qual);
    return name;
}

/* causes.next_link: __cause__, else __context__ unless suppressed, else an exception wrapped as
 * the first argument (new reference or NULL). */
static PyObject *next_link(PyObject *exc)
{
    PyObject *cause = PyException_GetCause(exc);
    if (cause != NULL) return cause;
    if (!((PyBaseExceptionObject *)exc)->suppress_context) {
        PyObject *context = PyException_GetContext(exc);
        if (context != NULL) return context;
    }
    PyObject *args = ((PyBaseExceptionObject *)exc)->args;
    if (args != NULL && PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 &&
        PyExceptionInstance_Check(PyTuple_GET_ITEM(args, 0)))
        return Py_NewRef(PyTuple_GET_ITEM(args, 0));
    return NULL;
}

/* The members of a source node ({message, type}); *next as causes.next_link. */
static int source_node(const Ctx *ctx, PyObject *exc, PyObject *node, PyObject **next)
{
    PyObject *raw, *type;
    int rc = is_instance(exc, g_source_error, IS_SOURCE);
    if (rc < 0) return settle();
    if (rc) {
        raw = get_attr(exc, s_message);
        type = raw ? get_attr(exc, s_type) : NULL;
        if (type == NULL) {
            Py_XDECREF(raw);
            return settle();
        }
        if (!PyUnicode_CheckExact(type) || PyUnicode_GET_LENGTH(type) == 0) {
            Py_DECREF(raw);
            Py_DECREF(type);
            return FALLBACK;
        }
    } else {
        if (!plain_exception(exc, 0)) return FALLBACK;
        raw = PyObject_Str(exc);
        if (raw == NULL) return settle();
        type = type_name(Py_TYPE(exc));
        if (type == NULL) {
            Py_DECREF(raw);
            return settle();
        }
    }
    int st;
    PyObject *message = message_text(ctx, raw, &st);
    Py_DECREF(raw);
    if (message == NULL) {
        Py_DECREF(type);
        return st;
    }
    rc = put(node, s_message, message);
    if (rc == OK) rc = put(node, s_type, Py_NewRef(type));
    Py_DECREF(type);
    if (rc == OK) *next = next_link(exc);
    return rc;
}

/* -- root() ---------------------------------------------------------------------------------- */

/* envelope.RETRY_AFTER_MAX_MS (setup()): the largest retryAfterMs written or reported. */
static long long g_retry_after_max = -1;

/* Whether an int is a retryAfterMs from 0 to envelope.RETRY_AFTER_MAX_MS. */
static int after_in_range(PyObject *after)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(after, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return overflow == 0 && v >= 0 && v <= g_retry_after_max;
}

/* Whether an ASCII str equals the lower-case ASCII `word` once lower-cased (str.lower of ASCII). */
static int ascii_lower_equals(PyObject *s, const char *word, Py_ssize_t w)
{
    if (PyUnicode_GET_LENGTH(s) != w) return 0;
    const char *t = ascii_data(s);
    for (Py_ssize_t i = 0; i < w; i++) {
        char c = t[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != word[i]) return 0;
    }
    return 1;
}

/* float(text) of an exact str (what float() does for one: PyFloat_FromString): 1 with *v, 0 a
 * ValueError (not a number), -1 any other error. */
static int parse_float(PyObject *text, double *v)
{
    PyObject *f = PyFloat_FromString(text);
    if (f == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1;
        PyErr_Clear();
        return 0;
    }
    *v = PyFloat_AS_DOUBLE(f);
    Py_DECREF(f);
    return 1;
}

/* parse_retry_after's values (strong references, or NULL when the key is absent). */
static int retry_after_of(PyObject *raw_ms, PyObject *raw, PyObject **out)
{
    double ms = 0;
    int have = 0;
    if (raw_ms != NULL && raw_ms != Py_None) {
        if (!PyUnicode_CheckExact(raw_ms)) return 0;
        have = parse_float(raw_ms, &ms);
        if (have < 0) return -1;
    }
    if (raw != NULL && raw != Py_None && !have) {
        if (!PyUnicode_CheckExact(raw)) return 0;
        int got = parse_float(raw, &ms);
        if (got < 0) return -1;
        if (got == 0) return 0; /* perhaps an HTTP date: Python's (it reads the clock) */
        ms *= 1000;
        have = 1;
    }
    if (!have || ms != ms || ms < 0 || ms == INFINITY) {
        *out = Py_NewRef(Py_None);
        return 1;
    }
    *out = PyLong_FromDouble(ms);
    return *out == NULL ? -1 : 1;
}

/* errors.aimux._parse_retry_after_ms of a non-empty exact dict, when it needs no date: keys
 * exact ASCII str (lowered as str.lower lowers them; the last of equal lowered keys wins, as in
 * its dict comprehension), the values read exact str or None, "retry-after-ms" a number or not,
 * "retry-after" a number when it is read. 1 with *out (new reference: an int or None), 0 when
 * the Python function must run (a date, another key or value type), -1 an error set. */
static int parse_retry_after(PyObject *headers, PyObject **out)
{
    /* borrowed while the dict is walked (PyDict_Next runs no code), then held: a failed float()
     * builds its ValueError, which may collect garbage and run a finalizer that changes the dict
     * (Python's function reads the values its own copy holds) */
    PyObject *raw_ms = NULL, *raw = NULL;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(headers, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k) || !PyUnicode_IS_ASCII(k)) return 0;
        if (ascii_lower_equals(k, "retry-after-ms", 14))
            raw_ms = v;
        else if (ascii_lower_equals(k, "retry-after", 11))
            raw = v;
    }
    Py_XINCREF(raw_ms);
    Py_XINCREF(raw);
    int rc = retry_after_of(raw_ms, raw, out);
    Py_XDECREF(raw_ms);
    Py_XDECREF(raw);
    return rc;
}

/* APICallError's own hooks, answered without running them when the error's class finds them
 * (not replaced by a subclass or the instance) and finds APICallError's own properties of the
 * fields they read: _own_retryable is ``self.is_retryable`` (the field's value: ``_values.get``),
 * _own_retry_after_ms is ``_parse_retry_after_ms(self.response_headers)`` (the module's function
 * still), which answers None for no headers (None, an empty dict) before anything else; headers
 * that need no date are parsed here as it parses them (parse_retry_after), others run the
 * method. 1 with *out (new reference), 0 not answered here, -1 an error set. */
static int api_hook(PyObject *err, PyObject *own_name, PyObject **out)
{
    int retryable = own_name == s_own_retryable;
    PyObject *function = retryable ? g_api_own_retryable : g_api_own_retry_after;
    PyObject *field = retryable ? s_is_retryable : s_response_headers;
    if (function == NULL) return 0;
    int is = is_own_hook(err, own_name, 2);
    if (is <= 0) return is;
    /* a property is a data descriptor: the instance's __dict__ cannot shadow it */
    TypeInfo info = info_of(Py_TYPE(err));
    if (!(retryable ? info.api_retryable : info.api_headers)) return 0;
    if (!retryable) {
        PyObject *parse =
            PyDict_GetItemWithError(PyFunction_GET_GLOBALS(function), s_parse_retry_after);
        if (parse != g_parse_retry_after) return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *values = get_attr(err, s_values);
    if (values == NULL) return -1;
    int rc = 0;
    if (PyDict_CheckExact(values)) {
        PyObject *v = Py_XNewRef(PyDict_GetItemWithError(values, field));
        if (v == NULL && PyErr_Occurred()) {
            rc = -1;
        } else if (retryable) {
            *out = v != NULL ? v : Py_NewRef(Py_None);
            rc = 1;
        } else if (v == NULL || v == Py_None || (PyDict_CheckExact(v) && PyDict_GET_SIZE(v) == 0)) {
            Py_XDECREF(v);
            *out = Py_NewRef(Py_None);
            rc = 1;
        } else {
            if (PyDict_CheckExact(v)) rc = parse_retry_after(v, out);
            Py_DECREF(v);
        }
    }
    Py_DECREF(values);
    return rc;
}

/* One of the root's hooks, as AimuxError's property answers it (``wire[i] if wire is not None
 * else self._own_...()``) when the class keeps that property: the error's own method called
 * directly (its base version's answer, `base`, without running it); the property otherwise. New
 * reference, or NULL with an error set. */
static PyObject *root_hook(PyObject *err, int keeps, PyObject *wire, PyObject *prop_name,
                           PyObject *own_name, PyObject *own_base, PyObject *base)
{
    if (!keeps || wire != Py_None) return PyObject_GetAttr(err, prop_name);
    int base_own = is_own_hook(err, own_name, 1);
    if (base_own < 0) return NULL;
    if (base_own) return Py_NewRef(base);
    PyObject *answer = NULL;
    int api = api_hook(err, own_name, &answer);
    if (api < 0) return NULL;
    if (api) return answer;
    PyObject *method = PyObject_GetAttr(err, own_name);
    if (method == NULL) return NULL;
    if (PyMethod_Check(method) && PyMethod_GET_FUNCTION(method) == own_base &&
        PyMethod_GET_SELF(method) == err) {
        Py_DECREF(method);
        return Py_NewRef(base);
    }
    PyObject *out = PyObject_CallNoArgs(method);
    Py_DECREF(method);
    return out;
}

/* envelope._root's retryable and retryAfterMs members. */
static int root_fields(PyObject *err, PyObject *root)
{
    int keeps = info_of(Py_TYPE(err)).keeps_props;
    PyObject *wire = keeps ? get_attr(err, s_wire_root) : Py_NewRef(Py_None);
    if (wire == NULL) return settle();
    int rc = OK;
    PyObject *retryable =
        root_hook(err, keeps, wire, s_retryable, s_own_retryable, g_own_retryable, Py_False);
    int truth = retryable ? PyObject_IsTrue(retryable) : -1;
    Py_XDECREF(retryable);
    if (truth < 0) {
        Py_DECREF(wire);
        return settle();
    }
    rc = put(root, s_retryable, Py_NewRef(truth ? Py_True : Py_False));
    PyObject *after = rc != OK ? NULL
                               : root_hook(err, keeps, wire, s_retry_after_ms, s_own_retry_after,
                                           g_own_retry_after, Py_None);
    Py_DECREF(wire);
    if (rc != OK) return rc;
    if (after == NULL) return settle();
    if (after == Py_None) {
        Py_DECREF(after);
        return OK;
    }
    if (PyBool_Check(after) || PyFloat_CheckExact(after)) {
        /* envelope._root's ``0 <= after <= RETRY_AFTER_MAX_MS`` then ``int(after)``, here, so
         * that the hooks (already called) are not called again by a fallback: a bool is 0 / 1;
         * a float compares exactly (RETRY_AFTER_MAX_MS < 2**53 is a double) and truncates, NaN
         * and the infinities are out of range */
        double v = PyBool_Check(after) ? (after == Py_True ? 1.0 : 0.0) : PyFloat_AS_DOUBLE(after);
        Py_DECREF(after);
        if (!(v >= 0.0 && v <= (double)g_retry_after_max)) return OK;
        return put(root, s_retryAfterMs, PyLong_FromDouble(v));
    }
    /* int(after) of another type: Python's (its hooks run again there: docs/DESIGN.md) */
    if (!PyLong_CheckExact(after)) {
        Py_DECREF(after);
        return FALLBACK;
    }
    if (!after_in_range(after)) { /* envelope.RETRY_AFTER_MAX_MS: no hint beyond it */
        Py_DECREF(after);
        return OK;
    }
    return put(root, s_retryAfterMs, after);
}

/* envelope._root(err, DEFAULT_LIMITS) of an AimuxError: the root node with its chain, retryable
 * and retryAfterMs; FALLBACK when any node is not one this code handles. */
static int project_root(const Ctx *ctx, PyObject *err, PyObject **out)
{
    PyObject *seen[MAX_DEPTH + 1];
    int nseen = 0;
    int rc = OK;
    int root_cut = 0;
    PyObject *root = PyDict_New();
    if (root == NULL) return ERR;
    PyObject *node = root; /* borrowed (held by root) */
    PyObject *exc = Py_NewRef(err);
    int depth = 1;
    for (;;) {
        seen[nseen++] = exc; /* owned */
        PyObject *next = NULL;
        /* the class finds BaseException's own __cause__, __context__, __suppress_context__
         * and args (then the C struct's members are what Python reads); a class overriding any
         * of them (a property, a class attribute) is Python's */
        if (!info_of(Py_TYPE(exc)).members) {
            rc = FALLBACK;
            break;
        }
        int is_aimux = is_instance(exc, g_aimux_error, IS_AIMUX);
        if (is_aimux < 0)
            rc = settle();
        else if (is_aimux)
            rc = aimux_node(ctx, exc, node, &next);
        else
            rc = source_node(ctx, exc, node, &next);
        if (rc != OK) {
            Py_XDECREF(next);
            break;
        }
        if (PyErr_Occurred()) { /* a failed getter of __cause__ / __context__ never sets one */
            Py_XDECREF(next);
            rc = settle();
            break;
        }
        PyObject *child = NULL;
        int cut = 0;
        if (next != NULL) {
            int cycle = 0;
            for (int i = 0; i < nseen; i++) cycle |= seen[i] == next;
            if (depth >= MAX_DEPTH || cycle) {
                cut = 1;
            } else {
                child = PyDict_New();
                if (child == NULL || PyDict_SetItem(node, s_cause, child) < 0) {
                    Py_XDECREF(child);
                    Py_DECREF(next);
                    rc = ERR;
                    break;
                }
                Py_DECREF(child); /* held by node */
            }
        }
        if (cut) {
            if (depth == 1) {
                root_cut = 1; /* after retryable / retryAfterMs, as envelope._root puts it */
            } else {
                PyObject *marks = Py_BuildValue("[O]", s_cause);
                if (put(node, s_truncated, marks) != OK) {
                    Py_XDECREF(next);
                    rc = ERR;
                    break;
                }
            }
        }
        if (child == NULL) {
            Py_XDECREF(next);
            break;
        }
        node = child;
        exc = next; /* owned, stored in seen next turn */
        depth++;
    }
    for (int i = 0; i < nseen; i++) Py_DECREF(seen[i]);
    if (rc == OK) rc = root_fields(err, root);
    if (rc == OK && root_cut) rc = put(root, s_truncated, Py_BuildValue("[O]", s_cause));
    if (rc != OK) {
        Py_DECREF(root);
        return rc;
    }
    *out = root;
    return OK;
}

static PyObject *read_secrets(void)
{
    PyObject *secrets = PyObject_GetAttr(g_redact, s_secret_list);
    if (secrets != NULL && !PyTuple_CheckExact(secrets)) {
        Py_DECREF(secrets);
        PyErr_SetString(PyExc_TypeError, "redact._secret_list is not a tuple");
        return NULL;
    }
    return secrets;
}

static int ready(void)
{
    if (g_aimux_error == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "aimux_ops._cproject.setup() was not called");
        return 0;
    }
    return 1;
}

static PyObject *cproject_root(PyObject *module, PyObject *err)
{
    (void)module;
    if (!ready()) return NULL;
    if (!PyExceptionInstance_Check(err)) return Py_NewRef(Py_None); /* Python's (and its error) */
    Ctx ctx;
    ctx.secrets = read_secrets();
    if (ctx.secrets == NULL) return settle() == ERR ? NULL : Py_NewRef(Py_None);
    PyObject *root = NULL;
    int rc = project_root(&ctx, err, &root);
    Py_DECREF(ctx.secrets);
    if (rc == ERR) {
        if (settle() == ERR) return NULL;
        rc = FALLBACK;
    }
    if (rc == FALLBACK) return Py_NewRef(Py_None);
    return root;
}

/* envelope._project(exc) for an AimuxError whose chain the walk handles: the envelope bytes,
 * with envelope._last set to (bytes, root) as _project sets it. None: not tried (not an
 * AimuxError: wrapped by Python). False: walked, and the walk left the chain to Python
 * (_project then runs the Python projection without walking again: the hooks run as often as
 * before). The root dict: its envelope is over ENVELOPE_MAX_BYTES (the tighter limits are
 * Python's). An error of orjson.dumps propagates (_project answers it as it always did). */
static PyObject *cproject_project(PyObject *module, PyObject *exc)
{
    (void)module;
    if (!ready()) return NULL;
    if (!PyExceptionInstance_Check(exc)) return Py_NewRef(Py_None);
    int is = is_instance(exc, g_aimux_error, IS_AIMUX);
    if (is <= 0) return is < 0 && settle() == ERR ? NULL : Py_NewRef(Py_None);
    Ctx ctx;
    ctx.secrets = read_secrets();
    if (ctx.secrets == NULL) return settle() == ERR ? NULL : Py_NewRef(Py_None);
    PyObject *root = NULL;
    int rc = project_root(&ctx, exc, &root);
    Py_DECREF(ctx.secrets);
    if (rc == ERR) {
        if (settle() == ERR) return NULL;
        rc = FALLBACK;
    }
    if (rc == FALLBACK) return Py_NewRef(Py_False);
    PyObject *data = PyObject_CallOneArg(g_dumps, root);
    if (data == NULL) {
        Py_DECREF(root);
        return NULL;
    }
    if (!PyBytes_CheckExact(data) || PyBytes_GET_SIZE(data) > g_envelope_max) {
        Py_DECREF(data);
        return root;
    }
    PyObject *last = PyTuple_Pack(2, data, root);
    Py_DECREF(root);
    if (last == NULL || PyDict_SetItem(g_envelope_globals, s_last, last) < 0) {
        Py_XDECREF(last);
        Py_DECREF(data);
        return NULL;
    }
    Py_DECREF(last);
    return data;
}

/* -- chain() --------------------------------------------------------------------------------- */

static PyObject *utf8(PyObject *s) { return PyUnicode_AsEncodedString(s, "utf-8", "replace"); }

/* One envelope.Link (a tuple subclass built as namedtuple's __new__ builds it). Steals nothing. */
static PyObject *make_link(PyObject *code, PyObject *kind, PyObject *name, PyObject *message,
                           PyObject *json)
{
    PyObject *items = PyTuple_Pack(5, code, kind, name, message, json);
    if (items == NULL) return NULL;
    PyObject *args = PyTuple_Pack(1, items);
    Py_DECREF(items);
    if (args == NULL) return NULL;
    PyObject *link = PyTuple_Type.tp_new((PyTypeObject *)g_link, args, NULL);
    Py_DECREF(args);
    return link;
}

/* A new reference to d[key], or NULL (an error set, or not there). */
static PyObject *dict_get(PyObject *d, PyObject *key)
{
    return Py_XNewRef(PyDict_GetItemWithError(d, key));
}

/* One link of a walked chain: its code and texts as read from the nodes (each held). */
typedef struct {
    long code;
    PyObject *kind;    /* an exact str (an aimux node's kind), or NULL: "source" */
    PyObject *name;    /* an exact str (error.name / type), or NULL: none */
    PyObject *message; /* an exact str */
    PyObject *json;    /* bytes: the envelope itself for the root, orjson.dumps(node) below */
} LinkRec;

/* envelope.chain_links' answer before it is turned into objects: the root's own fields and the
 * links, root first. */
typedef struct {
    int retryable;
    PyObject *after; /* an int in range, or None */
    Py_ssize_t n;
    LinkRec links[LINKS_MAX];
} Walk;

static void walk_clear(Walk *w)
{
    for (Py_ssize_t i = 0; i < w->n; i++) {
        Py_XDECREF(w->links[i].kind);
        Py_XDECREF(w->links[i].name);
        Py_XDECREF(w->links[i].message);
        Py_XDECREF(w->links[i].json);
    }
    w->n = 0;
    Py_CLEAR(w->after);
}

/* envelope.chain_links of the nodes this process just projected (check_root, root_fields and
 * _links_of_nodes), into *w (walk_clear it whatever the answer): FALLBACK for a root without a
 * code in 1..2**31-1 or an AI_RetryError link without a cause (its attempts), or any member of
 * an unexpected type. Every value read from the caller's dicts is held (strong) while in use: an
 * allocation or orjson.dumps may run a finalizer that changes those dicts. */
static int walk_links(PyObject *root, PyObject *envelope, Walk *w)
{
    int rc = OK;
    w->n = 0;
    w->after = NULL;
    PyObject *kind = dict_get(root, s_kind);
    PyObject *code = kind ? dict_get(root, s_code) : NULL;
    if (code == NULL || !PyUnicode_CheckExact(kind) || !PyLong_CheckExact(code)) {
        rc = PyErr_Occurred() ? ERR : FALLBACK;
    } else {
        long c = PyLong_AsLong(code);
        if (c == -1 && PyErr_Occurred())
            rc = settle();
        else if (c < 1 || c > CODE_MAX)
            rc = FALLBACK;
    }
    Py_XDECREF(kind);
    Py_XDECREF(code);
    if (rc != OK) return rc;
    PyObject *retryable = dict_get(root, s_retryable);
    w->retryable = retryable == Py_True;
    Py_XDECREF(retryable);
    PyObject *after = dict_get(root, s_retryAfterMs);
    if (PyErr_Occurred()) {
        Py_XDECREF(after);
        return ERR;
    }
    w->after = Py_NewRef(Py_None);
    if (after != NULL) {
        if (!PyLong_CheckExact(after)) {
            Py_DECREF(after);
            return FALLBACK;
        }
        if (after_in_range(after))
            Py_SETREF(w->after, after);
        else
            Py_DECREF(after);
    }
    PyObject *node = Py_NewRef(root);
    while (node != NULL && PyDict_Check(node) && w->n < LINKS_MAX) {
        if (!PyDict_CheckExact(node)) {
            rc = FALLBACK;
            break;
        }
        int first = w->n == 0;
        LinkRec rec = {0, NULL, NULL, NULL, NULL};
        PyObject *nkind = dict_get(node, s_kind);
        PyObject *next = nkind || !PyErr_Occurred() ? dict_get(node, s_cause) : NULL;
        PyObject *ncode = NULL, *name = NULL, *error = NULL;
        do {
            if (PyErr_Occurred()) {
                rc = ERR;
                break;
            }
            if (nkind != NULL && PyUnicode_Check(nkind)) {
                if (!PyUnicode_CheckExact(nkind)) {
                    rc = FALLBACK;
                    break;
                }
                ncode = dict_get(node, s_code);
                if (ncode == NULL || !PyLong_CheckExact(ncode)) {
                    rc = PyErr_Occurred() ? ERR : FALLBACK;
                    break;
                }
                long nc = PyLong_AsLong(ncode);
                if (nc == -1 && PyErr_Occurred()) {
                    rc = settle();
                    break;
                }
                if (nc < 0 || nc > CODE_MAX || (first && nc < 1)) {
                    rc = FALLBACK;
                    break;
                }
                error = dict_get(node, s_error);
                if (error != NULL && PyDict_Check(error)) {
                    if (!PyDict_CheckExact(error)) {
                        rc = FALLBACK;
                        break;
                    }
                    name = dict_get(error, s_name);
                }
                if (PyErr_Occurred()) {
                    rc = ERR;
                    break;
                }
                if (name != NULL && name != Py_None && !PyUnicode_CheckExact(name) &&
                    PyUnicode_Check(name)) {
                    rc = FALLBACK;
                    break;
                }
                if ((next == NULL || next == Py_None) && name != NULL &&
                    PyUnicode_CheckExact(name) && PyUnicode_Compare(name, s_retry_name) == 0) {
                    rc = FALLBACK; /* the attempts are the chain: Python's walk */
                    break;
                }
                rec.code = nc;
                rec.kind = Py_NewRef(nkind);
            } else {
                rec.code = 0;
                name = dict_get(node, s_type);
                if (PyErr_Occurred()) {
                    rc = ERR;
                    break;
                }
                if (name != NULL && PyUnicode_Check(name) && !PyUnicode_CheckExact(name)) {
                    rc = FALLBACK;
                    break;
                }
            }
            rec.message = dict_get(node, s_message);
            if (rec.message == NULL || !PyUnicode_CheckExact(rec.message)) {
                rc = PyErr_Occurred() ? ERR : FALLBACK;
                break;
            }
            if (name != NULL && PyUnicode_CheckExact(name)) rec.name = Py_NewRef(name);
            rec.json = first ? Py_NewRef(envelope) : PyObject_CallOneArg(g_dumps, node);
            if (rec.json == NULL) {
                rc = ERR;
            } else if (!PyBytes_CheckExact(rec.json)) {
                rc = FALLBACK;
            }
        } while (0);
        Py_XDECREF(nkind);
        Py_XDECREF(ncode);
        Py_XDECREF(error);
        Py_XDECREF(name);
        w->links[w->n++] = rec; /* cleared by walk_clear, whole or not */
        if (rc != OK) {
            Py_XDECREF(next);
            break;
        }
        Py_SETREF(node, next);
    }
    Py_XDECREF(node);
    return rc;
}

/* The UTF-8 bytes of a link's text as envelope.chain_links writes them (errors "replace"); an
 * ASCII str is read in place (*data, *size), anything else is encoded into *held (new ref). */
static int text_bytes(PyObject *s, const char **data, Py_ssize_t *size, PyObject **held)
{
    *held = NULL;
    if (PyUnicode_IS_ASCII(s)) {
        *data = ascii_data(s);
        *size = PyUnicode_GET_LENGTH(s);
        return 0;
    }
    *held = utf8(s);
    if (*held == NULL) return -1;
    *data = PyBytes_AS_STRING(*held);
    *size = PyBytes_GET_SIZE(*held);
    return 0;
}

static PyObject *bytes_of(PyObject *s)
{
    const char *data;
    Py_ssize_t size;
    PyObject *held;
    if (text_bytes(s, &data, &size, &held) < 0) return NULL;
    return held != NULL ? held : PyBytes_FromStringAndSize(data, size);
}

/* chain()'s answer: ((retryable, retryAfterMs), [Link, ...]). */
static PyObject *walk_tuple(const Walk *w)
{
    PyObject *links = PyList_New(w->n);
    if (links == NULL) return NULL;
    for (Py_ssize_t i = 0; i < w->n; i++) {
        const LinkRec *r = &w->links[i];
        PyObject *code = PyLong_FromLong(r->code);
        PyObject *kind = r->kind ? bytes_of(r->kind) : PyBytes_FromString("source");
        PyObject *name = r->name ? bytes_of(r->name) : Py_NewRef(Py_None);
        PyObject *message = bytes_of(r->message);
        PyObject *link =
            code && kind && name && message ? make_link(code, kind, name, message, r->json) : NULL;
        Py_XDECREF(code);
        Py_XDECREF(kind);
        Py_XDECREF(name);
        Py_XDECREF(message);
        if (link == NULL) {
            Py_DECREF(links);
            return NULL;
        }
        PyList_SET_ITEM(links, i, link);
    }
    return Py_BuildValue("((OO)N)", w->retryable ? Py_True : Py_False, w->after, links);
}

/* chain() and packed(): walk the links of (root, envelope_json) and answer finish(walk), or
 * None when the walk leaves the chain to the Python code. */
static PyObject *walk_answer(PyObject *const *args, Py_ssize_t nargs, const char *usage,
                             PyObject *(*finish)(const Walk *))
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    if (!ready()) return NULL;
    if (!PyDict_CheckExact(args[0]) || !PyBytes_CheckExact(args[1])) return Py_NewRef(Py_None);
    Walk *w = PyMem_Malloc(sizeof *w);
    if (w == NULL) return PyErr_NoMemory();
    PyObject *out = NULL;
    int rc = walk_links(args[0], args[1], w);
    if (rc == OK) {
        out = finish(w);
        if (out == NULL) rc = ERR;
    }
    walk_clear(w);
    PyMem_Free(w);
    if (rc == ERR) {
        if (settle() == ERR) return NULL;
        rc = FALLBACK;
    }
    return rc == OK ? out : Py_NewRef(Py_None);
}

static PyObject *cproject_chain(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    return walk_answer(args, nargs, "chain(root, envelope_json) takes two arguments", walk_tuple);
}

/* -- packed() -------------------------------------------------------------------------------- */

static void put_bytes(char **at, const void *data, size_t n)
{
    memcpy(*at, data, n);
    *at += n;
}

/* The buffer the shim's _aimux_err_unpack reads (native/src/aimux_embed.py _packed): the root's
 * retryable (uint8) and retryAfterMs (int64, -1 when absent), then per link its code (int32),
 * the lengths (uint32) of its kind, name (0xFFFFFFFF: none), message and JSON, and those bytes;
 * native byte order, no padding. */
#define PACKED_ROOT 9  /* retryable, retryAfterMs */
#define PACKED_LINK 20 /* code and the four lengths, ahead of the link's bytes */

/* One text of a link: (data, size); size -1: none (a name). */
typedef struct {
    const char *data;
    Py_ssize_t size;
} Piece;

static void put_root(char **at, int retryable, int64_t after_ms)
{
    uint8_t r = (uint8_t)(retryable != 0);
    put_bytes(at, &r, 1);
    put_bytes(at, &after_ms, 8);
}

/* A link: its code, then kind, name, message and JSON (p[0..3]). */
static void put_link(char **at, int32_t code, const Piece p[4])
{
    put_bytes(at, &code, 4);
    for (int j = 0; j < 4; j++) {
        uint32_t len = p[j].size < 0 ? 0xFFFFFFFFu : (uint32_t)p[j].size;
        put_bytes(at, &len, 4);
    }
    for (int j = 0; j < 4; j++)
        if (p[j].size >= 0) put_bytes(at, p[j].data, (size_t)p[j].size);
}

/* The packed chain of the walk's links, written from its texts (ASCII ones in place), without
 * the Links chain() builds. */
static PyObject *pack_walk(const Walk *w)
{
    int64_t after_ms = -1;
    if (w->after != Py_None) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(w->after, &overflow);
        if (v == -1 && PyErr_Occurred()) return NULL;
        after_ms = overflow ? -1 : (int64_t)v;
    }
    /* per link: kind, name, message, json; encoded texts held */
    Py_ssize_t n = w->n;
    Piece *pieces = PyMem_Malloc(sizeof(Piece) * 4 * (size_t)(n ? n : 1));
    PyObject **held = PyMem_Calloc((size_t)(3 * (n ? n : 1)), sizeof(PyObject *));
    PyObject *out = NULL;
    if (pieces == NULL || held == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    size_t size = PACKED_ROOT;
    for (Py_ssize_t i = 0; i < n; i++) {
        const LinkRec *r = &w->links[i];
        Piece *p = &pieces[4 * i];
        if (r->kind == NULL) {
            p[0].data = "source";
            p[0].size = 6;
        } else if (text_bytes(r->kind, &p[0].data, &p[0].size, &held[3 * i]) < 0) {
            goto done;
        }
        if (r->name == NULL) {
            p[1].data = NULL;
            p[1].size = -1;
        } else if (text_bytes(r->name, &p[1].data, &p[1].size, &held[3 * i + 1]) < 0) {
            goto done;
        }
        if (text_bytes(r->message, &p[2].data, &p[2].size, &held[3 * i + 2]) < 0) goto done;
        p[3].data = PyBytes_AS_STRING(r->json);
        p[3].size = PyBytes_GET_SIZE(r->json);
        size += PACKED_LINK;
        for (int j = 0; j < 4; j++) {
            if (p[j].size < 0) continue;
            if ((size_t)p[j].size >= 0xFFFFFFFFu) {
                out = Py_NewRef(Py_None);
                goto done;
            }
            size += (size_t)p[j].size;
        }
    }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (out == NULL) goto done;
    char *at = PyBytes_AS_STRING(out);
    put_root(&at, w->retryable, after_ms);
    for (Py_ssize_t i = 0; i < n; i++) /* codes 0..2**31-1: checked */
        put_link(&at, (int32_t)w->links[i].code, &pieces[4 * i]);
done:
    if (held != NULL) {
        for (Py_ssize_t i = 0; i < 3 * n; i++) Py_XDECREF(held[i]);
        PyMem_Free(held);
    }
    PyMem_Free(pieces);
    return out;
}

static PyObject *cproject_packed(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    return walk_answer(args, nargs, "packed(root, envelope_json) takes two arguments", pack_walk);
}

/* -- answer() -------------------------------------------------------------------------------- */

/* envelope.answer(cls, message, values): the envelope of cls._of_values(message, values) and its
 * one packed link, written straight from the class and the values, without building the error,
 * its node dicts or calling orjson (docs/DESIGN.md "Errors answered from their values"). Handled:
 * a class the walk handles that keeps AimuxError's hooks, its members and its __new__, whose
 * kind, code, error_name, _wire and _defaults are plain class values; a message of at most 1 KiB
 * of ASCII without NUL and without a scrub anchor; field values of exact types: str (ASCII, no
 * anchor, at most 16 KiB), int (64 bits), bool, and lists of those (and None) within the 16 KiB
 * bound. Anything else: None (envelope.answer builds the error and projects it). The bytes are
 * orjson's for the same node (its escapes for ASCII text, compact separators). */

typedef struct {
    char *p;
    size_t n, cap;
    char local[1024];
} Out;

static int out_room(Out *o, size_t more)
{
    if (o->n + more <= o->cap) return 1;
    size_t cap = o->cap * 2;
    while (cap < o->n + more) cap *= 2;
    char *p = o->p == o->local ? PyMem_Malloc(cap) : PyMem_Realloc(o->p, cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    if (o->p == o->local) memcpy(p, o->local, o->n);
    o->p = p;
    o->cap = cap;
    return 1;
}

static int out_put(Out *o, const char *s, size_t n)
{
    if (!out_room(o, n)) return ERR;
    memcpy(o->p + o->n, s, n);
    o->n += n;
    return OK;
}

#define OUT_LIT(o, lit) out_put((o), (lit), sizeof(lit) - 1)

/* A JSON string of ASCII text, escaped as orjson escapes it. */
static int out_text(Out *o, const char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    /* at most 6 bytes per byte and the quotes, plus 8: a last, shorter word is stored whole */
    if (!out_room(o, (size_t)n * 6 + 2 + 8)) return ERR;
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    char *w = o->p + o->n;
    *w++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        /* eight bytes at once when none is below 0x20, '"' or '\\' (ASCII: no high bit, so
         * a high bit after the subtractions marks exactly such a byte or a byte below one); a
         * last, shorter word is padded with 'a' (never escaped), and only its own bytes kept */
        while (i < n) {
            uint64_t x = 0x6161616161616161ULL, q, b;
            Py_ssize_t len = n - i < 8 ? n - i : 8;
            memcpy(&x, s + i, (size_t)len);
            q = x ^ (ones * (uint64_t)'"');
            b = x ^ (ones * (uint64_t)'\\');
            if ((((x - ones * 0x20u) | (q - ones) | (b - ones)) & highs) != 0) break;
            memcpy(w, &x, 8); /* within the room asked for above, even for a short word */
            w += len;
            i += len;
        }
        if (i >= n) break;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *w++ = (char)c;
            continue;
        }
        *w++ = '\\';
        switch (c) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '\b': *w++ = 'b'; break;
        case '\t': *w++ = 't'; break;
        case '\n': *w++ = 'n'; break;
        case '\f': *w++ = 'f'; break;
        case '\r': *w++ = 'r'; break;
        default:
            memcpy(w, "u00", 3);
            w[3] = hex[c >> 4];
            w[4] = hex[c & 15];
            w += 5;
        }
    }
    *w++ = '"';
    o->n = (size_t)(w - o->p);
    return OK;
}

/* An exact str of ASCII: its JSON string (FALLBACK otherwise). */
static int out_str(Out *o, PyObject *s)
{
    if (!ascii_text(s)) return FALLBACK;
    return out_text(o, ascii_data(s), PyUnicode_GET_LENGTH(s));
}

/* A plain scalar (None, bool, an int of 64 bits) as orjson writes it; FALLBACK for any other. */
static int out_scalar(Out *o, PyObject *v)
{
    if (v == Py_None) return OUT_LIT(o, "null");
    if (v == Py_True) return OUT_LIT(o, "true");
    if (v == Py_False) return OUT_LIT(o, "false");
    if (!PyLong_CheckExact(v)) return FALLBACK;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) return FALLBACK; /* orjson writes some of those: Python's */
    if (x == -1 && PyErr_Occurred()) return settle();
    char num[24], *end = num + sizeof num, *d = end;
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do {
        *--d = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0) *--d = '-';
    return out_put(o, d, (size_t)(end - d));
}

/* A payload text (field_value's str, small_copy's member) written as it is: ASCII, at most
 * VALUE_BYTES, no anchor. */
static int out_field_text(const Ctx *ctx, Out *o, PyObject *v)
{
    if (!ascii_text(v) || PyUnicode_GET_LENGTH(v) > VALUE_BYTES) return FALLBACK;
    if (has_anchor(ctx, ascii_data(v), PyUnicode_GET_LENGTH(v), 0)) return FALLBACK;
    return out_text(o, ascii_data(v), PyUnicode_GET_LENGTH(v));
}

/* One payload field value, as field_value would keep it and orjson write it. */
static int out_field(const Ctx *ctx, Out *o, PyObject *v)
{
    if (PyUnicode_CheckExact(v)) return out_field_text(ctx, o, v);
    if (!PyList_CheckExact(v)) return out_scalar(o, v);
    /* small_copy's bound of a flat list of texts and plain scalars (not floats: orjson's own
     * float format is Python's) */
    Py_ssize_t total = 2;
    int rc = OUT_LIT(o, "[");
    for (Py_ssize_t i = 0; rc == OK && i < PyList_GET_SIZE(v); i++) {
        PyObject *item = PyList_GET_ITEM(v, i);
        if (i > 0 && (rc = OUT_LIT(o, ",")) != OK) break;
        if (PyUnicode_CheckExact(item)) {
            total += 6 * PyUnicode_GET_LENGTH(item) + 3;
            rc = total > VALUE_BYTES ? FALLBACK : out_field_text(ctx, o, item);
        } else {
            total += 25;
            rc = total > VALUE_BYTES ? FALLBACK : out_scalar(o, item);
        }
    }
    return rc == OK ? OUT_LIT(o, "]") : rc;
}

/* A class value the answer reads as the instance would find it: the class's own plain value of
 * an exact type (NULL: none, or one of another type). Borrowed. */
static PyObject *class_value(PyTypeObject *t, PyObject *name, PyTypeObject *type)
{
    PyObject *v = _PyType_Lookup(t, name);
    return v != NULL && Py_IS_TYPE(v, type) ? v : NULL;
}

/* Whether every key of the dict is an exact str: looking one up then runs no Python code (no
 * key's __eq__), as {**_defaults, **values} would run it at another moment. */
static int str_keys(PyObject *d)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v))
        if (!PyUnicode_CheckExact(k)) return 0;
    return 1;
}

/* The node's JSON into `o` (FALLBACK: not one answer() writes). */
static int answer_json(const Ctx *ctx, Out *o, PyTypeObject *t, PyObject *message, PyObject *values,
                       PyObject *kind, PyObject *code, PyObject *name)
{
    PyObject *wire = class_value(t, s_wire, &PyTuple_Type);
    PyObject *defaults = class_value(t, s_defaults, &PyDict_Type);
    if (wire == NULL || defaults == NULL || !str_keys(defaults) || !str_keys(values))
        return FALLBACK;
    int rc = OUT_LIT(o, "{\"kind\":");
    if (rc == OK) rc = out_str(o, kind);
    if (rc == OK) rc = OUT_LIT(o, ",\"code\":");
    if (rc == OK) rc = out_scalar(o, code);
    if (rc == OK) rc = OUT_LIT(o, ",\"message\":");
    if (rc == OK) rc = out_text(o, ascii_data(message), PyUnicode_GET_LENGTH(message));
    if (rc == OK) rc = OUT_LIT(o, ",\"error\":{\"name\":");
    if (rc == OK) rc = out_str(o, name);
    /* held while read (exact-str keys: no lookup runs Python code; held all the same) */
    Py_INCREF(wire);
    Py_INCREF(defaults);
    for (Py_ssize_t i = 0; rc == OK && i < PyTuple_GET_SIZE(wire); i++) {
        PyObject *pair = PyTuple_GET_ITEM(wire, i); /* plain_wire: (str, str) */
        PyObject *field = PyTuple_GET_ITEM(pair, 0);
        /* {**cls._defaults, **values}[field] */
        PyObject *v = PyDict_GetItemWithError(values, field);
        if (v == NULL && !PyErr_Occurred()) v = PyDict_GetItemWithError(defaults, field);
        if (v == NULL) {
            rc = PyErr_Occurred() ? settle() : OK;
            continue;
        }
        if (v == Py_None) continue;
        Py_INCREF(v);
        rc = OUT_LIT(o, ",");
        if (rc == OK) rc = out_str(o, PyTuple_GET_ITEM(pair, 1));
        if (rc == OK) rc = OUT_LIT(o, ":");
        if (rc == OK) rc = out_field(ctx, o, v);
        Py_DECREF(v);
    }
    Py_DECREF(wire);
    Py_DECREF(defaults);
    if (rc == OK) rc = OUT_LIT(o, "},\"retryable\":false}");
    return rc;
}

/* The shim's packed chain of a one-node envelope: the root's retryable (false) and
 * retryAfterMs (none), then the link (its JSON the whole envelope). */
static PyObject *pack_one(int32_t code, PyObject *kind, PyObject *name, PyObject *message,
                          PyObject *json)
{
    const Piece p[4] = {
        {ascii_data(kind), PyUnicode_GET_LENGTH(kind)},
        {ascii_data(name), PyUnicode_GET_LENGTH(name)},
        {ascii_data(message), PyUnicode_GET_LENGTH(message)},
        {PyBytes_AS_STRING(json), PyBytes_GET_SIZE(json)},
    };
    Py_ssize_t size = PACKED_ROOT + PACKED_LINK;
    for (int j = 0; j < 4; j++) size += p[j].size;
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL) return NULL;
    char *at = PyBytes_AS_STRING(out);
    put_root(&at, 0, -1);
    put_link(&at, code, p);
    return out;
}

static PyObject *cproject_answer(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "answer(cls, message, values) takes three arguments");
        return NULL;
    }
    if (!ready()) return NULL;
    PyObject *cls = args[0], *message = args[1], *values = args[2];
    if (!PyType_Check(cls) || !PyDict_CheckExact(values) || !ascii_text(message)) Py_RETURN_NONE;
    PyTypeObject *t = (PyTypeObject *)cls;
    Py_ssize_t mn = PyUnicode_GET_LENGTH(message);
    /* the metaclass: type (what _of_values reads through the class is the class's own) */
    if (mn > MESSAGE_BYTES || memchr(ascii_data(message), 0, (size_t)mn) ||
        !Py_IS_TYPE(t, &PyType_Type) || !info_of(t).answerable)
        Py_RETURN_NONE;
    PyObject *kind = class_value(t, s_kind, &PyUnicode_Type);
    PyObject *code = class_value(t, s_code, &PyLong_Type);
    PyObject *name = class_value(t, s_error_name, &PyUnicode_Type);
    if (kind == NULL || code == NULL || name == NULL || !ascii_text(kind) || !ascii_text(name))
        Py_RETURN_NONE;
    int overflow = 0;
    long c = PyLong_AsLongAndOverflow(code, &overflow);
    if (overflow || c < 1 || c > CODE_MAX) { /* a root code below 1: walk_links' refusal */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Ctx ctx;
    ctx.secrets = read_secrets();
    if (ctx.secrets == NULL) return settle() == ERR ? NULL : Py_NewRef(Py_None);
    /* held while written (nothing below runs Python code; held all the same) */
    Py_INCREF(kind);
    Py_INCREF(code);
    Py_INCREF(name);
    Out o;
    o.p = o.local;
    o.n = 0;
    o.cap = sizeof o.local;
    int rc = has_anchor(&ctx, ascii_data(message), mn, 1)
                 ? FALLBACK
                 : answer_json(&ctx, &o, t, message, values, kind, code, name);
    Py_DECREF(ctx.secrets);
    PyObject *out = NULL;
    if (rc == OK && (Py_ssize_t)o.n <= g_envelope_max) {
        PyObject *json = PyBytes_FromStringAndSize(o.p, (Py_ssize_t)o.n);
        PyObject *packed = json ? pack_one((int32_t)c, kind, name, message, json) : NULL;
        if (packed != NULL) out = PyTuple_Pack(2, json, packed);
        Py_XDECREF(json);
        Py_XDECREF(packed);
    } else if (rc == ERR && settle() == ERR) {
        out = NULL;
    } else {
        out = Py_NewRef(Py_None);
    }
    if (o.p != o.local) PyMem_Free(o.p);
    Py_DECREF(kind);
    Py_DECREF(code);
    Py_DECREF(name);
    return out;
}

/* -- setup() --------------------------------------------------------------------------------- */

static PyObject *cproject_setup(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *names[] = {"aimux_error",
                            "retry_error",
                            "source_error",
                            "payload_fields",
                            "cause_children",
                            "redact",
                            "scrub_text",
                            "scrub_message",
                            "is_secret_header",
                            "dumps",
                            "link",
                            "retryable",
                            "retry_after_ms",
                            "own_retryable",
                            "own_retry_after_ms",
                            "retry_after_max",
                            "envelope_globals",
                            "envelope_max_bytes",
                            "api_own_retryable",
                            "api_own_retry_after_ms",
                            "api_is_retryable",
                            "api_response_headers",
                            "parse_retry_after_ms",
                            "dump_models",
                            NULL};
    PyObject *v[22];
    long long after_max;
    Py_ssize_t envelope_max;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOOOOOOOOOOOOOLOnOOOOOO", names, &v[0], &v[1],
                                     &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
                                     &v[11], &v[12], &v[13], &v[14], &after_max, &v[15],
                                     &envelope_max, &v[16], &v[17], &v[18], &v[19], &v[20], &v[21]))
        return NULL;
    if (!PyType_Check(v[0]) || !PyType_Check(v[1]) || !PyType_Check(v[2]) || !PyType_Check(v[10]) ||
        !PyType_IsSubtype((PyTypeObject *)v[10], &PyTuple_Type) || !PyDict_CheckExact(v[15]) ||
        !PyFunction_Check(v[16]) || !PyFunction_Check(v[17]) || !PyFunction_Check(v[20])) {
        PyErr_SetString(PyExc_TypeError, "setup(): unexpected arguments");
        return NULL;
    }
    PyObject **slots[] = {&g_aimux_error,
                          &g_retry_error,
                          &g_source_error,
                          &g_payload_fields,
                          &g_cause_children,
                          &g_redact,
                          &g_scrub_text,
                          &g_scrub_message,
                          &g_is_secret_header,
                          &g_dumps,
                          &g_link,
                          &g_retryable,
                          &g_retry_after_ms,
                          &g_own_retryable,
                          &g_own_retry_after,
                          &g_envelope_globals,
                          &g_api_own_retryable,
                          &g_api_own_retry_after,
                          &g_api_is_retryable,
                          &g_api_headers,
                          &g_parse_retry_after,
                          &g_dump_models};
    for (size_t i = 0; i < sizeof slots / sizeof *slots; i++)
        Py_XSETREF(*slots[i], Py_NewRef(v[i]));
    /* AimuxError has a Python __getattr__: its tp_getattro is the hook every such class has */
    hook_getattro = ((PyTypeObject *)g_aimux_error)->tp_getattro;
    g_retry_after_max = after_max;
    g_envelope_max = envelope_max;
    /* static types, never freed: borrowed for the life of the process */
    object_getattribute = _PyType_Lookup(&PyBaseObject_Type, s_getattribute);
    object_class = _PyType_Lookup(&PyBaseObject_Type, s_class);
    memset(type_infos, 0, sizeof type_infos); /* computed against the objects set up before */
    exception_getattribute = _PyType_Lookup((PyTypeObject *)PyExc_BaseException, s_getattribute);
    for (size_t i = 0; i < sizeof base_descrs / sizeof *base_descrs; i++)
        *base_descrs[i].descr =
            _PyType_Lookup((PyTypeObject *)PyExc_BaseException, *base_descrs[i].name);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(root_doc,
             "root(err) -> dict | None\n\n"
             "envelope._root(err, DEFAULT_LIMITS) of an AimuxError, or None when any node of its\n"
             "chain needs the Python projection.");
PyDoc_STRVAR(
    project_doc,
    "project(exc) -> bytes | dict | bool | None\n\n"
    "envelope._project(exc) of an AimuxError the walk handles (envelope._last set); None:\n"
    "not tried; False: walked, left to Python; a dict: the root of an envelope over the\n"
    "limit.");
PyDoc_STRVAR(chain_doc,
             "chain(root, envelope_json) -> ((retryable, retryAfterMs), links) | None\n\n"
             "envelope.chain_links of nodes this process just projected, or None (Python's).");
PyDoc_STRVAR(
    packed_doc,
    "packed(root, envelope_json) -> bytes | None\n\n"
    "chain(root, envelope_json) packed as the shim's _aimux_err_unpack reads it, or None.");
PyDoc_STRVAR(answer_doc,
             "answer(cls, message, values) -> (bytes, bytes) | None\n\n"
             "envelope.answer: the envelope of cls._of_values(message, values) and the shim's\n"
             "packed chain of it, written from the class and the values, or None (Python's).");
PyDoc_STRVAR(setup_doc, "setup(*, ...): the Python objects the projection uses (causes.py).");

static PyMethodDef methods[] = {
    {"root", (PyCFunction)cproject_root, METH_O, root_doc},
    {"project", (PyCFunction)cproject_project, METH_O, project_doc},
    {"chain", (PyCFunction)(void (*)(void))cproject_chain, METH_FASTCALL, chain_doc},
    {"packed", (PyCFunction)(void (*)(void))cproject_packed, METH_FASTCALL, packed_doc},
    {"answer", (PyCFunction)(void (*)(void))cproject_answer, METH_FASTCALL, answer_doc},
    {"setup", (PyCFunction)(void (*)(void))cproject_setup, METH_VARARGS | METH_KEYWORDS, setup_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "aimux_ops._cproject",
    .m_doc = "The envelope projection of the common cause chains, in C (optional; causes.py is "
             "the reference).",
    .m_size = -1,
    .m_methods = methods,
};

static int intern_all(void)
{
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {
        {&s_kind, "kind"},
        {&s_code, "code"},
        {&s_message, "message"},
        {&s_error, "error"},
        {&s_name, "name"},
        {&s_cause, "cause"},
        {&s_truncated, "truncated"},
        {&s_type, "type"},
        {&s_retryable, "retryable"},
        {&s_retryAfterMs, "retryAfterMs"},
        {&s_retry_after_ms, "retry_after_ms"},
        {&s_own_retryable, "_own_retryable"},
        {&s_own_retry_after, "_own_retry_after_ms"},
        {&s_wire_root, "wire_root"},
        {&s_getattribute, "__getattribute__"},
        {&s_values, "_values"},
        {&s_extra, "_extra"},
        {&s_wire, "_wire"},
        {&s_error_name, "error_name"},
        {&s_payload_fields, "payload_fields"},
        {&s_cause_children, "cause_children"},
        {&s_module, "__module__"},
        {&s_qualname, "__qualname__"},
        {&s_secret_list, "_secret_list"},
        {&s_builtins, "builtins"},
        {&s_retry_name, "AI_RetryError"},
        {&s_dunder_cause, "__cause__"},
        {&s_dunder_context, "__context__"},
        {&s_dunder_suppress, "__suppress_context__"},
        {&s_args, "args"},
        {&s_last, "_last"},
        {&s_class, "__class__"},
        {&s_is_retryable, "is_retryable"},
        {&s_response_headers, "response_headers"},
        {&s_parse_retry_after, "_parse_retry_after_ms"},
        {&s_defaults, "_defaults"},
        {&s_of_values, "_of_values"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (*names[i].slot == NULL) {
            *names[i].slot = PyUnicode_InternFromString(names[i].text);
            if (*names[i].slot == NULL) return -1;
        }
    }
    return 0;
}

PyMODINIT_FUNC PyInit__cproject(void)
{
    if (intern_all() < 0) return NULL;
    base_str = ((PyTypeObject *)PyExc_BaseException)->tp_str;
    base_repr = ((PyTypeObject *)PyExc_BaseException)->tp_repr;
    oserror_str = ((PyTypeObject *)PyExc_OSError)->tp_str;
    keyerror_str = ((PyTypeObject *)PyExc_KeyError)->tp_str;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    if (PyModule_AddStringConstant(m, "SOURCE_SHA", AIMUX_CPROJECT_SOURCE_SHA) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
