/* Cold start of a C host: one process, one library, one first call (bench/run.py runs it).
 *
 *   cold_start noop     <libaimux_noop.so>            the bare cffi-embedded library's first call
 *   cold_start version  <libaimux.so>                 the first aimux_call("aimux.version", "{}")
 *   cold_start generate <libaimux.so> <recording>     the first replayed generate_text
 *
 * The library is dlopen'ed (the interpreter starts on the first call, not at load); the line
 * printed is "<first call ms> <VmRSS kB after it> <ok 0/1>". The bare library needs cffi's
 * backend on PYTHONPATH (the caller sets it); libaimux finds its own paths.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void *(*call_fn)(const char *, const char *, char **);
typedef char *(*noop_fn)(const char *);
typedef void (*free_fn)(void *);

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kb = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: cold_start noop|version|generate LIB [RECORDING]\n");
        return 2;
    }
    void *lib = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    int ok = 0;
    double t0, ms;
    if (strcmp(argv[1], "noop") == 0) {
        noop_fn call = (noop_fn)dlsym(lib, "aimux_noop_call");
        t0 = now_ms();
        char *s = call("aimux.version");
        ms = now_ms() - t0;
        ok = s && strstr(s, "abiVersion") != NULL;
        free(s);
    } else {
        call_fn call = (call_fn)dlsym(lib, "aimux_call");
        free_fn sfree = (free_fn)dlsym(lib, "aimux_string_free");
        free_fn efree = (free_fn)dlsym(lib, "aimux_error_free");
        char params[4096];
        const char *op = "aimux.version";
        snprintf(params, sizeof params, "{}");
        if (strcmp(argv[1], "generate") == 0 && argc > 3) {
            op = "generate_text";
            snprintf(params, sizeof params,
                     "{\"model\": {\"provider\": \"openai\", \"modelId\": \"gpt-4o-mini\", "
                     "\"baseURL\": \"http://127.0.0.1:1/v1\"}, \"prompt\": \"Say hello in one "
                     "word.\", \"recording\": {\"mode\": \"replay\", \"path\": \"%s\"}}",
                     argv[3]);
        }
        char *out = NULL;
        t0 = now_ms();
        void *e = call(op, params, &out);
        ms = now_ms() - t0;
        ok = e == NULL && out != NULL;
        sfree(out);
        efree(e);
    }
    printf("%.3f %ld %d\n", ms, rss_kb(), ok);
    return ok ? 0 : 1;
}
