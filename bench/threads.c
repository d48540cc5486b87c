/*
 * bench/threads.c — N C threads calling generate_text through libaimux.so (make bench, part 5).
 *
 *   threads aimux <threads> <calls-per-thread> <params-json>
 *       each thread: <calls> x aimux_call("generate_text", params); every result checked
 *   threads stream <streams> <params-json>
 *       <streams> sequential stream_text streams from C: aimux_stream + aimux_stream_next until
 *       the end; prints {"streams", "events", "seconds", "eventsPerSecond"}
 *   threads stream-next-batch <streams> <params-json>
 *       the same with aimux_stream + aimux_stream_next_batch (every ready event, up to 1024,
 *       per call) until the end
 *   threads stream-batch <streams> <params-json>
 *       the same through the event-driven interface: aimux_stream_start, then poll() on
 *       aimux_events_fd, aimux_ready and aimux_stream_poll batches (up to 1024 events each)
 *   threads raw <threads> <calls-per-thread> <port> <model>
 *       the same requests as bare HTTP/1.1 over keep-alive sockets (no aimux, no Python):
 *       shows what the server and the loopback alone can do at that concurrency
 *
 * Prints one JSON line: {"threads", "calls", "seconds", "callsPerSecond", "failures"}.
 * Bounded: it stops early (and says so) after 60 s.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "aimux.h"

static int g_calls;
static const char *g_params;
static int g_port;
static const char *g_model;
static double g_deadline;
static int g_failures;
static int g_done;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t g_start;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void account(int ok)
{
    pthread_mutex_lock(&g_lock);
    g_done++;
    if (!ok) g_failures++;
    pthread_mutex_unlock(&g_lock);
}

static void *aimux_worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&g_start);
    for (int i = 0; i < g_calls && now() < g_deadline; i++) {
        char *out = NULL;
        aimux_error_t *err = aimux_call("generate_text", g_params, &out);
        int ok = err == NULL && out != NULL && strstr(out, "\"text\":\"Hello!\"") != NULL;
        if (err) {
            if (g_failures < 3) {
                char *m = aimux_error_message(err);
                fprintf(stderr, "call failed: [%d] %s\n", aimux_error_code(err), m ? m : "?");
                aimux_string_free(m);
            }
            aimux_error_free(err);
        }
        aimux_string_free(out);
        account(ok);
    }
    return NULL;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* One request/response over a keep-alive socket; returns 1 when the body says Hello!. */
static int raw_round_trip(int fd, const char *req, size_t req_len)
{
    if (write(fd, req, req_len) != (ssize_t)req_len) return 0;
    char buf[8192];
    size_t have = 0;
    long want = -1;
    size_t head = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0) return 0;
        have += (size_t)n;
        buf[have] = 0;
        if (want < 0) {
            char *end = strstr(buf, "\r\n\r\n");
            if (!end) continue;
            head = (size_t)(end - buf) + 4;
            char *cl = strcasestr(buf, "content-length:");
            if (!cl) return 0;
            want = strtol(cl + 15, NULL, 10);
        }
        if (have >= head + (size_t)want) return strstr(buf + head, "Hello!") != NULL;
    }
}

static void *raw_worker(void *arg)
{
    (void)arg;
    char body[256], req[512];
    int blen =
        snprintf(body, sizeof body,
                 "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello "
                 "in one word.\"}]}",
                 g_model);
    int rlen = snprintf(req, sizeof req,
                        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                        blen, body);
    int fd = connect_to(g_port);
    pthread_barrier_wait(&g_start);
    for (int i = 0; i < g_calls && now() < g_deadline; i++) {
        int ok = fd >= 0 && raw_round_trip(fd, req, (size_t)rlen);
        account(ok);
    }
    if (fd >= 0) close(fd);
    return NULL;
}

static int stream_mode(int streams, const char *params)
{
    long events = 0;
    double t0 = 0;
    for (int s = -1; s < streams; s++) { /* stream -1 is the warm-up, outside the timing */
        if (s == 0) t0 = now();
        uint64_t h = 0;
        aimux_error_t *err = aimux_stream("stream_text", params, &h);
        if (err) {
            char *m = aimux_error_message(err);
            fprintf(stderr, "stream failed: [%d] %s\n", aimux_error_code(err), m ? m : "?");
            aimux_string_free(m);
            aimux_error_free(err);
            return 1;
        }
        for (;;) {
            char *ev = NULL;
            err = aimux_stream_next(h, &ev);
            if (err) {
                aimux_error_free(err);
                aimux_stream_free(h);
                return 1;
            }
            if (!ev) break;
            if (s >= 0 && strncmp(ev, "{\"type\":\"text-delta\"", 20) == 0) events++;
            aimux_string_free(ev);
        }
        aimux_stream_free(h);
    }
    double seconds = now() - t0;
    printf("{\"streams\":%d,\"events\":%ld,\"seconds\":%.6f,\"eventsPerSecond\":%.1f}\n", streams,
           events, seconds, events / seconds);
    return 0;
}

/* text-delta events in one JSON array batch (each event starts with {"type":"text-delta") */
static long count_deltas(const char *batch)
{
    long n = 0;
    for (const char *p = batch; (p = strstr(p, "{\"type\":\"text-delta\"")) != NULL; p += 20) n++;
    return n;
}

static int stream_batch_mode(int streams, const char *params)
{
    long events = 0;
    double t0 = 0;
    int fd = -1;
    aimux_error_t *err = aimux_events_fd(&fd);
    if (err) {
        aimux_error_free(err);
        return 1;
    }
    for (int s = -1; s < streams; s++) { /* stream -1 is the warm-up, outside the timing */
        if (s == 0) t0 = now();
        uint64_t h = 0;
        err = aimux_stream_start("stream_text", params, &h);
        if (err) {
            fprintf(stderr, "stream_start failed: [%d]\n", aimux_error_code(err));
            aimux_error_free(err);
            return 1;
        }
        int ended = 0;
        while (!ended) {
            struct pollfd pfd = {.fd = fd, .events = POLLIN, .revents = 0};
            poll(&pfd, 1, 1000);
            char drain[256];
            while (read(fd, drain, sizeof drain) > 0) {}
            uint64_t ready[64];
            size_t n = 0;
            aimux_error_free(aimux_ready(ready, 64, &n));
            for (size_t i = 0; i < n && !ended; i++) {
                if (ready[i] != h) continue;
                for (;;) {
                    char *batch = NULL;
                    int32_t over = AIMUX_STREAM_OPEN;
                    err = aimux_stream_poll(h, 1024, &batch, &over);
                    if (err) {
                        fprintf(stderr, "stream_poll failed: [%d]\n", aimux_error_code(err));
                        aimux_error_free(err);
                        aimux_stream_free(h);
                        return 1;
                    }
                    if (batch && s >= 0) events += count_deltas(batch);
                    aimux_string_free(batch);
                    if (over == AIMUX_STREAM_ENDED) {
                        ended = 1;
                        break;
                    }
                    if (!batch) break;
                }
            }
        }
        aimux_stream_free(h);
    }
    double seconds = now() - t0;
    printf("{\"streams\":%d,\"events\":%ld,\"seconds\":%.6f,\"eventsPerSecond\":%.1f}\n", streams,
           events, seconds, events / seconds);
    return 0;
}

static int stream_next_batch_mode(int streams, const char *params)
{
    long events = 0;
    double t0 = 0;
    for (int s = -1; s < streams; s++) { /* stream -1 is the warm-up, outside the timing */
        if (s == 0) t0 = now();
        uint64_t h = 0;
        aimux_error_t *err = aimux_stream("stream_text", params, &h);
        if (err) {
            fprintf(stderr, "stream failed: [%d]\n", aimux_error_code(err));
            aimux_error_free(err);
            return 1;
        }
        for (int32_t over = AIMUX_STREAM_OPEN; over == AIMUX_STREAM_OPEN;) {
            char *batch = NULL;
            err = aimux_stream_next_batch(h, 1024, &batch, &over);
            if (err) {
                fprintf(stderr, "stream_next_batch failed: [%d]\n", aimux_error_code(err));
                aimux_error_free(err);
                aimux_stream_free(h);
                return 1;
            }
            if (batch && s >= 0) events += count_deltas(batch);
            aimux_string_free(batch);
        }
        aimux_stream_free(h);
    }
    double seconds = now() - t0;
    printf("{\"streams\":%d,\"events\":%ld,\"seconds\":%.6f,\"eventsPerSecond\":%.1f}\n", streams,
           events, seconds, events / seconds);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "stream") == 0) return stream_mode(atoi(argv[2]), argv[3]);
    if (argc == 4 && strcmp(argv[1], "stream-next-batch") == 0)
        return stream_next_batch_mode(atoi(argv[2]), argv[3]);
    if (argc == 4 && strcmp(argv[1], "stream-batch") == 0)
        return stream_batch_mode(atoi(argv[2]), argv[3]);
    if (argc < 5) {
        fprintf(stderr,
                "usage: %s aimux <threads> <calls> <params-json>\n"
                "       %s raw <threads> <calls> <port> <model>\n",
                argv[0], argv[0]);
        return 2;
    }
    int raw = strcmp(argv[1], "raw") == 0;
    int threads = atoi(argv[2]);
    g_calls = atoi(argv[3]);
    if (threads < 1 || threads > 256 || g_calls < 1) return 2;
    if (raw) {
        if (argc < 6) return 2;
        g_port = atoi(argv[4]);
        g_model = argv[5];
    } else {
        g_params = argv[4];
        /* warm-up: start the runtime and open a pooled connection outside the timing */
        char *out = NULL;
        aimux_error_t *err = aimux_call("generate_text", g_params, &out);
        if (err) {
            char *m = aimux_error_message(err);
            fprintf(stderr, "warm-up call failed: [%d] %s\n", aimux_error_code(err), m ? m : "?");
            aimux_string_free(m);
            aimux_error_free(err);
            return 1;
        }
        aimux_string_free(out);
    }
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    pthread_barrier_init(&g_start, NULL, (unsigned)threads + 1);
    g_deadline = now() + 60.0;
    for (int i = 0; i < threads; i++)
        pthread_create(&tids[i], NULL, raw ? raw_worker : aimux_worker, NULL);
    pthread_barrier_wait(&g_start);
    double t0 = now();
    for (int i = 0; i < threads; i++) pthread_join(tids[i], NULL);
    double seconds = now() - t0;
    int truncated = now() >= g_deadline;
    printf("{\"threads\":%d,\"calls\":%d,\"seconds\":%.6f,\"callsPerSecond\":%.3f,\"failures\":%d,"
           "\"truncated\":%s}\n",
           threads, g_done, seconds, g_done / seconds, g_failures, truncated ? "true" : "false");
    free(tids);
    return g_failures ? 1 : 0;
}
