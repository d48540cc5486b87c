/* Event-driven streams through the C ABI (aimux.h "Event-driven streams"): one host thread holds
 * many concurrent slow streams with poll(2) on aimux_events_fd(), drains them in batches with
 * aimux_ready() / aimux_stream_poll(); the library reads each stream on a reader thread of its
 * own, which ends with its stream (the process's thread count comes back down).
 *
 *   test_events <python> <trickle_server.py> [streams]
 *
 * The server (tests/trickle_server.py, 127.0.0.1, ephemeral port) trickles 20 events 50 ms
 * apart per stream. Every wait is bounded: the test fails (never hangs) after 120 s.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "aimux.h"

static int g_failures = 0;
#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (cond)                                                                                  \
            printf("ok   %s\n", what);                                                             \
        else {                                                                                     \
            printf("FAIL %s (%s:%d)\n", what, __FILE__, __LINE__);                                 \
            g_failures++;                                                                          \
        }                                                                                          \
    } while (0)

#define EVENTS 20

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static int error_code_free(aimux_error_t *e)
{
    int32_t c = aimux_error_code(e);
    aimux_error_free(e);
    return c;
}

/* Starts the trickle server; returns its port, the pid and the fd of its stdin (closing it
   stops the server). */
static int start_server(const char *python, const char *script, pid_t *pid, int *stdin_fd)
{
    int in[2], out[2];
    char line[64] = {0};
    ssize_t n, got = 0;
    if (pipe(in) || pipe(out)) return -1;
    *pid = fork();
    if (*pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl(python, python, script, "--events", "20", "--interval-ms", "50", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    *stdin_fd = in[1];
    while (got < (ssize_t)sizeof line - 1 && (n = read(out[0], line + got, 1)) == 1) {
        if (line[got] == '\n') break;
        got++;
    }
    close(out[0]);
    return strncmp(line, "port ", 5) == 0 ? atoi(line + 5) : -1;
}

typedef struct {
    uint64_t h;
    int deltas, finishes, errors, ended;
    size_t text_len;
} slot_t;

static slot_t *find(slot_t *s, int n, uint64_t h)
{
    int i;
    for (i = 0; i < n; i++)
        if (s[i].h == h) return &s[i];
    return NULL;
}

/* Counts the events of one JSON batch: a flat scan for the "type" members. */
static void count_batch(slot_t *s, const char *batch)
{
    const char *p = batch;
    while ((p = strstr(p, "\"type\":\"")) != NULL) {
        p += 8;
        if (strncmp(p, "text-delta", 10) == 0)
            s->deltas++;
        else if (strncmp(p, "finish", 6) == 0)
            s->finishes++;
        else if (strncmp(p, "error", 5) == 0)
            s->errors++;
    }
    s->text_len += strlen(batch);
}

/* One drain pass: every ready handle, every batch. Returns the number of streams that ended. */
static int drain(slot_t *slots, int n, int *max_batch)
{
    uint64_t ready[256];
    size_t count, i;
    int ended = 0;
    do {
        aimux_error_t *e = aimux_ready(ready, 256, &count);
        if (e) {
            printf("FAIL aimux_ready: %d\n", error_code_free(e));
            g_failures++;
            return 0;
        }
        for (i = 0; i < count; i++) {
            slot_t *s = find(slots, n, ready[i]);
            if (!s || s->ended) continue;
            for (;;) {
                char *batch = NULL;
                int32_t over = 0;
                e = aimux_stream_poll(s->h, 64, &batch, &over);
                if (e) {
                    s->errors += 100;
                    s->ended = 1;
                    ended++;
                    aimux_error_free(e);
                    break;
                }
                if (batch) {
                    int k = 0;
                    const char *p = batch;
                    while ((p = strstr(p, "\"type\":")) != NULL) {
                        k++;
                        p++;
                    }
                    if (k > *max_batch) *max_batch = k;
                    count_batch(s, batch);
                    aimux_string_free(batch);
                }
                if (over) {
                    s->ended = 1;
                    ended++;
                    aimux_stream_free(s->h);
                    break;
                }
                if (!batch) break;
            }
        }
    } while (count == 256);
    return ended;
}

static void wait_readable(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    char buf[256];
    if (poll(&p, 1, ms) > 0)
        while (read(fd, buf, sizeof buf) > 0) {}
}

/* Appends the events of one JSON array batch ("[e1,e2]") to `acc` as "e1,e2," (no brackets). */
static void append_batch(char *acc, size_t cap, const char *batch)
{
    size_t n = strlen(batch), len = strlen(acc);
    if (n < 2 || batch[0] != '[' || batch[n - 1] != ']' || len + n > cap) return;
    memcpy(acc + len, batch + 1, n - 2);
    acc[len + n - 2] = ',';
    acc[len + n - 1] = '\0';
}

/* Counts text-delta events in a text. */
static int count_deltas_in(const char *text)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, "\"type\":\"text-delta\"")) != NULL; p += 20) n++;
    return n;
}

typedef struct {
    uint64_t h;
    int deltas, calls, errors, ended_empty;
} batch_reader_t;

/* Reads a stream with aimux_stream_next_batch until it is over (a thread of its own). */
static void *read_batches(void *arg)
{
    batch_reader_t *r = (batch_reader_t *)arg;
    for (int32_t over = AIMUX_STREAM_OPEN; over == AIMUX_STREAM_OPEN && r->calls < 1000;) {
        char *b = NULL;
        aimux_error_t *err = aimux_stream_next_batch(r->h, 4, &b, &over);
        r->calls++;
        if (err) {
            r->errors++;
            aimux_error_free(err);
            break;
        }
        if (b)
            __atomic_add_fetch(&r->deltas, count_deltas_in(b), __ATOMIC_SEQ_CST); /* read by main */
        else
            r->ended_empty = over == AIMUX_STREAM_ENDED;
        aimux_string_free(b);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *python, *script;
    int nstreams = argc > 3 ? atoi(argv[3]) : 500;
    int port, server_in, fd = -1, i, done = 0, max_threads = 0, max_batch = 0;
    pid_t server;
    char params[1024], bad[1024];
    slot_t *slots;
    aimux_error_t *e;
    double t0, deadline;
    if (argc < 3) {
        fprintf(stderr, "usage: test_events <python> <trickle_server.py> [n]\n");
        return 2;
    }
    python = argv[1];
    script = argv[2];
    signal(SIGPIPE, SIG_IGN);
    port = start_server(python, script, &server, &server_in);
    if (port <= 0) {
        printf("FAIL cannot start the trickle server\n");
        return 1;
    }
    snprintf(params, sizeof params,
             "{\"model\":{\"provider\":\"openai\",\"modelId\":\"m\",\"baseURL\":"
             "\"http://127.0.0.1:%d/v1\",\"apiKey\":\"sk-events\"},\"prompt\":\"hi\","
             "\"maxRetries\":0,\"timeoutMs\":60000}",
             port);

    /* argument checks */
    CHECK(error_code_free(aimux_events_fd(NULL)) == 204, "events_fd(NULL) is 204");
    e = aimux_events_fd(&fd);
    CHECK(e == NULL && fd >= 0, "events_fd returns an fd");
    {
        int fd2 = -1;
        aimux_error_t *e2 = aimux_events_fd(&fd2);
        CHECK(e2 == NULL && fd2 == fd, "the same fd every time");
    }
    {
        uint64_t h = 7;
        size_t c = 9;
        char *b = (char *)1;
        int32_t over = 5;
        CHECK(error_code_free(aimux_stream_start("no.such.op", "{}", &h)) == 300 && h == 0,
              "stream_start: unknown op is 300 at once, out-param reset");
        CHECK(error_code_free(aimux_stream_start("aimux.version", "{}", &h)) == 302,
              "stream_start: a call op is 302");
        CHECK(error_code_free(aimux_stream_start("stream_text", "{", &h)) == 202,
              "stream_start: bad JSON is 202");
        CHECK(error_code_free(aimux_stream_start("stream_text", params, NULL)) == 204,
              "stream_start: NULL out_stream is 204");
        CHECK(error_code_free(aimux_ready(NULL, 4, &c)) == 204 && c == 0,
              "ready: NULL array is 204");
        CHECK(error_code_free(aimux_ready(NULL, 0, NULL)) == 204, "ready: NULL count is 204");
        CHECK(error_code_free(aimux_stream_poll(999999, 8, &b, &over)) == 203 && b == NULL &&
                  over == 0,
              "poll: unknown handle is 203, out-params reset");
        CHECK(error_code_free(aimux_stream_poll(1, 8, NULL, &over)) == 204,
              "poll: NULL batch is 204");
        CHECK(error_code_free(aimux_stream_poll(1, 8, &b, NULL)) == 204, "poll: NULL ended is 204");
        CHECK(error_code_free(aimux_poll_ready(8, NULL)) == 204,
              "poll_ready: NULL out_json is 204");
    }

    /* an open that fails (HTTP 400) is reported once by the first poll, then 203 after free */
    snprintf(bad, sizeof bad,
             "{\"model\":{\"provider\":\"openai\",\"modelId\":\"m\",\"baseURL\":"
             "\"http://127.0.0.1:%d/v1\",\"apiKey\":\"sk-events\"},\"prompt\":\"refuse\","
             "\"maxRetries\":0}",
             port);
    {
        uint64_t h = 0, r[8];
        size_t c = 0;
        int found = 0, code = 0;
        char *b = NULL;
        int32_t over = 0;
        double until = now_s() + 30;
        CHECK(aimux_stream_start("stream_text", bad, &h) == NULL && h != 0,
              "a failing open starts");
        while (!found && now_s() < until) {
            wait_readable(fd, 1000);
            if (aimux_ready(r, 8, &c) == NULL)
                for (size_t k = 0; k < c; k++)
                    if (r[k] == h) found = 1;
        }
        CHECK(found, "its handle is listed ready");
        e = aimux_stream_poll(h, 8, &b, &over);
        code = e ? aimux_error_code(e) : 0;
        if (e) aimux_error_free(e);
        CHECK(code == 11 && b == NULL, "its first poll returns the open failure (11, the 400)");
        e = aimux_stream_poll(h, 8, &b, &over);
        CHECK(e == NULL && b == NULL && over == AIMUX_STREAM_ENDED, "then it is over");
        aimux_stream_free(h);
        CHECK(error_code_free(aimux_stream_poll(h, 8, &b, &over)) == 203, "freed: 203");
    }

    /* aimux_poll_ready: every listed stream in one JSON text, the open failure inside */
    {
        uint64_t h = 0;
        char *js = NULL;
        int found = 0;
        char want[64];
        double until = now_s() + 30;
        CHECK(aimux_stream_start("stream_text", bad, &h) == NULL && h != 0,
              "a second failing open");
        snprintf(want, sizeof want, "[%llu,1,null,{", (unsigned long long)h);
        while (!found && now_s() < until) {
            wait_readable(fd, 1000);
            e = aimux_poll_ready(8, &js);
            if (e) {
                aimux_error_free(e);
                break;
            }
            if (js) {
                found = strstr(js, want) != NULL && strstr(js, "\"code\":11") != NULL;
                aimux_string_free(js);
                js = NULL;
            }
        }
        CHECK(found, "poll_ready lists it as [handle, 1, null, <envelope 11>]");
        aimux_stream_free(h);
    }

    /* blocking next on an event-driven stream, and cancel of one mid-stream */
    {
        uint64_t h = 0;
        char *ev = NULL, *b = NULL;
        int32_t over = 0;
        CHECK(aimux_stream_start("stream_text", params, &h) == NULL, "start for next/cancel");
        e = aimux_stream_next(h, &ev);
        CHECK(e == NULL && ev && strstr(ev, "text-delta"),
              "aimux_stream_next works on it (blocks)");
        aimux_string_free(ev);
        aimux_stream_cancel(h);
        e = aimux_stream_poll(h, 8, &b, &over);
        CHECK(e == NULL && b == NULL && over == AIMUX_STREAM_ENDED, "cancelled: poll says ended");
        aimux_stream_free(h);
    }

    /* aimux_stream_next_batch: argument checks, open failure, the same events as
       aimux_stream_next, the end, and a cancel from another thread waking it */
    {
        uint64_t h = 0, h2 = 0;
        char *b = (char *)1, *ev = NULL;
        int32_t over = 5;
        static char via_next[16384], via_batch[16384];
        int calls = 0, biggest = 0, last_over = 0, bad_batch = 0;
        CHECK(error_code_free(aimux_stream_next_batch(999999, 8, &b, &over)) == 203 && b == NULL &&
                  over == AIMUX_STREAM_OPEN,
              "next_batch: unknown handle is 203, out-params reset");
        CHECK(error_code_free(aimux_stream_next_batch(1, 8, NULL, &over)) == 204,
              "next_batch: NULL batch is 204");
        CHECK(error_code_free(aimux_stream_next_batch(1, 8, &b, NULL)) == 204,
              "next_batch: NULL ended is 204");

        CHECK(aimux_stream_start("stream_text", bad, &h) == NULL && h != 0,
              "next_batch: a failing open starts");
        e = aimux_stream_next_batch(h, 8, &b, &over);
        CHECK(e != NULL && aimux_error_code(e) == 11 && b == NULL,
              "next_batch: waits for and returns the open failure (11, the 400)");
        if (e) aimux_error_free(e);
        e = aimux_stream_next_batch(h, 8, &b, &over);
        CHECK(e == NULL && b == NULL && over == AIMUX_STREAM_ENDED, "then it is over");
        aimux_stream_free(h);
        CHECK(error_code_free(aimux_stream_next_batch(h, 8, &b, &over)) == 203, "freed: 203");

        /* the same stream read both ways gives the same event texts, in order */
        via_next[0] = via_batch[0] = '\0';
        CHECK(aimux_stream("stream_text", params, &h) == NULL && h != 0, "next_batch: open");
        CHECK(aimux_stream("stream_text", params, &h2) == NULL && h2 != 0, "next: open");
        for (;;) {
            ev = NULL;
            if (aimux_stream_next(h2, &ev) != NULL || ev == NULL) break;
            if (strlen(via_next) + strlen(ev) + 2 < sizeof via_next) {
                strcat(via_next, ev);
                strcat(via_next, ",");
            }
            aimux_string_free(ev);
        }
        for (over = AIMUX_STREAM_OPEN; over == AIMUX_STREAM_OPEN && calls < 1000; calls++) {
            b = NULL;
            e = aimux_stream_next_batch(h, 3, &b, &over);
            if (e) {
                aimux_error_free(e);
                break;
            }
            if (b) {
                int n = count_deltas_in(b) + (strstr(b, "\"type\":\"finish\"") != NULL);
                if (n > biggest) biggest = n;
                if (b[0] != '[') bad_batch = 1;
                append_batch(via_batch, sizeof via_batch, b);
            }
            last_over = over;
            aimux_string_free(b);
        }
        CHECK(!bad_batch && count_deltas_in(via_batch) == EVENTS &&
                  strstr(via_batch, "\"type\":\"finish\"") != NULL,
              "next_batch: every delta and the finish, as JSON arrays");
        CHECK(biggest >= 1 && biggest <= 3, "next_batch: no batch above max_events (3)");
        CHECK(strcmp(via_next, via_batch) == 0, "next_batch: the same events as aimux_stream_next");
        CHECK(last_over == AIMUX_STREAM_ENDED, "next_batch: the end is reported");
        b = (char *)1;
        e = aimux_stream_next_batch(h, 8, &b, &over);
        CHECK(e == NULL && b == NULL && over == AIMUX_STREAM_ENDED, "next_batch: after the end");
        aimux_stream_free(h);
        aimux_stream_free(h2);

        /* cancelled before: over at once; cancelled while a thread waits in it: it wakes */
        CHECK(aimux_stream("stream_text", params, &h) == NULL, "next_batch: open to cancel");
        aimux_stream_cancel(h);
        b = (char *)1;
        e = aimux_stream_next_batch(h, 8, &b, &over);
        CHECK(e == NULL && b == NULL && over == AIMUX_STREAM_ENDED,
              "next_batch: a cancelled stream is over");
        aimux_stream_free(h);
        {
            batch_reader_t r = {0};
            pthread_t t;
            CHECK(aimux_stream_start("stream_text", params, &r.h) == NULL, "start to cancel");
            pthread_create(&t, NULL, read_batches, &r);
            /* the first batch is in (the reader has begun, it waits for the next trickled
               event): a cancel now is not one that came before the read; the bound only ends a
               broken run */
            for (int w = 0; w < 6000 && __atomic_load_n(&r.deltas, __ATOMIC_SEQ_CST) == 0; w++)
                usleep(10000);
            aimux_stream_cancel(r.h);
            pthread_join(t, NULL);
            CHECK(r.errors == 0 && r.ended_empty && r.deltas >= 1 && r.deltas < EVENTS,
                  "next_batch: a cancel from another thread wakes it, and it reports the end");
            aimux_stream_free(r.h);
        }
    }

    /* many concurrent slow streams on this one thread */
    slots = (slot_t *)calloc((size_t)nstreams, sizeof(slot_t));
    t0 = now_s();
    for (i = 0; i < nstreams; i++) {
        e = aimux_stream_start("stream_text", params, &slots[i].h);
        if (e) {
            printf("FAIL start %d: code %d\n", i, error_code_free(e));
            g_failures++;
            slots[i].ended = 1;
            done++;
        }
    }
    printf("     started %d streams in %.3f s\n", nstreams, now_s() - t0);
    deadline = t0 + 120;
    while (done < nstreams && now_s() < deadline) {
        int t = thread_count();
        if (t > max_threads) max_threads = t;
        wait_readable(fd, 1000);
        done += drain(slots, nstreams, &max_batch);
    }
    {
        int complete = 0;
        for (i = 0; i < nstreams; i++)
            if (slots[i].ended && slots[i].deltas == EVENTS && slots[i].finishes == 1 &&
                slots[i].errors == 0)
                complete++;
        printf("     %d/%d streams complete in %.2f s; max threads %d; largest batch %d events\n",
               complete, nstreams, now_s() - t0, max_threads, max_batch);
        CHECK(complete == nstreams,
              "every stream delivered its 20 deltas and one finish, no error");
    }
    CHECK(max_threads > 0 && max_threads <= nstreams + 16,
          "at most one reader thread per open stream");
    for (i = 0; i < 1200 && thread_count() > 16; i++) usleep(100 * 1000); /* (a 120 s bound) */
    CHECK(thread_count() <= 16, "the reader threads end with their streams");
    free(slots);
    close(server_in);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "passed", g_failures);
    return g_failures ? 1 : 0;
}
