/* libaimux: the shim's small helpers shared by its parts (aimux_shim.c, aimux_queue.c): a
 * strndup, a growable buffer and a JSON string escaper (no printf). Included once per translation
 * unit (the library is one: the shim includes its parts). */
#ifndef AIMUX_BUF_H
#define AIMUX_BUF_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

char *_aimux_strndup(const char *s, size_t n)
{
    char *r = (char *)malloc(n + 1);
    if (r == NULL) return NULL;
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} _aimux_buf;

static void _aimux_buf_put(_aimux_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        char *p;
        while (cap < b->len + n + 1) cap *= 2;
        p = (char *)realloc(b->p, cap);
        if (p == NULL) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}
static void _aimux_buf_str(_aimux_buf *b, const char *s) { _aimux_buf_put(b, s, strlen(s)); }
static void _aimux_buf_int(_aimux_buf *b, int32_t v)
{
    char tmp[16];
    int i = 15;
    uint32_t u = v < 0 ? (uint32_t)(-(int64_t)v) : (uint32_t)v;
    tmp[i] = 0;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) tmp[--i] = '-';
    _aimux_buf_str(b, tmp + i);
}
static void _aimux_buf_json_string(_aimux_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i, start = 0;
    _aimux_buf_put(b, "\"", 1);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\' || c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            _aimux_buf_put(b, s + start, i - start);
            if (c == '"')
                _aimux_buf_put(b, "\\\"", 2);
            else if (c == '\\')
                _aimux_buf_put(b, "\\\\", 2);
            else if (c == '\n')
                _aimux_buf_put(b, "\\n", 2);
            else if (c == '\t')
                _aimux_buf_put(b, "\\t", 2);
            else
                _aimux_buf_put(b, esc, 6);
            start = i + 1;
        }
    }
    _aimux_buf_put(b, s + start, n - start);
    _aimux_buf_put(b, "\"", 1);
}

#endif
