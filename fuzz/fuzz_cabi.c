/*
 * fuzz_cabi.c — libFuzzer harness over the C ABI of libaimux.so (CONTRACT §3).
 *
 * Input: "<op>\0<params>" (no NUL: the whole input is the params of a picked op); the op
 * "decode" feeds the params to aimux_error_from_json instead. The op and the
 * params are passed as C strings exactly as a user would, with two guards (no JSON parser here):
 *   - params of the generate ops that start with '{' get "maxRetries":0,"timeoutMs":2000 put in
 *     front (a later duplicate key wins, so a fuzzed value still reaches the core), so a live call
 *     cannot sleep through the default backoff; the seeds point every model at a closed loopback
 *     port (http://127.0.0.1:1), the only network a mutation can reach short of a new address;
 *   - an input that records ("record") to a path that could leave the scratch directory the
 *     Makefile runs in (an absolute path, "..", or any JSON escape) is skipped.
 *
 * Invariants checked (abort() on a violation, which libFuzzer reports as a crash):
 *   - exactly one of (error, result/handle) comes back; out-params are NULL/0 on error;
 *   - an error has a code != 0 on its root, a message, JSON that starts with '{' and ends with '}',
 *     and a finite cause chain (≤ 64 links) whose nodes all answer the accessors;
 *   - a stream yields at most 200 events, each a JSON object, then ends; after aimux_stream_free
 *     the handle answers 203; a second free and a cancel of the freed handle are harmless.
 * Built by fuzz/Makefile with clang -fsanitize=fuzzer (or gcc + standalone_main.c without clang).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimux.h"

static const char *const OPS[] = {"generate_text", "stream_text", "generate_object",
                                  "aimux.version", "aimux.manifest"};

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_cabi: invariant violated: %s\n", what);                          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static int json_object_text(const char *s)
{
    if (!s) return 0;
    size_t n = strlen(s);
    return n >= 2 && s[0] == '{' && s[n - 1] == '}';
}

static void check_error(aimux_error_t *err)
{
    CHECK(aimux_error_code(err) != 0, "root error code is 0");
    char *msg = aimux_error_message(err);
    CHECK(msg != NULL, "root error has no message");
    aimux_string_free(msg);
    char *js = aimux_error_json(err);
    CHECK(json_object_text(js), "root error JSON is not an object");
    aimux_string_free(js);
    const aimux_error_t *node = aimux_error_cause(err);
    int links = 1;
    while (node) {
        CHECK(++links <= 64, "cause chain longer than 64 links");
        char *m = aimux_error_message(node);
        char *j = aimux_error_json(node);
        CHECK(m != NULL && json_object_text(j), "a cause node without message or JSON");
        aimux_string_free(m);
        aimux_string_free(j);
        node = aimux_error_cause(node);
    }
    aimux_error_free(err);
}

static int unsafe_recording(const char *params)
{
    if (!strstr(params, "record")) return 0;
    return strstr(params, "\"/") || strstr(params, "..") || strchr(params, '\\') ||
           strstr(params, "~");
}

static char *guarded(const char *op, const char *params)
{
    const char *p = params;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    int generate = strcmp(op, "generate_text") == 0 || strcmp(op, "stream_text") == 0 ||
                   strcmp(op, "generate_object") == 0;
    if (!generate || *p != '{') return NULL;
    static const char prefix[] = "{\"maxRetries\":0,\"timeoutMs\":2000";
    size_t rest = strlen(p + 1);
    char *out = malloc(sizeof prefix + rest + 2);
    if (!out) return NULL;
    memcpy(out, prefix, sizeof prefix - 1);
    size_t n = sizeof prefix - 1;
    const char *q = p + 1;
    while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
    if (*q != '}' && *q != 0) out[n++] = ',';
    memcpy(out + n, p + 1, rest + 1);
    return out;
}

static void run_shaped(const char *op, const char *params);

static void run(const char *op, const char *raw_params)
{
    if (unsafe_recording(raw_params)) return;
    char *shaped = guarded(op, raw_params);
    run_shaped(op, shaped ? shaped : raw_params);
    free(shaped);
}

/* "decode\0<envelope>": the aimux_error_from_json extension, whose result is an error like any
 * other (the same invariants: a root code != 0, messages, JSON, a finite chain). */
static void run_decode(const char *envelope)
{
    aimux_error_t *decoded = (aimux_error_t *)0x1;
    aimux_error_t *err = aimux_error_from_json(envelope, &decoded);
    if (err) {
        CHECK(decoded == NULL, "aimux_error_from_json: error and a decoded error");
        check_error(err);
        return;
    }
    CHECK(decoded != NULL, "aimux_error_from_json: NULL error and nothing decoded");
    check_error(decoded);
}

static void run_shaped(const char *op, const char *params)
{
    if (strcmp(op, "decode") == 0) {
        run_decode(params);
        return;
    }
    int stream = strcmp(op, "stream_text") == 0;
    if (!stream) {
        char *out = (char *)0x1;
        aimux_error_t *err = aimux_call(op, params, &out);
        if (err) {
            CHECK(out == NULL, "aimux_call: error and a result");
            check_error(err);
        } else {
            CHECK(json_object_text(out), "aimux_call: NULL error and no JSON result");
            aimux_string_free(out);
        }
        return;
    }
    uint64_t h = 12345;
    aimux_error_t *err = aimux_stream(op, params, &h);
    if (err) {
        CHECK(h == 0, "aimux_stream: error and a handle");
        check_error(err);
        return;
    }
    CHECK(h != 0, "aimux_stream: NULL error and handle 0");
    int ended = 0;
    for (int i = 0; i < 200; i++) {
        char *ev = (char *)0x1;
        aimux_error_t *e = aimux_stream_next(h, &ev);
        CHECK(e == NULL, "aimux_stream_next on a live handle returned an error");
        if (!ev) {
            ended = 1;
            break;
        }
        CHECK(json_object_text(ev), "an event that is not a JSON object");
        aimux_string_free(ev);
    }
    (void)ended;
    aimux_stream_free(h);
    char *ev = (char *)0x1;
    aimux_error_t *e = aimux_stream_next(h, &ev);
    CHECK(e != NULL && ev == NULL, "a freed handle did not fail");
    CHECK(aimux_error_code(e) == 203, "a freed handle did not answer 203");
    aimux_error_free(e);
    aimux_stream_free(h);
    aimux_stream_cancel(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20)) return 0;
    char *buf = malloc(size + 2);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    buf[size + 1] = 0;
    const char *nul = memchr(buf, 0, size);
    if (nul) {
        run(buf, nul + 1); /* "<op>\0<params>": params end at the next NUL */
    } else {
        const char *op = OPS[size % (sizeof OPS / sizeof OPS[0])];
        run(op, buf);
    }
    /* the NULL-pointer paths, cheaply, once in a while */
    if (size == 1) {
        char *out = NULL;
        aimux_error_t *err = aimux_call(NULL, buf, &out);
        CHECK(err && aimux_error_code(err) == 204, "NULL op did not answer 204");
        aimux_error_free(err);
        err = aimux_call("aimux.version", NULL, &out);
        CHECK(err && aimux_error_code(err) == 204, "NULL params did not answer 204");
        aimux_error_free(err);
        err = aimux_call("aimux.version", "{}", NULL);
        CHECK(err && aimux_error_code(err) == 204, "NULL out did not answer 204");
        aimux_error_free(err);
    }
    free(buf);
    return 0;
}
