/* The per-tool-call cost of the host-tool protocol through the C ABI (make bench, section
 * "loops", bench/loops.py): streams read with aimux_stream_next(), alternately of
 * `host_params_json` (its tools have "execute": true: each `tool-call` event is answered at
 * once with aimux_stream_tool_result()) and of `plain_params_json` (the same model answer, the
 * tool calls merely reported). Prints one JSON line: {"streams", "reported": {"toolCalls",
 * "toolResults", "seconds"}, "answered": {…}} (the warm-up streams excluded).
 *
 *   tool_calls <host_params_json> <plain_params_json> <streams>
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "aimux.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(const char *what, aimux_error_t *err)
{
    fprintf(stderr, "tool_calls: %s: %s\n", what, err ? aimux_error_message(err) : "?");
    aimux_error_free(err);
    return -1;
}

/* Runs one stream to its end; adds its tool calls and results; 0, or -1 on a failure. */
static int run(const char *params, int answer, long *calls, long *results)
{
    uint64_t h = 0;
    aimux_error_t *err = aimux_stream("stream_text", params, &h);
    if (err) return fail("open", err);
    for (;;) {
        char *ev = NULL;
        err = aimux_stream_next(h, &ev);
        if (err) {
            aimux_stream_free(h);
            return fail("next", err);
        }
        if (!ev) break;
        if (strstr(ev, "\"type\":\"error\"")) {
            fprintf(stderr, "tool_calls: error event %s\n", ev);
            aimux_string_free(ev);
            aimux_stream_free(h);
            return -1;
        }
        if (strstr(ev, "\"type\":\"tool-result\"")) (*results)++;
        const char *id =
            strstr(ev, "\"type\":\"tool-call\"") ? strstr(ev, "\"toolCallId\":\"") : NULL;
        if (id) {
            char call_id[64];
            id += strlen("\"toolCallId\":\"");
            size_t n = strcspn(id, "\"");
            if (n >= sizeof call_id) n = sizeof call_id - 1;
            memcpy(call_id, id, n);
            call_id[n] = '\0';
            (*calls)++;
            if (answer) {
                err = aimux_stream_tool_result(h, call_id, "{\"output\":\"ok\"}");
                if (err) {
                    aimux_string_free(ev);
                    aimux_stream_free(h);
                    return fail("tool_result", err);
                }
            }
        }
        aimux_string_free(ev);
    }
    aimux_stream_free(h);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: tool_calls <host_params_json> <plain_params_json> <streams>\n");
        return 2;
    }
    const char *params[2] = {argv[2], argv[1]}; /* [0]: reported, [1]: answered */
    int streams = atoi(argv[3]);
    long calls[2] = {0, 0}, results[2] = {0, 0};
    double seconds[2] = {0, 0};
    for (int i = 0; i < 3; i++)
        for (int m = 0; m < 2; m++)
            if (run(params[m], m, &calls[m], &results[m])) return 1;
    calls[0] = calls[1] = results[0] = results[1] = 0;
    for (int i = 0; i < streams; i++)
        for (int m = 0; m < 2; m++) { /* the two kinds alternate: both see the same load */
            double t0 = now_s();
            if (run(params[m], m, &calls[m], &results[m])) return 1;
            seconds[m] += now_s() - t0;
        }
    printf("{\"streams\": %d, \"reported\": {\"toolCalls\": %ld, \"toolResults\": %ld, "
           "\"seconds\": %.6f}, \"answered\": {\"toolCalls\": %ld, \"toolResults\": %ld, "
           "\"seconds\": %.6f}}\n",
           streams, calls[0], results[0], seconds[0], calls[1], results[1], seconds[1]);
    return 0;
}
