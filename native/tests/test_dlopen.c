/*
 * libaimux loaded the way ctypes, koffi, Go and Java load it: dlopen(RTLD_LOCAL), symbols looked up
 * with dlsym. The first call imports the core and its C extensions (pydantic_core, orjson), which
 * fail with "undefined symbol: PyExc_..." unless the library makes libpython global itself.
 * Usage: test_dlopen [path/to/libaimux.so]   (default: AIMUX_LIB_PATH, compiled in)
 *        test_dlopen --expect-init-failure path/to/libaimux.so
 *            (a library whose Python home is broken: every call must be a 207 that says why,
 *             and the process must not abort)
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "aimux.h"

#ifndef AIMUX_LIB_PATH
#error "compile with -DAIMUX_LIB_PATH=\"/path/to/libaimux.so\""
#endif

static int pass, fail;
#define CHECK(c, msg)                                                                              \
    do {                                                                                           \
        if (c)                                                                                     \
            pass++;                                                                                \
        else {                                                                                     \
            fail++;                                                                                \
            fprintf(stderr, "FAIL test_dlopen: %s\n", msg);                                        \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    int expect_failure = argc > 2 && strcmp(argv[1], "--expect-init-failure") == 0;
    const char *path = expect_failure ? argv[2] : argc > 1 ? argv[1] : AIMUX_LIB_PATH;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        printf("0 passed, 1 failed\n");
        return 1;
    }
    uint32_t (*abi)(void) = (uint32_t(*)(void))dlsym(h, "aimux_abi_version");
    aimux_error_t *(*call)(const char *, const char *, char **) =
        (aimux_error_t * (*)(const char *, const char *, char **)) dlsym(h, "aimux_call");
    int32_t (*code)(const aimux_error_t *) =
        (int32_t(*)(const aimux_error_t *))dlsym(h, "aimux_error_code");
    void (*efree)(aimux_error_t *) = (void (*)(aimux_error_t *))dlsym(h, "aimux_error_free");
    void (*sfree)(char *) = (void (*)(char *))dlsym(h, "aimux_string_free");
    char *(*ejson)(const aimux_error_t *) =
        (char *(*)(const aimux_error_t *))dlsym(h, "aimux_error_json");
    CHECK(abi && call && code && efree && sfree && ejson, "dlsym");
    if (fail) {
        printf("%d passed, %d failed\n", pass, fail);
        return 1;
    }
    CHECK(abi() == AIMUX_ABI_VERSION, "abi version");
    if (expect_failure) {
        char *out = (char *)"x";
        for (int i = 0; i < 3; i++) {
            aimux_error_t *e = call("aimux.version", "{}", &out);
            char *j = e ? ejson(e) : NULL;
            if (i == 0) printf("broken runtime: %s\n", j ? j : "(no error)");
            CHECK(e && code(e) == 207 && out == NULL, "207 from a broken runtime");
            CHECK(j && strstr(j, "cannot start: Py_InitializeFromConfig"), "the 207 says why");
            sfree(j);
            efree(e);
        }
        { /* the event-driven functions answer the same 207 */
            aimux_error_t *(*efd)(int *) = (aimux_error_t * (*)(int *)) dlsym(h, "aimux_events_fd");
            aimux_error_t *(*start)(const char *, const char *, uint64_t *) =
                (aimux_error_t * (*)(const char *, const char *, uint64_t *))
                    dlsym(h, "aimux_stream_start");
            aimux_error_t *(*pr)(size_t, char **) =
                (aimux_error_t * (*)(size_t, char **)) dlsym(h, "aimux_poll_ready");
            aimux_error_t *(*nb)(uint64_t, size_t, char **, int32_t *) =
                (aimux_error_t * (*)(uint64_t, size_t, char **, int32_t *))
                    dlsym(h, "aimux_stream_next_batch");
            int fd = 5;
            uint64_t sh = 5;
            char *js = (char *)"x";
            CHECK(efd && start && pr && nb, "dlsym (event-driven streams, next_batch)");
            if (nb) {
                char *b = (char *)"x";
                int32_t over = 5;
                aimux_error_t *e4 = nb(1, 8, &b, &over);
                CHECK(e4 && code(e4) == 207 && b == NULL && over == 0,
                      "stream_next_batch: 207 from a broken runtime");
                efree(e4);
            }
            if (efd && start && pr) {
                aimux_error_t *e1 = efd(&fd), *e2 = start("stream_text", "{}", &sh),
                              *e3 = pr(8, &js);
                CHECK(e1 && code(e1) == 207 && fd == -1, "events_fd: 207 from a broken runtime");
                CHECK(e2 && code(e2) == 207 && sh == 0, "stream_start: 207 from a broken runtime");
                CHECK(e3 && code(e3) == 207 && js == NULL, "poll_ready: 207 from a broken runtime");
                efree(e1);
                efree(e2);
                efree(e3);
            }
        }
        printf("%d passed, %d failed\n", pass, fail);
        return fail ? 1 : 0;
    }

    char *out = NULL;
    aimux_error_t *e = call("aimux.manifest", "{}", &out);
    if (e) {
        char *j = ejson(e);
        fprintf(stderr, "manifest failed: %s\n", j ? j : "?");
        sfree(j);
    }
    CHECK(e == NULL && out && strstr(out, "\"errors\""), "manifest under RTLD_LOCAL");
    efree(e);
    sfree(out);
    out = NULL;

    e = call("aimux.version", "{\"bogus\":1}", &out); /* pydantic validation: a C extension */
    CHECK(e && code(e) == 301, "301 under RTLD_LOCAL");
    efree(e);
    e = call("nope", "{}", &out);
    CHECK(e && code(e) == 300, "300 under RTLD_LOCAL");
    efree(e);
    printf("%d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}
