/*
 * The native bench (make -C native bench): the cost of
 *   - aimux_call("aimux.version", "{}") + aimux_string_free
 *   - an error round trip: aimux_call("no.such.op") + aimux_error_json + both frees
 *   - the same with varied input: a different unknown op name per call; invalid params (a 301
 *     with a cause) different per call
 * (every error built, projected and packed by the core: plain figures, no aim) beside the floor:
 * one cffi-embedded C -> Python -> string call through libaimux_noop.so (built for the bench only,
 * same cffi, same interpreter, same process), measured interleaved in the same run. Several rounds;
 * the table reports medians (and min / max) in ns per call.
 *
 * Usage: bench_native [results.md] [rounds] [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aimux.h"

char *aimux_noop_call(const char *op); /* libaimux_noop.so */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int g_bad;

static double run_floor(int n)
{
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        char *s = aimux_noop_call("aimux.version");
        if (!s) g_bad++;
        free(s);
    }
    return (now_ns() - t0) / n;
}

static double run_version(int n)
{
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        char *out = NULL;
        aimux_error_t *e = aimux_call("aimux.version", "{}", &out);
        if (e || !out) g_bad++;
        aimux_error_free(e);
        aimux_string_free(out);
    }
    return (now_ns() - t0) / n;
}

static double run_error(int n)
{
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        char *out = NULL;
        aimux_error_t *e = aimux_call("no.such.op", "{}", &out);
        char *j = aimux_error_json(e);
        if (!e || !j) g_bad++;
        aimux_string_free(j);
        aimux_error_free(e);
    }
    return (now_ns() - t0) / n;
}

/* The same round trip with a different unknown op name on every call (1,000 names, built before
   the clock starts): the projection sees a new name, a new message and a new envelope each time. */
#define VARIED_NAMES 1000
static char g_names[VARIED_NAMES][32];

/* n round trips, each with the next of `names` */
static double run_error_names(char (*names)[32], int n)
{
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        char *out = NULL;
        aimux_error_t *e = aimux_call(names[i % VARIED_NAMES], "{}", &out);
        char *j = aimux_error_json(e);
        if (!e || !j || aimux_error_code(e) != 300) g_bad++;
        aimux_string_free(j);
        aimux_error_free(e);
    }
    return (now_ns() - t0) / n;
}

static double run_error_varied(int n) { return run_error_names(g_names, n); }

/* A params failure (InvalidParamsError 301 with its cause: pydantic validates the params, the
   envelope carries the violations list and a source node), the value varying per call. */
static double run_error_params(int n)
{
    char params[64];
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        char *out = NULL;
        snprintf(params, sizeof params, "{\"bogus%d\":%d}", i % VARIED_NAMES, i);
        aimux_error_t *e = aimux_call("aimux.version", params, &out);
        char *j = aimux_error_json(e);
        if (!e || !j || aimux_error_code(e) != 301 || !aimux_error_cause(e)) g_bad++;
        aimux_string_free(j);
        aimux_error_free(e);
    }
    return (now_ns() - t0) / n;
}

static double run_accessors(int n) /* plain C: code + message + json + walk on a held error */
{
    char *out = NULL;
    aimux_error_t *e = aimux_call("aimux.version", "{\"bogus\":1}", &out);
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        char *j = aimux_error_json(e), *m = aimux_error_message(e);
        int c = aimux_error_code(e);
        for (const aimux_error_t *k = aimux_error_cause(e); k; k = aimux_error_cause(k))
            c += aimux_error_code(k);
        if (c != 301 || !j || !m) g_bad++;
        aimux_string_free(j);
        aimux_string_free(m);
    }
    double r = (now_ns() - t0) / n;
    aimux_error_free(e);
    return r;
}

#define ROUNDS_MAX 64
struct stat {
    const char *name;
    double (*fn)(int);
    double v[ROUNDS_MAX];
    double med, min, max;
};

int main(int argc, char **argv)
{
    const char *md = argc > 1 && argv[1][0] ? argv[1] : NULL;
    int rounds = argc > 2 ? atoi(argv[2]) : 9;
    int iters = argc > 3 ? atoi(argv[3]) : 20000;
    if (rounds < 1 || rounds > ROUNDS_MAX) rounds = 9;
    struct stat s[] = {
        {"floor: cffi C->Python->string (no-op lib)", run_floor, {0}, 0, 0, 0},
        {"aimux_call(\"aimux.version\")", run_version, {0}, 0, 0, 0},
        {"error round trip (unknown op + aimux_error_json + free)", run_error, {0}, 0, 0, 0},
        {"varied error round trip: a new unknown op per call", run_error_varied, {0}, 0, 0, 0},
        {"varied error round trip: new bad params (301 + cause)", run_error_params, {0}, 0, 0, 0},
        {"accessors on a held 301 (json + message + code + walk)", run_accessors, {0}, 0, 0, 0},
    };
    for (int i = 0; i < VARIED_NAMES; i++) {
        snprintf(g_names[i], sizeof g_names[i], "no.such.op.%d", i);
    }
    const int ns = (int)(sizeof s / sizeof s[0]);

    /* warm up: starts the runtime (libaimux first: it sets up sys.path for both libraries) */
    double t0 = now_ns();
    run_version(1);
    double startup_ms = (now_ns() - t0) / 1e6;
    for (int k = 0; k < ns; k++) s[k].fn(iters / 10);

    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < ns; k++) s[k].v[r] = s[k].fn(iters);
    for (int k = 0; k < ns; k++) {
        double sorted[ROUNDS_MAX];
        memcpy(sorted, s[k].v, sizeof(double) * rounds);
        qsort(sorted, rounds, sizeof(double), cmp_double);
        s[k].med = sorted[rounds / 2];
        s[k].min = sorted[0];
        s[k].max = sorted[rounds - 1];
    }

    double la[3] = {0};
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3) la[0] = -1;
        fclose(lf);
    }
    char table[8192];
    int n = 0;
    n += snprintf(table + n, sizeof table - n,
                  "| measurement | median ns/call | min | max | ratio to floor (median) "
                  "|\n|---|---:|---:|---:|---:|\n");
    for (int k = 0; k < ns; k++)
        n += snprintf(table + n, sizeof table - n, "| %s | %.0f | %.0f | %.0f | %.2fx |\n",
                      s[k].name, s[k].med, s[k].min, s[k].max, s[k].med / s[0].med);
    printf("%s", table);
    printf("rounds %d x %d calls each (interleaved); runtime start-up %.1f ms; load average %.2f; "
           "%d bad answers\n",
           rounds, iters, startup_ms, la[0], g_bad);
    double ratio = s[1].med / s[0].med;
    printf("aim: version call within 2x the floor -> %.2fx (%s)\n", ratio,
           ratio <= 2.0 ? "met" : "missed");

    if (md) {
        FILE *f = fopen(md, "w");
        if (!f) {
            perror(md);
            return 1;
        }
        time_t t = time(NULL);
        char when[64];
        strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&t));
        fprintf(
            f,
            "# Native bench results\n\n"
            "Generated by `make -C native bench` (bench/native/bench_native.c) on %s; %ld CPUs "
            "online, "
            "load average %.2f at the end of the run (other jobs share this machine).\n\n"
            "%d rounds x %d calls of each measurement, interleaved round by round in one process; "
            "the floor is `libaimux_noop.so`, a cffi-embedded library built only for the bench "
            "whose one exported function calls an `extern \"Python\"` callback that reads its "
            "`const char *` "
            "argument and returns a malloc'd copy of a constant JSON string (the same "
            "C->Python->string "
            "path as libaimux, without the core).\n\n%s\n"
            "Runtime start-up (first call: interpreter, core imports): %.1f ms. Bad answers: "
            "%d.\n\n"
            "Aim: `aimux.version` within 2x the floor: **%.2fx, %s**.\n",
            when, sysconf(_SC_NPROCESSORS_ONLN), la[0], rounds, iters, table, startup_ms, g_bad,
            ratio, ratio <= 2.0 ? "met" : "missed");
        fclose(f);
        printf("wrote %s\n", md);
    }
    return g_bad ? 1 : 0;
}
