/*
 * The C test harness of libaimux: every function of native/aimux.h and every rule of CONTRACT §3.
 * Built against aimux.h and linked with libaimux.so only. Prints "N passed, N failed" on its own
 * line; exits non-zero on any failure.
 *
 *   test_native            the whole suite
 *   test_native --quick    without the load tests (16 threads x 1000, 100,000 calls, 100 MB inputs)
 *   test_native --quick --no-timing   what `make valgrind` runs (longer safety bounds)
 *   test_native --init-failure   (internal) expects every call to be a 207
 *
 * AIMUX_REPO (compile-time) is the repository root: the shipped recording lives there.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aimux.h"

#ifndef AIMUX_REPO
#error "compile with -DAIMUX_REPO=\"/path/to/repo\""
#endif

static atomic_int g_pass, g_fail;
static int g_verbose;
static int g_no_timing; /* --no-timing (valgrind): the safety bounds that end a hang, x4 */

static void check_(int ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        atomic_fetch_add(&g_pass, 1);
        return;
    }
    atomic_fetch_add(&g_fail, 1);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
#define CHECK(cond, ...) check_(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static const char *RECORDING = AIMUX_REPO "/recordings/demo.jsonl";
static char g_replay_params[4096];

/* ----------------------------------------------------------------------------------------- */
/* Checks an error: code, kind (from the code range), name, a message, JSON with the code. */
static int expect_error(aimux_error_t *e, int code, const char *name, const char *what)
{
    int ok = 1;
    if (e == NULL) {
        CHECK(0, "%s: expected error %d (%s), got success", what, code, name);
        return 0;
    }
    int got = aimux_error_code(e);
    char *msg = aimux_error_message(e), *json = aimux_error_json(e);
    char *kind = aimux_error_kind(e), *nm = aimux_error_name(e);
    char codestr[32];
    snprintf(codestr, sizeof codestr, "\"code\":%d,", code);
    const char *want_kind = aimux_code_kind(code) ? aimux_code_kind(code) : "?";
    if (got != code) {
        CHECK(0, "%s: code %d, expected %d (%s)", what, got, code, json ? json : "?");
        ok = 0;
    } else
        CHECK(1, "");
    CHECK(msg && msg[0], "%s: empty message", what);
    CHECK(json && strncmp(json, "{\"kind\":", 8) == 0 && strstr(json, codestr), "%s: envelope %s",
          what, json ? json : "NULL");
    CHECK(kind && strcmp(kind, want_kind) == 0, "%s: kind %s, expected %s", what,
          kind ? kind : "NULL", want_kind);
    if (name)
        CHECK(nm && strcmp(nm, name) == 0, "%s: name %s, expected %s", what, nm ? nm : "NULL",
              name);
    if (g_verbose) fprintf(stderr, "  %s -> %s\n", what, json ? json : "NULL");
    aimux_string_free(msg);
    aimux_string_free(json);
    aimux_string_free(kind);
    aimux_string_free(nm);
    aimux_error_free(e);
    return ok;
}

/* Calls and expects an error; also checks the out-param was reset to NULL. */
static void call_expect(const char *op, const char *params, int code, const char *name,
                        const char *what)
{
    char *out = (char *)"sentinel";
    aimux_error_t *e = aimux_call(op, params, &out);
    CHECK(out == NULL, "%s: out-param not NULL on failure", what);
    expect_error(e, code, name, what);
}

static char *call_ok(const char *op, const char *params, const char *what)
{
    char *out = NULL;
    aimux_error_t *e = aimux_call(op, params, &out);
    if (e) {
        char *j = aimux_error_json(e);
        CHECK(0, "%s: unexpected error %s", what, j ? j : "?");
        aimux_string_free(j);
        aimux_error_free(e);
        return NULL;
    }
    CHECK(out != NULL, "%s: success without a result", what);
    return out;
}

/* ----------------------------------------------------------------------------------------- */
static void test_version_and_manifest(void)
{
    CHECK(aimux_abi_version() == AIMUX_ABI_VERSION, "abi %u", aimux_abi_version());
    char *v = call_ok("aimux.version", "{}", "version");
    CHECK(v && strstr(v, "\"abiVersion\":1") && strstr(v, "\"version\":\""), "version result %s",
          v ? v : "");
    aimux_string_free(v);
    char *m = call_ok("aimux.manifest", "{}", "manifest");
    CHECK(m && strstr(m, "\"ops\"") && strstr(m, "\"errors\"") && strstr(m, "\"aimux.version\""),
          "manifest result");
    CHECK(m && strstr(m, "\"generate_text\"") && strstr(m, "\"stream_text\""),
          "manifest lists the provider ops");
    CHECK(m && strstr(m, "\"RetryError\"") && strstr(m, "\"InvalidHandleError\""),
          "manifest lists the errors");
    aimux_string_free(m);
}

/* expect_error takes the expected kind from aimux_code_kind (generated): pin that against
 * CONTRACT §1's ranges here, so the kind checks are not the generator checking itself. */
static void test_code_kind_ranges(void)
{
    static const struct {
        int32_t code;
        const char *kind;
    } want[] = {{1, "aimux"},     {99, "aimux"},    {100, "recording"}, {199, "recording"},
                {200, "binding"}, {299, "binding"}, {300, "protocol"},  {399, "protocol"},
                {0, NULL},        {-1, NULL},       {400, NULL}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *got = aimux_code_kind(want[i].code);
        CHECK(want[i].kind ? got && strcmp(got, want[i].kind) == 0 : got == NULL,
              "aimux_code_kind(%d) = %s, expected %s", want[i].code, got ? got : "NULL",
              want[i].kind ? want[i].kind : "NULL");
    }
}

static void test_protocol_errors(void)
{
    call_expect("no.such.op", "{}", 300, "UnknownOpError", "unknown op");
    call_expect("", "{}", 300, "UnknownOpError", "empty op");
    call_expect("aimux.version", "{\"bogus\":1}", 301, "InvalidParamsError", "invalid params");
    call_expect("aimux.version", "[1,2]", 301, "InvalidParamsError", "params not an object");
    call_expect("stream_text", g_replay_params, 302, "WrongModeError", "stream op via aimux_call");
    uint64_t h = 77;
    aimux_error_t *e = aimux_stream("aimux.version", "{}", &h);
    CHECK(h == 0, "stream out-param reset");
    expect_error(e, 302, "WrongModeError", "call op via aimux_stream");
    h = 77;
    e = aimux_stream("no.such.op", "{}", &h);
    CHECK(h == 0, "stream out-param reset (unknown op)");
    expect_error(e, 300, "UnknownOpError", "unknown op via aimux_stream");
}

static void test_wire_errors(void)
{
    call_expect("aimux.version", "{not json", 202, "InvalidWireJSONError", "non-JSON params");
    call_expect("aimux.version", "", 202, "InvalidWireJSONError", "empty params");
    call_expect("aimux.\xff\xfe", "{}", 201, "InvalidUTF8Error", "invalid UTF-8 op");
    call_expect("aimux.version", "{\"a\":\"\xc3\x28\"}", 201, "InvalidUTF8Error",
                "invalid UTF-8 params");
    call_expect(NULL, "{}", 204, "NullArgumentError", "NULL op");
    call_expect("aimux.version", NULL, 204, "NullArgumentError", "NULL params");
    call_expect(NULL, NULL, 204, "NullArgumentError", "NULL op and params");

    /* NULL out-pointers: built by the shim itself. */
    aimux_error_t *e = aimux_call("aimux.version", "{}", NULL);
    char *j = aimux_error_json(e);
    CHECK(j && strstr(j, "\"argument\":\"out_result_json\"") && strstr(j, "\"retryable\":false}"),
          "204 json %s", j ? j : "");
    aimux_string_free(j);
    expect_error(e, 204, "NullArgumentError", "NULL out_result_json");
    expect_error(aimux_stream("stream_text", "{}", NULL), 204, "NullArgumentError",
                 "NULL out_stream");
    expect_error(aimux_stream_next(1, NULL), 204, "NullArgumentError", "NULL out_event_json");
    expect_error(aimux_error_from_json("{}", NULL), 204, "NullArgumentError", "NULL out_error");
    aimux_error_t *dec = (aimux_error_t *)1;
    expect_error(aimux_error_from_json(NULL, &dec), 204, "NullArgumentError", "NULL envelope_json");
    CHECK(dec == NULL, "from_json out reset");
}

/* aimux.h: every out-parameter is set on entry, on every path, NULL-argument paths included:
   each function with each out-pointer NULL in turn, the others holding sentinels. */
static void test_out_params(void)
{
    char *s = (char *)"sentinel";
    uint64_t h = 77, handles[4] = {0};
    int32_t ended = 77;
    size_t count = 77;
    aimux_error_t *dec = (aimux_error_t *)1;

    expect_error(aimux_stream(NULL, "{}", &h), 204, "NullArgumentError", "stream: NULL op");
    CHECK(h == 0, "aimux_stream: *out_stream set on entry (%llu)", (unsigned long long)h);
    h = 77;
    expect_error(aimux_stream_start("stream_text", NULL, &h), 204, "NullArgumentError",
                 "stream_start: NULL params");
    CHECK(h == 0, "aimux_stream_start: *out_stream set on entry (%llu)", (unsigned long long)h);
    expect_error(aimux_stream_start("stream_text", "{}", NULL), 204, "NullArgumentError",
                 "stream_start: NULL out_stream");
    expect_error(aimux_events_fd(NULL), 204, "NullArgumentError", "NULL out_fd");
    expect_error(aimux_poll_ready(1, NULL), 204, "NullArgumentError", "NULL out_json");

    /* the batch reads: two out-parameters, each NULL in turn */
    expect_error(aimux_stream_poll(1, 1, NULL, &ended), 204, "NullArgumentError",
                 "poll: NULL out_events_json");
    CHECK(ended == AIMUX_STREAM_OPEN, "aimux_stream_poll: *out_ended set on entry (%d)", ended);
    expect_error(aimux_stream_poll(1, 1, &s, NULL), 204, "NullArgumentError",
                 "poll: NULL out_ended");
    CHECK(s == NULL, "aimux_stream_poll: *out_events_json set on entry");
    s = (char *)"sentinel";
    ended = 77;
    expect_error(aimux_stream_next_batch(1, 1, NULL, &ended), 204, "NullArgumentError",
                 "next_batch: NULL out_events_json");
    CHECK(ended == AIMUX_STREAM_OPEN, "aimux_stream_next_batch: *out_ended set on entry (%d)",
          ended);
    expect_error(aimux_stream_next_batch(1, 1, &s, NULL), 204, "NullArgumentError",
                 "next_batch: NULL out_ended");
    CHECK(s == NULL, "aimux_stream_next_batch: *out_events_json set on entry");

    /* the ready list: a caller's array and its count */
    expect_error(aimux_ready(NULL, 4, &count), 204, "NullArgumentError", "ready: NULL out_streams");
    CHECK(count == 0, "aimux_ready: *out_count set on entry (%zu)", count);
    expect_error(aimux_ready(handles, 4, NULL), 204, "NullArgumentError", "ready: NULL out_count");

    expect_error(aimux_error_from_json("{}", NULL), 204, "NullArgumentError", "NULL out_error");
    expect_error(aimux_error_from_json(NULL, &dec), 204, "NullArgumentError", "NULL envelope");
    CHECK(dec == NULL, "aimux_error_from_json: *out_error set on entry");
}

/* The accessors, and the chain of a 301 (its cause is a source node) and of a 202. */
static void test_accessors_and_chain(void)
{
    CHECK(aimux_error_code(NULL) == 0, "code(NULL)");
    CHECK(aimux_error_message(NULL) == NULL, "message(NULL)");
    CHECK(aimux_error_json(NULL) == NULL, "json(NULL)");
    CHECK(aimux_error_cause(NULL) == NULL, "cause(NULL)");
    CHECK(aimux_error_kind(NULL) == NULL, "kind(NULL)");
    CHECK(aimux_error_name(NULL) == NULL, "name(NULL)");
    aimux_error_free(NULL);
    aimux_string_free(NULL);
    CHECK(1, "free(NULL)");

    char *out = NULL;
    aimux_error_t *e = aimux_call("aimux.version", "{\"bogus\":1}", &out);
    CHECK(e != NULL, "301 expected");
    if (!e) return;
    char *m1 = aimux_error_message(e), *m2 = aimux_error_message(e);
    CHECK(m1 && m2 && m1 != m2 && strcmp(m1, m2) == 0, "message copies are fresh and equal");
    CHECK(m1 && strstr(m1, "bogus"), "message names the violation: %s", m1 ? m1 : "");
    char *json = aimux_error_json(e);
    CHECK(json && strstr(json, "\"violations\"") && strstr(json, "\"retryable\":false"),
          "301 json %s", json ? json : "");
    const aimux_error_t *c = aimux_error_cause(e);
    CHECK(c != NULL, "301 has a cause");
    if (c) {
        char *k = aimux_error_kind(c), *n = aimux_error_name(c), *cj = aimux_error_json(c),
             *cm = aimux_error_message(c);
        CHECK(aimux_error_code(c) == 0, "source node code 0 (%d)", aimux_error_code(c));
        CHECK(k && strcmp(k, "source") == 0, "source node kind %s", k ? k : "NULL");
        CHECK(n && strcmp(n, "pydantic_core.ValidationError") == 0, "source node type %s",
              n ? n : "NULL");
        CHECK(cj && cj[0] == '{' && !strstr(cj, "\"kind\""), "source node json %s", cj ? cj : "");
        CHECK(cm && strstr(cm, "bogus"), "source node message %s", cm ? cm : "");
        CHECK(aimux_error_cause(c) == NULL, "chain ends");
        aimux_string_free(k);
        aimux_string_free(n);
        aimux_string_free(cj);
        aimux_string_free(cm);
    }
    aimux_string_free(m1);
    aimux_string_free(m2);
    aimux_string_free(json);
    aimux_error_free(e);

    /* 202: the cause is the JSON decoder's exception. */
    e = aimux_call("aimux.version", "{not json", &out);
    c = aimux_error_cause(e);
    CHECK(c != NULL && aimux_error_code(c) == 0, "202 has a source cause");
    aimux_error_free(e);
}

/* aimux_error_from_json (the decode-chain extension): retry chains, source nodes, unknown kinds. */
static void test_from_json(void)
{
    const char *env =
        "{\"kind\":\"aimux\",\"code\":14,\"message\":\"Failed after 2 attempts. Last error: boom\","
        "\"error\":{\"name\":\"AI_RetryError\",\"reason\":\"maxRetriesExceeded\",\"errors\":["
        "{\"kind\":\"aimux\",\"code\":11,\"message\":\"first\",\"error\":{\"name\":\"AI_"
        "APICallError\",\"isRetryable\":true}},"
        "{\"kind\":\"aimux\",\"code\":11,\"message\":\"Cannot connect to API: \\u00e9\\\"x\\\"\","
        "\"error\":{\"name\":\"AI_APICallError\",\"isRetryable\":true},"
        "\"cause\":{\"message\":\"[Errno 111] Connection "
        "refused\",\"type\":\"ConnectionRefusedError\"}}]},"
        "\"retryable\":true}";
    aimux_error_t *dec = NULL;
    aimux_error_t *e = aimux_error_from_json(env, &dec);
    CHECK(e == NULL && dec != NULL, "from_json decodes");
    if (e) {
        expect_error(e, 0, NULL, "from_json");
        return;
    }
    const char *want_names[] = {"AI_RetryError", "AI_APICallError", "ConnectionRefusedError"};
    const char *want_kinds[] = {"aimux", "aimux", "source"};
    const int want_codes[] = {AIMUX_CODE_RETRY, AIMUX_CODE_API_CALL, 0};
    const char *want_msgs[] = {"Failed after 2 attempts. Last error: boom",
                               "Cannot connect to API: \xc3\xa9\"x\"",
                               "[Errno 111] Connection refused"};
    int i = 0;
    for (const aimux_error_t *n = dec; n; n = aimux_error_cause(n), i++) {
        if (i >= 3) {
            CHECK(0, "chain too long");
            break;
        }
        char *k = aimux_error_kind(n), *nm = aimux_error_name(n), *m = aimux_error_message(n);
        CHECK(aimux_error_code(n) == want_codes[i], "link %d code %d", i, aimux_error_code(n));
        CHECK(k && strcmp(k, want_kinds[i]) == 0, "link %d kind %s", i, k ? k : "NULL");
        CHECK(nm && strcmp(nm, want_names[i]) == 0, "link %d name %s", i, nm ? nm : "NULL");
        CHECK(m && strcmp(m, want_msgs[i]) == 0, "link %d message %s", i, m ? m : "NULL");
        aimux_string_free(k);
        aimux_string_free(nm);
        aimux_string_free(m);
    }
    CHECK(i == 3, "chain of 3 links (%d)", i);
    char *rj = aimux_error_json(dec);
    CHECK(rj && strcmp(rj, env) == 0, "root json is the envelope byte for byte");
    aimux_string_free(rj);
    aimux_error_free(dec);

    /* an unknown kind and code still decode; a node without error.name has no name */
    dec = NULL;
    e = aimux_error_from_json(
        "{\"kind\":\"future\",\"code\":777,\"message\":\"m\",\"error\":{},\"retryable\":false}",
        &dec);
    CHECK(e == NULL && dec, "unknown kind decodes");
    if (dec) {
        char *k = aimux_error_kind(dec), *nm = aimux_error_name(dec);
        CHECK(k && strcmp(k, "future") == 0, "unknown kind kept: %s", k ? k : "NULL");
        CHECK(nm == NULL, "missing name -> NULL");
        CHECK(aimux_error_code(dec) == 777, "unknown code kept");
        aimux_string_free(k);
        aimux_string_free(nm);
    }
    aimux_error_free(dec);
    dec = (aimux_error_t *)1;
    expect_error(aimux_error_from_json("not json", &dec), 202, "InvalidWireJSONError",
                 "from_json non-JSON");
    CHECK(dec == NULL, "from_json out reset on failure");
    expect_error(aimux_error_from_json("[1]", &dec), 202, "InvalidWireJSONError",
                 "from_json non-object");
    expect_error(aimux_error_from_json("{\"message\":\"\xff\"}", &dec), 201, "InvalidUTF8Error",
                 "from_json bad UTF-8");
}

/* The accessors answer what the decoder decided (issue 13): escaped and duplicate keys read as
   a JSON parser reads them, the root's own retryable / retryAfterMs as given, and a root code
   outside int32 is a 202, never a root with code 0. */
static void test_accessors_agree_with_decoders(void)
{
    aimux_error_t *dec = NULL, *e;
    /* "\u006bind" is "kind" escaped; the last of duplicate keys wins (as in orjson, Go, JS) */
    e = aimux_error_from_json(
        "{\"\\u006bind\":\"aimux\",\"code\":11,\"message\":\"m\",\"error\":{\"name\":\"AI_Old\","
        "\"name\":\"AI_APICallError\"},\"retryable\":true,\"retryAfterMs\":0,"
        "\"cause\":{\"type\":\"A\",\"message\":\"s\",\"type\":\"OSError\"}}",
        &dec);
    CHECK(e == NULL && dec, "escaped-key envelope decodes");
    if (dec) {
        char *k = aimux_error_kind(dec), *nm = aimux_error_name(dec);
        CHECK(k && strcmp(k, "aimux") == 0, "escaped kind key: kind %s", k ? k : "NULL");
        CHECK(nm && strcmp(nm, "AI_APICallError") == 0, "duplicate name: %s", nm ? nm : "NULL");
        CHECK(aimux_error_retryable(dec) == 1, "root retryable as given");
        CHECK(aimux_error_retry_after_ms(dec) == 0, "root retryAfterMs 0 as given (%lld)",
              (long long)aimux_error_retry_after_ms(dec));
        aimux_string_free(k);
        aimux_string_free(nm);
        const aimux_error_t *c = aimux_error_cause(dec);
        char *ck = aimux_error_kind(c), *cn = aimux_error_name(c);
        CHECK(ck && strcmp(ck, "source") == 0, "source kind %s", ck ? ck : "NULL");
        CHECK(cn && strcmp(cn, "OSError") == 0, "duplicate type: %s", cn ? cn : "NULL");
        CHECK(aimux_error_retryable(c) == 0 && aimux_error_retry_after_ms(c) == -1,
              "cause: no root fields");
        aimux_string_free(ck);
        aimux_string_free(cn);
    }
    aimux_error_free(dec);
    dec = NULL;
    e = aimux_error_from_json(
        "{\"kind\":\"aimux\",\"code\":11,\"message\":\"m\",\"error\":{},\"retryable\":false}",
        &dec);
    CHECK(e == NULL && dec && aimux_error_retryable(dec) == 0 &&
              aimux_error_retry_after_ms(dec) == -1,
          "no retryAfterMs -> -1");
    aimux_error_free(e);
    aimux_error_free(dec);
    dec = NULL;
    expect_error(
        aimux_error_from_json("{\"kind\":\"aimux\",\"code\":4294967307,\"message\":\"m\",\"error\":"
                              "{\"name\":\"AI_APICallError\"},\"retryable\":false}",
                              &dec),
        202, "InvalidWireJSONError", "root code beyond 32 bits");
    CHECK(dec == NULL, "no root with code 0");
    expect_error(aimux_error_from_json(
                     "{\"kind\":\"aimux\",\"code\":2147483648,\"message\":\"m\",\"error\":{},"
                     "\"retryable\":false}",
                     &dec),
                 202, "InvalidWireJSONError", "root code beyond int32");
    CHECK(aimux_error_retryable(NULL) == 0 && aimux_error_retry_after_ms(NULL) == -1,
          "root fields of NULL");
}

/* Mutated envelopes (bytes flipped, cut, duplicated; fixed seed): decoding never crashes, and every
   decoded chain is walkable with every accessor. */
static void test_from_json_fuzz(void)
{
    static const char *seeds[] = {
        "{\"kind\":\"aimux\",\"code\":14,\"message\":\"r\",\"error\":{\"name\":\"AI_RetryError\","
        "\"errors\":["
        "{\"kind\":\"aimux\",\"code\":11,\"message\":\"a\\u00e9\\n\",\"error\":{\"name\":\"AI_"
        "APICallError\"},"
        "\"cause\":{\"message\":\"[Errno "
        "111]\",\"type\":\"ConnectionRefusedError\"}}]},\"retryable\":true}",
        "{\"kind\":\"protocol\",\"code\":301,\"message\":\"bad\",\"error\":{\"name\":"
        "\"InvalidParamsError\","
        "\"violations\":[{\"path\":\"x\",\"reason\":\"y\"}]},\"cause\":{\"message\":\"m\","
        "\"cause\":{\"message\":\"n\"}},"
        "\"retryable\":false}",
        "{ \"kind\" : \"x\" , \"code\" : 1e3 , \"message\" : \"\\ud83d\\ude00\" , \"error\" : null "
        "}",
    };
    const char junk[] = "{}[]\":,\\u0 \n\xff\xc3";
    unsigned seed = 12345;
    int decoded = 0, rejected = 0, other = 0;
    for (int it = 0; it < 3000; it++) {
        const char *src = seeds[it % 3];
        size_t n = strlen(src);
        char buf[2048];
        memcpy(buf, src, n + 1);
        int edits = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 4;
        for (int k = 0; k < edits; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % (n ? n : 1);
            switch ((seed >> 4) % 3) {
            case 0: buf[at] = junk[(seed >> 12) % (sizeof junk - 1)]; break; /* flip */
            case 1:
                buf[at] = 0;
                n = at;
                break; /* cut */
            case 2:
                if (n + 1 < sizeof buf) {
                    memmove(buf + at + 1, buf + at, n - at + 1);
                    buf[at] = buf[(seed >> 16) % (n + 1)];
                    n++;
                }
                break;
            }
            if (n == 0) break;
        }
        buf[n] = 0;
        aimux_error_t *dec = NULL;
        aimux_error_t *e = aimux_error_from_json(buf, &dec);
        if (e) {
            int c = aimux_error_code(e);
            if (c == 201 || c == 202)
                rejected++;
            else
                other++;
            aimux_error_free(e);
            continue;
        }
        decoded++;
        int links = 0;
        for (const aimux_error_t *x = dec; x; x = aimux_error_cause(x), links++) {
            char *a = aimux_error_kind(x), *b = aimux_error_name(x), *c = aimux_error_message(x),
                 *d = aimux_error_json(x);
            if (!a || !c || !d) other++;
            aimux_string_free(a);
            aimux_string_free(b);
            aimux_string_free(c);
            aimux_string_free(d);
        }
        if (links < 1 || links > 16) other++;
        aimux_error_free(dec);
    }
    printf("from_json fuzz: 3000 mutated envelopes: %d decoded, %d rejected (201/202), %d "
           "unexpected\n",
           decoded, rejected, other);
    CHECK(other == 0, "fuzzed envelopes: only decodes or 201/202 (%d unexpected)", other);
    CHECK(decoded > 0 && rejected > 0, "the fuzz exercised both paths");
}

/* ----------------------------------------------------------------------------------------- */
/* A local OpenAI-compatible server: chat completions answered once OVERLAP of them are open at
   once (a barrier: calls that never overlap get a 409 "barrier not reached" after a safety bound),
   or (stream) one SSE chunk and then a stall until the client goes away (at most 60 s; each
   client that left a stall is counted in g_srv_gone). No test asserts a duration: a test waits
   on what the server saw. */
#define OVERLAP 4
static int g_srv_fd = -1, g_srv_port;
static atomic_int g_srv_stop;
static pthread_mutex_t g_srv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_srv_cv = PTHREAD_COND_INITIALIZER;
static int g_srv_waiting, g_srv_generation, g_srv_gone;

static struct timespec deadline_in(int seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += g_no_timing ? 4 * seconds : seconds;
    return ts;
}

/* The barrier: 0 once OVERLAP requests waited here at once, else (the safety bound passed) how
   many were in flight together. */
static int srv_barrier(void)
{
    struct timespec until = deadline_in(30);
    int together = OVERLAP, gen;
    pthread_mutex_lock(&g_srv_mu);
    gen = g_srv_generation;
    if (++g_srv_waiting == OVERLAP) {
        g_srv_waiting = 0;
        g_srv_generation++;
        pthread_cond_broadcast(&g_srv_cv);
    }
    while (g_srv_generation == gen &&
           pthread_cond_timedwait(&g_srv_cv, &g_srv_mu, &until) != ETIMEDOUT) {}
    if (g_srv_generation == gen) together = g_srv_waiting--;
    pthread_mutex_unlock(&g_srv_mu);
    return together == OVERLAP ? 0 : together;
}

static void srv_client_gone(void)
{
    pthread_mutex_lock(&g_srv_mu);
    g_srv_gone++;
    pthread_cond_broadcast(&g_srv_cv);
    pthread_mutex_unlock(&g_srv_mu);
}

/* Waits (up to a safety bound) until `n` clients in all have left a stalled stream; the count. */
static int srv_wait_gone(int n)
{
    struct timespec until = deadline_in(30);
    int seen;
    pthread_mutex_lock(&g_srv_mu);
    while (g_srv_gone < n && pthread_cond_timedwait(&g_srv_cv, &g_srv_mu, &until) != ETIMEDOUT) {}
    seen = g_srv_gone;
    pthread_mutex_unlock(&g_srv_mu);
    return seen;
}

static void *conn_thread(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[65536];
    size_t len = 0;
    long content_length = -1;
    char *body = NULL;
    for (;;) {
        ssize_t n = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (n <= 0) goto out;
        len += (size_t)n;
        buf[len] = 0;
        char *hdr_end = strstr(buf, "\r\n\r\n");
        if (hdr_end) {
            char *cl = strcasestr(buf, "content-length:");
            content_length = cl ? strtol(cl + 15, NULL, 10) : 0;
            body = hdr_end + 4;
            if ((long)(len - (size_t)(body - buf)) >= content_length) break;
        }
        if (len >= sizeof buf - 1) goto out;
    }
    if (strstr(body, "\"stream\":true") || strstr(body, "\"stream\": true")) {
        const char *head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            "data: {\"id\":\"chatcmpl-stall\",\"object\":\"chat.completion.chunk\",\"created\":0,"
            "\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
            "\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n";
        if (send(fd, head, strlen(head), MSG_NOSIGNAL) < 0) goto out;
        if (strstr(body, "truncate-me")) goto out; /* ends without the terminal event */
        double until = now_s() + 60; /* a safety bound: a test waits for the client to leave */
        while (!atomic_load(&g_srv_stop) && now_s() < until) {
            struct pollfd p = {fd, POLLIN, 0};
            if (poll(&p, 1, 50) > 0) {
                char tmp[256];
                if (recv(fd, tmp, sizeof tmp, 0) <= 0) { /* client closed */
                    srv_client_gone();
                    break;
                }
            }
        }
    } else if (strstr(body, "status-429")) { /* a rate limit, every time */
        const char *resp =
            "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
            "retry-after: 0\r\nContent-Length: 62\r\nConnection: close\r\n\r\n"
            "{\"error\":{\"message\":\"slow down\",\"type\":\"rate_limit_exceeded\"}}";
        send(fd, resp, strlen(resp), MSG_NOSIGNAL);
    } else {
        int together = srv_barrier();
        if (together) {
            char body[256], resp[512];
            snprintf(body, sizeof body,
                     "{\"error\":{\"message\":\"barrier not reached: %d of %d calls in flight "
                     "together\",\"type\":\"invalid_request_error\"}}",
                     together, OVERLAP);
            int n = snprintf(resp, sizeof resp,
                             "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n"
                             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                             strlen(body), body);
            send(fd, resp, (size_t)n, MSG_NOSIGNAL);
            goto out;
        }
        const char *json =
            "{\"id\":\"chatcmpl-slow\",\"object\":\"chat.completion\",\"created\":0,"
            "\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
            "\"assistant\","
            "\"content\":\"slow hello\"},\"finish_reason\":\"stop\"}],"
            "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}";
        char resp[2048];
        int n =
            snprintf(resp, sizeof resp,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s",
                     strlen(json), json);
        send(fd, resp, (size_t)n, MSG_NOSIGNAL);
    }
out:
    close(fd);
    return NULL;
}

static void *accept_thread(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(g_srv_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR) continue;
            return NULL;
        }
        pthread_t t;
        if (pthread_create(&t, NULL, conn_thread, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
}

static int start_server(void)
{
    struct sockaddr_in a = {0};
    socklen_t al = sizeof a;
    int one = 1;
    g_srv_fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(g_srv_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(g_srv_fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(g_srv_fd, 64) < 0) return -1;
    getsockname(g_srv_fd, (struct sockaddr *)&a, &al);
    g_srv_port = ntohs(a.sin_port);
    pthread_t t;
    pthread_create(&t, NULL, accept_thread, NULL);
    pthread_detach(t);
    return 0;
}

static void server_params(char *buf, size_t n, int stream_timeout)
{
    (void)stream_timeout;
    snprintf(buf, n,
             "{\"model\":{\"provider\":\"openai\",\"modelId\":\"gpt-4o-mini\",\"baseURL\":\"http://"
             "127.0.0.1:%d/v1\","
             "\"apiKey\":\"sk-test\"},\"prompt\":\"hi\",\"maxRetries\":0}",
             g_srv_port);
}

/* The status of the last attempt is on the retry error the caller holds, and on each attempt;
   a refused connection, a source node and NULL have none. */
static void test_status_code(void)
{
    char params[512], *out = NULL;
    snprintf(params, sizeof params,
             "{\"model\":{\"provider\":\"openai\",\"modelId\":\"gpt-4o-mini\",\"baseURL\":"
             "\"http://127.0.0.1:%d/v1\",\"apiKey\":\"sk-test\"},\"prompt\":\"status-429\","
             "\"maxRetries\":1,\"retry\":{\"initialDelayMs\":1}}",
             g_srv_port);
    aimux_error_t *e = aimux_call("generate_text", params, &out);
    CHECK(e && aimux_error_code(e) == AIMUX_CODE_RETRY, "429 twice: RetryError (%d)",
          aimux_error_code(e));
    CHECK(aimux_error_status_code(e) == 429, "root status %d", aimux_error_status_code(e));
    const aimux_error_t *last = aimux_error_cause(e);
    CHECK(aimux_error_code(last) == AIMUX_CODE_API_CALL && aimux_error_status_code(last) == 429,
          "last attempt: APICallError 429 (%d)", aimux_error_status_code(last));
    aimux_error_free(e);
    aimux_string_free(out);
    snprintf(params, sizeof params,
             "{\"model\":{\"provider\":\"openai\",\"modelId\":\"gpt-4o-mini\",\"baseURL\":"
             "\"http://127.0.0.1:1/v1\",\"apiKey\":\"sk-test\"},\"prompt\":\"hi\","
             "\"maxRetries\":1,\"retry\":{\"initialDelayMs\":1}}");
    e = aimux_call("generate_text", params, &out);
    CHECK(e && aimux_error_code(e) == AIMUX_CODE_RETRY && aimux_error_status_code(e) == 0,
          "refused: no status (%d)", aimux_error_status_code(e));
    for (const aimux_error_t *n = e; n; n = aimux_error_cause(n))
        CHECK(aimux_error_status_code(n) == 0, "refused chain: no status on any link");
    aimux_error_free(e);
    aimux_error_t *dec = NULL;
    e = aimux_error_from_json("{\"kind\":\"aimux\",\"code\":14,\"message\":\"m\",\"error\":{"
                              "\"name\":\"AI_RetryError\",\"statusCode\":503,\"errors\":[]},"
                              "\"retryable\":true,\"cause\":{\"message\":\"s\","
                              "\"statusCode\":500}}",
                              &dec);
    CHECK(e == NULL && aimux_error_status_code(dec) == 503 &&
              aimux_error_status_code(aimux_error_cause(dec)) == 0,
          "decoded: the node's own statusCode, none on a source node");
    aimux_error_free(e);
    aimux_error_free(dec);
    CHECK(aimux_error_status_code(NULL) == 0, "NULL: no status");
}

/* ----------------------------------------------------------------------------------------- */
static void test_generate_replay(void)
{
    char *r = call_ok("generate_text", g_replay_params, "generate_text replay");
    CHECK(r && strstr(r, "\"text\":\"Hello!\"") && strstr(r, "\"finishReason\":\"stop\"") &&
              strstr(r, "\"totalTokens\":14"),
          "replay result %s", r ? r : "NULL");
    aimux_string_free(r);
}

static void test_connection_refused_chain(void)
{
    const char *params = "{\"model\":{\"provider\":\"openai\",\"modelId\":\"gpt-4o-mini\","
                         "\"baseURL\":\"http://127.0.0.1:1/v1\","
                         "\"apiKey\":\"sk-test\"},\"prompt\":\"hi\",\"maxRetries\":1,\"retry\":{"
                         "\"initialDelayMs\":10}}";
    char *out = NULL;
    aimux_error_t *e = aimux_call("generate_text", params, &out);
    CHECK(e != NULL, "closed port fails");
    if (!e) {
        aimux_string_free(out);
        return;
    }
    char *json = aimux_error_json(e);
    CHECK(aimux_error_code(e) == AIMUX_CODE_RETRY, "RetryError root (%d)", aimux_error_code(e));
    CHECK(json && !strstr(json, "sk-test") && !strstr(json, "127.0.0.1:1"),
          "no secret / URL in the envelope");
    const aimux_error_t *n = aimux_error_cause(e);
    char *nm = aimux_error_name(n), *m = aimux_error_message(n);
    CHECK(aimux_error_code(n) == AIMUX_CODE_API_CALL && nm && strcmp(nm, "AI_APICallError") == 0,
          "second link APICallError (%s)", nm ? nm : "NULL");
    CHECK(m && strncmp(m, "Cannot connect to API: ", 23) == 0, "APICallError message %s",
          m ? m : "NULL");
    aimux_string_free(nm);
    aimux_string_free(m);
    const aimux_error_t *last = n;
    int links = 1;
    for (; n; n = aimux_error_cause(n)) {
        last = n;
        links++;
    }
    char *lm = aimux_error_message(last);
    CHECK(last && aimux_error_code(last) == 0 && lm && strstr(lm, "Connection refused"),
          "chain ends at the OS error (%s, %d links)", lm ? lm : "NULL", links);
    aimux_string_free(lm);
    aimux_string_free(json);
    aimux_error_free(e);
}

static void test_streams(void)
{
    uint64_t h = 0, h2 = 0;
    char *ev = (char *)"sentinel";
    aimux_error_t *e = aimux_stream("stream_text", g_replay_params, &h);
    if (e) {
        expect_error(e, 0, NULL, "stream_text replay opens");
        return;
    }
    CHECK(h != 0, "handle non-zero");
    const char *want[] = {"\"text-delta\"", "\"text-delta\"", "\"finish\""};
    const char *want_text[] = {"\"Hel\"", "\"lo!\"", "\"stop\""};
    for (int i = 0; i < 3; i++) {
        ev = NULL;
        e = aimux_stream_next(h, &ev);
        CHECK(e == NULL && ev && strstr(ev, want[i]) && strstr(ev, want_text[i]), "event %d: %s", i,
              ev ? ev : "NULL");
        aimux_error_free(e);
        aimux_string_free(ev);
    }
    ev = (char *)"sentinel";
    e = aimux_stream_next(h, &ev);
    CHECK(e == NULL && ev == NULL, "end of stream: NULL event");
    e = aimux_stream_next(h, &ev);
    CHECK(e == NULL && ev == NULL, "after the end: still the end");
    aimux_stream_free(h);
    ev = (char *)"sentinel";
    expect_error(aimux_stream_next(h, &ev), 203, "InvalidHandleError", "next on a freed handle");
    CHECK(ev == NULL, "event out reset on error");
    aimux_stream_free(h);   /* double free: ignored */
    aimux_stream_cancel(h); /* cancel a freed handle: ignored */
    CHECK(1, "free/cancel of a freed handle do not crash");

    /* handles are never reused */
    e = aimux_stream("stream_text", g_replay_params, &h2);
    CHECK(e == NULL && h2 > h, "a new handle %llu after %llu", (unsigned long long)h2,
          (unsigned long long)h);
    aimux_error_free(e);
    /* cancel: the next call reports the end */
    aimux_stream_cancel(h2);
    ev = NULL;
    e = aimux_stream_next(h2, &ev);
    CHECK(e == NULL, "next after cancel is not an error");
    aimux_error_free(e);
    if (ev && strstr(ev, "\"Hel\"")) { /* the already-pulled first event may still be delivered */
        aimux_string_free(ev);
        ev = NULL;
        e = aimux_stream_next(h2, &ev);
        aimux_error_free(e);
    }
    CHECK(ev == NULL, "cancelled stream ends (%s)", ev ? ev : "NULL");
    aimux_string_free(ev);
    aimux_stream_free(h2);

    expect_error(aimux_stream_next(0, &ev), 203, "InvalidHandleError", "handle 0");
    expect_error(aimux_stream_next(987654321ULL, &ev), 203, "InvalidHandleError", "unknown handle");
    expect_error(aimux_stream_next(UINT64_MAX, &ev), 203, "InvalidHandleError",
                 "handle UINT64_MAX");
    aimux_stream_cancel(987654321ULL);
    aimux_stream_free(UINT64_MAX);
    CHECK(1, "cancel/free of unknown handles do not crash");
}

struct cancel_arg {
    uint64_t h;
    int delay_ms;     /* a head start for the blocked next (its length is not checked) */
    atomic_int fired; /* set just before the cancel / free */
};
static void *cancel_later(void *p)
{
    struct cancel_arg *a = (struct cancel_arg *)p;
    usleep((useconds_t)a->delay_ms * 1000);
    atomic_store(&a->fired, 1);
    aimux_stream_cancel(a->h);
    return NULL;
}

static void *free_later(void *p)
{
    struct cancel_arg *a = (struct cancel_arg *)p;
    usleep((useconds_t)a->delay_ms * 1000);
    atomic_store(&a->fired, 1);
    aimux_stream_free(a->h);
    return NULL;
}

/* A stream whose server stalls after one chunk (for a minute): next blocks; a cancel from another
   thread wakes it, and the server sees the client leave. */
static void test_cancel_wakes_next(void)
{
    char params[1024];
    server_params(params, sizeof params, 0);
    uint64_t h = 0;
    aimux_error_t *e = aimux_stream("stream_text", params, &h);
    if (e) {
        expect_error(e, 0, NULL, "stream against the stalling server");
        return;
    }
    char *ev = NULL;
    e = aimux_stream_next(h, &ev);
    CHECK(e == NULL && ev && strstr(ev, "\"Hi\""), "first event from the stalling server: %s",
          ev ? ev : "NULL");
    aimux_error_free(e);
    aimux_string_free(ev);
    int gone = srv_wait_gone(0);
    struct cancel_arg a = {h, 300, 0};
    pthread_t t;
    pthread_create(&t, NULL, cancel_later, &a);
    ev = NULL;
    e = aimux_stream_next(h, &ev); /* blocks until the cancel */
    int fired = atomic_load(&a.fired);
    pthread_join(t, NULL);
    CHECK(fired, "next returned only after the cancel (it was blocked)");
    CHECK(e == NULL && ev == NULL, "cancelled next reports the end, not the server's close (%s)",
          ev ? ev : "no event");
    CHECK(srv_wait_gone(gone + 1) == gone + 1, "the server saw the cancelled client leave");
    aimux_error_free(e);
    aimux_string_free(ev);
    aimux_stream_free(h);
    expect_error(aimux_stream_next(h, &ev), 203, "InvalidHandleError", "freed after cancel");

    /* free (not cancel) from another thread while next is blocked: next returns, no crash */
    h = 0;
    e = aimux_stream("stream_text", params, &h);
    if (e) {
        expect_error(e, 0, NULL, "second stream against the stalling server");
        return;
    }
    ev = NULL;
    e = aimux_stream_next(h, &ev);
    aimux_error_free(e);
    aimux_string_free(ev);
    gone = srv_wait_gone(0);
    struct cancel_arg b = {h, 300, 0};
    pthread_create(&t, NULL, free_later, &b);
    ev = NULL;
    e = aimux_stream_next(h, &ev);
    fired = atomic_load(&b.fired);
    pthread_join(t, NULL);
    CHECK(fired, "next returned only after the free (it was blocked)");
    CHECK(ev == NULL && (e == NULL || aimux_error_code(e) == 203),
          "next blocked during a free ends (or is 203)");
    CHECK(srv_wait_gone(gone + 1) == gone + 1, "the server saw the freed stream's client leave");
    aimux_error_free(e);
    aimux_string_free(ev);
    expect_error(aimux_stream_next(h, &ev), 203, "InvalidHandleError", "freed while blocked");
}

/* A stream whose connection drops after one chunk: the failure arrives as an `error` event. */
static void test_error_event(void)
{
    char params[1024];
    snprintf(params, sizeof params,
             "{\"model\":{\"provider\":\"openai\",\"modelId\":\"gpt-4o-mini\",\"baseURL\":\"http://"
             "127.0.0.1:%d/v1\","
             "\"apiKey\":\"sk-test\"},\"prompt\":\"truncate-me\",\"maxRetries\":0}",
             g_srv_port);
    uint64_t h = 0;
    aimux_error_t *e = aimux_stream("stream_text", params, &h);
    if (e) {
        expect_error(e, 0, NULL, "stream against the truncating server");
        return;
    }
    char *ev = NULL;
    int saw_error = 0, n = 0;
    while (n < 10) {
        ev = NULL;
        e = aimux_stream_next(h, &ev);
        if (e || !ev) break;
        n++;
        if (strstr(ev, "\"type\":\"error\"")) {
            saw_error = 1;
            CHECK(strstr(ev, "\"error\":{\"kind\":") && !strstr(ev, "sk-test"),
                  "error event carries an envelope: %s", ev);
            /* the envelope inside decodes like any other */
            const char *env = strstr(ev, "\"error\":{") + 8;
            char *copy = strdup(env);
            copy[strlen(copy) - 1] = 0; /* drop the event's closing brace */
            aimux_error_t *dec = NULL;
            aimux_error_t *de = aimux_error_from_json(copy, &dec);
            CHECK(de == NULL && dec && aimux_error_code(dec) > 0, "error event envelope decodes");
            aimux_error_free(de);
            aimux_error_free(dec);
            free(copy);
        }
        aimux_string_free(ev);
    }
    CHECK(e == NULL, "no returned error for a failure inside the stream");
    CHECK(saw_error, "a truncated stream ends with an error event, not a finish (%d events)", n);
    aimux_error_free(e);
    aimux_stream_free(h);
}

struct slow_arg {
    int ok;
    char why[600];
};
static void *slow_call(void *p)
{
    struct slow_arg *a = (struct slow_arg *)p;
    char params[1024], *out = NULL;
    server_params(params, sizeof params, 0);
    aimux_error_t *e = aimux_call("generate_text", params, &out);
    a->ok = e == NULL && out && strstr(out, "slow hello");
    if (e) {
        char *m = aimux_error_message(e);
        snprintf(a->why, sizeof a->why, "error %d: %s", aimux_error_code(e), m ? m : "?");
        aimux_string_free(m);
    } else
        snprintf(a->why, sizeof a->why, "%.500s", out ? out : "NULL");
    aimux_error_free(e);
    aimux_string_free(out);
    return NULL;
}

/* 4 calls overlap: the server answers none until all 4 are open at once (calls serialised by a
   lock held while waiting would each get its 409 "barrier not reached"). */
static void test_calls_overlap(void)
{
    pthread_t t[OVERLAP];
    struct slow_arg a[OVERLAP];
    memset(a, 0, sizeof a);
    for (int i = 0; i < OVERLAP; i++) pthread_create(&t[i], NULL, slow_call, &a[i]);
    for (int i = 0; i < OVERLAP; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < OVERLAP; i++)
        CHECK(a[i].ok, "call %d of %d in flight together succeeds: %s", i, OVERLAP, a[i].why);
}

/* ----------------------------------------------------------------------------------------- */
static void test_huge_inputs(void)
{
    size_t n = 100u * 1024 * 1024;
    char *big = (char *)malloc(n + 1);
    if (!big) {
        CHECK(0, "malloc 100 MB");
        return;
    }
    memset(big, 'a', n);
    big[n] = 0;
    call_expect("aimux.version", big, 202, "InvalidWireJSONError", "100 MB non-JSON params");
    call_expect(big, "{}", 300, "UnknownOpError", "100 MB op name");
    /* 100 MB of valid JSON: an object with one huge string member */
    big[0] = '{';
    big[1] = '"';
    big[2] = 'x';
    big[3] = '"';
    big[4] = ':';
    big[5] = '"';
    big[n - 2] = '"';
    big[n - 1] = '}';
    call_expect("aimux.version", big, 301, "InvalidParamsError", "100 MB JSON params");
    big[100] = (char)0xff;
    call_expect("aimux.version", big, 201, "InvalidUTF8Error", "100 MB invalid UTF-8");
    free(big);
    /* the envelopes stay bounded: an op name of 100 MB is not echoed */
    n = 4u * 1024 * 1024;
    big = (char *)malloc(n + 1);
    memset(big, 'b', n);
    big[n] = 0;
    char *out = NULL;
    aimux_error_t *e = aimux_call(big, "{}", &out);
    char *j = aimux_error_json(e), *m = aimux_error_message(e);
    CHECK(j && strlen(j) <= 1024 * 1024 && m && strlen(m) <= 1024,
          "bounded envelope (%zu / %zu bytes)", j ? strlen(j) : 0, m ? strlen(m) : 0);
    aimux_string_free(j);
    aimux_string_free(m);
    aimux_error_free(e);
    free(big);
}

/* 16 threads x 1000 mixed calls, every answer checked. */
static atomic_int g_mixed_bad;
static void *mixed_thread(void *p)
{
    int id = (int)(intptr_t)p;
    for (int i = 0; i < 1000; i++) {
        char *out = NULL;
        aimux_error_t *e = NULL;
        int want = -1, got, kind = (i + id) % 8, sub = (i / 8) % 8;
        switch (kind) {
        case 0:
        case 1:
            e = aimux_call("aimux.version", "{}", &out);
            want = 0;
            break;
        case 2:
            e = aimux_call("nope", "{}", &out);
            want = 300;
            break;
        case 3:
            e = aimux_call("aimux.version", "{\"x\":1}", &out);
            want = 301;
            break;
        case 4:
            e = aimux_call("aimux.version", "{", &out);
            want = 202;
            break;
        case 5:
            e = aimux_stream_next(1000000000ULL + (uint64_t)i, &out);
            want = 203;
            break;
        case 6:
            e = aimux_call("aimux.version", "{}", NULL);
            want = 204;
            break;
        case 7:
            if (sub == 0) {
                e = aimux_call("generate_text", g_replay_params, &out);
                want = 0;
            } else if (sub == 1) { /* a whole replayed stream: open, 3 events, end, free */
                uint64_t h = 0;
                int events = 0;
                want = 0;
                e = aimux_stream("stream_text", g_replay_params, &h);
                while (!e) {
                    char *ev = NULL;
                    e = aimux_stream_next(h, &ev);
                    if (!ev) break;
                    events++;
                    aimux_string_free(ev);
                }
                aimux_stream_free(h);
                if (!e && events != 3) {
                    got = -5;
                    goto report;
                }
            } else {
                e = aimux_call("aimux.manifest", "{}", &out);
                want = 0;
            }
            break;
        }
        got = e ? aimux_error_code(e) : 0;
        if (want == 0 && kind == 7 && sub == 0 && !(out && strstr(out, "Hello!")))
            got = -2;
        else if (want == 0 && kind < 2 && !(out && strstr(out, "\"abiVersion\":1")))
            got = -2;
        else if (want == 0 && kind == 7 && sub > 1 && !(out && strstr(out, "\"errors\"")))
            got = -2;
        if (e) { /* the chain of every error is walkable */
            char *j = aimux_error_json(e);
            if (!j || !strstr(j, "\"code\":")) got = -3;
            for (const aimux_error_t *c = aimux_error_cause(e); c; c = aimux_error_cause(c)) {
                char *cm = aimux_error_message(c);
                if (!cm) got = -4;
                aimux_string_free(cm);
            }
            aimux_string_free(j);
        }
    report:
        if (got != want) {
            if (atomic_fetch_add(&g_mixed_bad, 1) < 5)
                fprintf(stderr, "mixed: thread %d call %d kind %d: got %d want %d\n", id, i, kind,
                        got, want);
        }
        aimux_error_free(e);
        aimux_string_free(out);
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[16];
    double t0 = now_s();
    for (int i = 0; i < 16; i++) pthread_create(&t[i], NULL, mixed_thread, (void *)(intptr_t)i);
    for (int i = 0; i < 16; i++) pthread_join(t[i], NULL);
    printf("threads: 16 x 1000 mixed calls in %.2f s, %d wrong\n", now_s() - t0,
           atomic_load(&g_mixed_bad));
    CHECK(atomic_load(&g_mixed_bad) == 0, "16 x 1000 mixed calls all correct (%d wrong)",
          atomic_load(&g_mixed_bad));
}

/* 100,000 calls (half successes, half errors walked to the end): RSS must stay flat. */
static void test_rss(void)
{
    const int warm = 10000, total = 100000;
    long r0 = 0, r1;
    double t0 = now_s();
    int bad = 0;
    for (int i = 0; i < total; i++) {
        char *out = NULL;
        aimux_error_t *e;
        if (i == warm) r0 = rss_kb();
        if (i % 2)
            e = aimux_call("aimux.version", "{}", &out);
        else
            e = aimux_call("aimux.version", "{\"bogus\":1}", &out);
        if ((i % 2) != (e == NULL)) bad++;
        if (e) {
            char *j = aimux_error_json(e), *m = aimux_error_message(aimux_error_cause(e));
            if (!j || !m) bad++;
            aimux_string_free(j);
            aimux_string_free(m);
        }
        aimux_error_free(e);
        aimux_string_free(out);
    }
    r1 = rss_kb();
    long growth = r1 - r0;
    printf("rss: %d calls in %.2f s; RSS after %d calls %ld KiB, after %d calls %ld KiB, growth "
           "%ld KiB "
           "(%.3f bytes/call)\n",
           total, now_s() - t0, warm, r0, total, r1, growth, growth * 1024.0 / (total - warm));
    CHECK(bad == 0, "100,000 calls answered correctly (%d wrong)", bad);
    CHECK(growth < 4096, "RSS growth over 90,000 calls bounded: %ld KiB (limit 4096)", growth);
}

/* ----------------------------------------------------------------------------------------- */
/* Runs a child process: this harness in --init-failure mode, or the RTLD_LOCAL test. */
static int run_child(char *const argv[], char *const envp[])
{
    pid_t pid = fork();
    if (pid == 0) {
        execve(argv[0], argv, envp);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* 16 threads make the very first calls at once: the runtime starts exactly once, all succeed. */
static void *race_thread(void *p)
{
    (void)p;
    char *out = NULL;
    aimux_error_t *e = aimux_call("aimux.version", "{}", &out);
    CHECK(e == NULL && out && strstr(out, "\"abiVersion\":1"), "concurrent first call");
    aimux_error_free(e);
    aimux_string_free(out);
    return NULL;
}

static int init_race_mode(void)
{
    pthread_t t[16];
    for (int i = 0; i < 16; i++) pthread_create(&t[i], NULL, race_thread, NULL);
    for (int i = 0; i < 16; i++) pthread_join(t[i], NULL);
    printf("%d passed, %d failed\n", atomic_load(&g_pass), atomic_load(&g_fail));
    return atomic_load(&g_fail) ? 1 : 0;
}

static int init_failure_mode(void)
{
    /* AIMUX_PYTHONPATH points at an empty dir: the core cannot be imported. */
    char *out = (char *)"x";
    aimux_error_t *e = aimux_call("aimux.version", "{}", &out);
    char *m = aimux_error_message(e);
    char *j = aimux_error_json(e);
    int ok = e && aimux_error_code(e) == 207 && out == NULL && m && strstr(m, "aimux_ops");
    printf("init failure: %.200s...\n", m ? m : "(no error)");
    CHECK(m && strlen(m) <= 1024 && strstr(m, "\xe2\x80\xa6[truncated]"),
          "207 message bounded and marked (%zu bytes)", m ? strlen(m) : 0);
    CHECK(j && strstr(j, ",\"truncated\":[\"message\"]}"), "207 envelope marks the truncation");
    aimux_string_free(j);
    aimux_string_free(m);
    expect_error(e, 207, "RuntimeInitError", "call when the core cannot load");
    uint64_t h = 5;
    expect_error(aimux_stream("stream_text", "{}", &h), 207, "RuntimeInitError",
                 "stream when the core cannot load");
    ok &= h == 0;
    expect_error(aimux_stream_next(1, &out), 207, "RuntimeInitError",
                 "next when the core cannot load");
    aimux_error_t *d = NULL;
    expect_error(aimux_error_from_json("{}", &d), 207, "RuntimeInitError",
                 "from_json when the core cannot load");
    aimux_stream_cancel(1);
    aimux_stream_free(1);
    CHECK(ok, "207 with the reason");
    printf("%d passed, %d failed\n", atomic_load(&g_pass), atomic_load(&g_fail));
    return atomic_load(&g_fail) ? 1 : 0;
}

static void test_children(const char *self)
{
    char dir[4096], empty[4096], child[4200], py[8200];
    /* (py holds AIMUX_PYTHONPATH=<empty>:<long path>) */
    snprintf(dir, sizeof dir, "%s", self);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        strcpy(dir, ".");
    snprintf(empty, sizeof empty, "/tmp/aimux-empty-XXXXXX");
    if (!mkdtemp(empty)) {
        CHECK(0, "mkdtemp");
        return;
    }
    /* the empty dir, then a 2,000-byte path that does not exist: the 207 message (which lists
       the paths) must come back truncated to 1 KiB, marked */
    char longpath[2100];
    memset(longpath, 'p', 2000);
    longpath[0] = '/';
    longpath[2000] = 0;
    snprintf(py, sizeof py, "AIMUX_PYTHONPATH=%s:%s", empty, longpath);
    char *argv1[] = {(char *)self, (char *)"--init-failure", NULL};
    char *envp1[] = {py, NULL};
    int rc = run_child(argv1, envp1);
    CHECK(rc == 0, "init failure child: every call a 207 with its reason (exit %d)", rc);
    rmdir(empty);

    char *argv3[] = {(char *)self, (char *)"--init-race", NULL};
    char *envp3[] = {NULL};
    rc = run_child(argv3, envp3);
    CHECK(rc == 0, "16 threads making the first calls at once (exit %d)", rc);

    snprintf(child, sizeof child, "%s/test_dlopen", dir);
    char *argv2[] = {child, NULL};
    char *envp2[] = {NULL};
    rc = run_child(argv2, envp2);
    CHECK(rc == 0, "RTLD_LOCAL child works (exit %d)", rc);
}

int main(int argc, char **argv)
{
    int quick = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--init-failure") == 0) return init_failure_mode();
        if (strcmp(argv[i], "--init-race") == 0) return init_race_mode();
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        if (strcmp(argv[i], "-v") == 0) g_verbose = 1;
        if (strcmp(argv[i], "--no-timing") == 0) g_no_timing = 1;
    }
    snprintf(g_replay_params, sizeof g_replay_params,
             "{\"model\":{\"provider\":\"openai\",\"modelId\":\"gpt-4o-mini\",\"baseURL\":\"http://"
             "127.0.0.1:1/v1\"},"
             "\"prompt\":\"Say hello in one "
             "word.\",\"recording\":{\"mode\":\"replay\",\"path\":\"%s\"}}",
             RECORDING);
    if (start_server() != 0) CHECK(0, "local server");

    struct {
        const char *name;
        void (*fn)(void);
        int heavy;
    } tests[] = {
        {"version_and_manifest", test_version_and_manifest, 0},
        {"code_kind_ranges", test_code_kind_ranges, 0},
        {"protocol_errors", test_protocol_errors, 0},
        {"wire_errors", test_wire_errors, 0},
        {"out_params", test_out_params, 0},
        {"accessors_and_chain", test_accessors_and_chain, 0},
        {"from_json", test_from_json, 0},
        {"accessors_agree_with_decoders", test_accessors_agree_with_decoders, 0},
        {"from_json_fuzz", test_from_json_fuzz, 0},
        {"generate_replay", test_generate_replay, 0},
        {"connection_refused_chain", test_connection_refused_chain, 0},
        {"status_code", test_status_code, 0},
        {"streams", test_streams, 0},
        {"cancel_wakes_next", test_cancel_wakes_next, 0},
        {"error_event", test_error_event, 0},
        {"calls_overlap", test_calls_overlap, 0},
        {"huge_inputs", test_huge_inputs, 1},
        {"threads", test_threads, 1},
        {"rss", test_rss, 1},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (quick && tests[i].heavy) continue;
        int f0 = atomic_load(&g_fail);
        double t0 = now_s();
        tests[i].fn();
        printf("%-28s %s (%.2f s)\n", tests[i].name, atomic_load(&g_fail) == f0 ? "ok" : "FAILED",
               now_s() - t0);
    }
    if (!quick) {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n > 0) {
            self[n] = 0;
            test_children(self);
        } else
            CHECK(0, "readlink /proc/self/exe");
    }
    atomic_store(&g_srv_stop, 1);
    printf("%d passed, %d failed\n", atomic_load(&g_pass), atomic_load(&g_fail));
    return atomic_load(&g_fail) ? 1 : 0;
}
