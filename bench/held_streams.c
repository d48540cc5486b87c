/* Concurrent streams held by one C process on one thread (make bench, section 6; issue 12):
 * aimux_stream_start for every stream, poll(2) on aimux_events_fd(), aimux_ready() +
 * aimux_stream_poll() batches. Prints one JSON line like bench/peers/held_streams.mjs.
 *
 *   held_streams <params_json> <streams> <events_per_stream>
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "aimux.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int threads(void)
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

static long rss(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return res * sysconf(_SC_PAGESIZE);
}

static int deltas_in(const char *batch)
{
    int n = 0;
    const char *p = batch;
    while ((p = strstr(p, "\"text-delta\"")) != NULL) {
        n++;
        p += 12;
    }
    return n;
}

/* Runs `count` streams to their end; returns the text deltas seen (-1 on a failure). */
static long run(const char *params, int count, int fd, double *open_s, int *thr_max, long *rss_max)
{
    uint64_t *hs = calloc((size_t)count, sizeof *hs);
    char *seen = calloc((size_t)count, 1), *over = calloc((size_t)count, 1);
    int firsts = 0, ended = 0, i;
    long events = 0;
    double t0 = now_s();
    uint64_t ready[512];
    for (i = 0; i < count; i++) {
        aimux_error_t *e = aimux_stream_start("stream_text", params, &hs[i]);
        if (e) {
            fprintf(stderr, "start: %d\n", aimux_error_code(e));
            return -1;
        }
    }
    while (ended < count) {
        struct pollfd p = {fd, POLLIN, 0};
        char buf[256];
        size_t n, k;
        if (now_s() - t0 > 600) {
            fprintf(stderr, "timed out\n");
            return -1;
        }
        if (poll(&p, 1, 1000) > 0)
            while (read(fd, buf, sizeof buf) > 0) {}
        do {
            if (aimux_ready(ready, 512, &n)) return -1;
            for (k = 0; k < n; k++) {
                /* handles count up from the first one started: index by offset */
                long idx = (long)(ready[k] - hs[0]);
                if (idx < 0 || idx >= count || hs[idx] != ready[k] || over[idx]) continue;
                for (;;) {
                    char *batch = NULL;
                    int32_t end = 0;
                    aimux_error_t *e = aimux_stream_poll(ready[k], 256, &batch, &end);
                    if (e) {
                        fprintf(stderr, "poll: %d\n", aimux_error_code(e));
                        return -1;
                    }
                    if (batch) {
                        int d = deltas_in(batch);
                        events += d;
                        if (d && !seen[idx]) {
                            seen[idx] = 1;
                            if (++firsts == count) {
                                long r = rss();
                                int t = threads();
                                *open_s = now_s() - t0;
                                if (t > *thr_max) *thr_max = t;
                                if (r > *rss_max) *rss_max = r;
                            }
                        }
                        aimux_string_free(batch);
                    }
                    if (end) {
                        over[idx] = 1;
                        ended++;
                        aimux_stream_free(ready[k]);
                        break;
                    }
                    if (!batch) break;
                }
            }
        } while (n == 512);
        {
            long r = rss();
            int t = threads();
            if (t > *thr_max) *thr_max = t;
            if (r > *rss_max) *rss_max = r;
        }
    }
    free(hs);
    free(seen);
    free(over);
    return events;
}

int main(int argc, char **argv)
{
    int count, per, fd = -1, thr0, thr_max;
    long rss0, rss_max, events;
    double t0, secs, open_s = 0;
    aimux_error_t *e;
    if (argc < 4) {
        fprintf(stderr, "usage: held_streams <params_json> <streams> <events>\n");
        return 2;
    }
    count = atoi(argv[2]);
    per = atoi(argv[3]);
    if ((e = aimux_events_fd(&fd)) != NULL) {
        fprintf(stderr, "events_fd: %d\n", aimux_error_code(e));
        return 1;
    }
    thr_max = 0;
    rss_max = 0;
    if (run(argv[1], 1, fd, &open_s, &thr_max, &rss_max) != per) {
        fprintf(stderr, "warm-up failed\n");
        return 1;
    }
    thr0 = threads();
    rss0 = rss();
    thr_max = thr0;
    rss_max = rss0;
    t0 = now_s();
    events = run(argv[1], count, fd, &open_s, &thr_max, &rss_max);
    secs = now_s() - t0;
    if (events != (long)count * per) {
        fprintf(stderr, "expected %ld deltas, got %ld\n", (long)count * per, events);
        return 1;
    }
    printf("{\"mode\":\"c\",\"streams\":%d,\"events\":%ld,\"openSeconds\":%.4f,\"seconds\":%.4f,"
           "\"eventsPerSecond\":%.1f,\"threadsBaseline\":%d,\"threadsMax\":%d,\"rssBaseline\":%ld,"
           "\"rssMax\":%ld,\"rssPerStreamKiB\":%.2f}\n",
           count, events, open_s, secs, events / secs, thr0, thr_max, rss0, rss_max,
           (double)(rss_max - rss0) / count / 1024.0);
    return 0;
}
