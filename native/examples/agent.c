/*
 * A small agent in C on the shared library alone (native/aimux.h): the model calls a host tool,
 * the program runs it and answers with aimux_stream_tool_result() — the core asks, the host
 * answers (no callback crosses the ABI). The tool fails once at tool level (a file that is not
 * there): the model reads the error and recovers with another path, then answers.
 * Replayed from recordings/agent.jsonl: no network, no key. Printed step by step.
 * Usage: agent [path/to/recordings/agent.jsonl]
 * Exit status 0 when the agent ends with the expected answer after three steps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimux.h"

#ifndef AIMUX_REPO
#define AIMUX_REPO "."
#endif

/* The value of "key" in one flat JSON event, copied into `out` (a JSON string's text without
   escapes, enough for this demo's events), or "" when absent. */
static const char *field(const char *json, const char *key, char *out, size_t cap)
{
    char pattern[64];
    const char *at, *end;
    size_t n;
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    out[0] = '\0';
    if ((at = strstr(json, pattern)) == NULL) return out;
    at += strlen(pattern);
    if ((end = strchr(at, '"')) == NULL) return out;
    n = (size_t)(end - at) < cap - 1 ? (size_t)(end - at) : cap - 1;
    memcpy(out, at, n);
    out[n] = '\0';
    return out;
}

/* The tool: the user's notes. A missing file is a tool-level error the model sees. */
static const char *read_file(const char *path, char *answer, size_t cap)
{
    if (strcmp(path, "notes/todo.txt") == 0)
        snprintf(answer, cap, "{\"output\": \"buy milk; call Ada\"}");
    else
        snprintf(answer, cap, "{\"error\": {\"message\": \"file not found: %s\"}}", path);
    return answer;
}

static int fail(aimux_error_t *err, const char *what)
{
    char *msg = aimux_error_message(err);
    fprintf(stderr, "agent: %s failed: %d %s\n", what, aimux_error_code(err), msg ? msg : "");
    aimux_string_free(msg);
    aimux_error_free(err);
    return 1;
}

int main(int argc, char **argv)
{
    const char *recording = argc > 1 ? argv[1] : AIMUX_REPO "/recordings/agent.jsonl";
    char params[2048], id[128], name[64], path[256], answer[512], text[512] = "";
    int steps = 0;
    uint64_t stream = 0;
    aimux_error_t *err;

    snprintf(
        params, sizeof params,
        "{\"model\": {\"provider\": \"openai\", \"modelId\": \"gpt-4o-mini\","
        " \"baseURL\": \"http://127.0.0.1:1/v1\"},"
        " \"prompt\": \"What is on my todo list?\","
        " \"tools\": {\"read_file\": {\"description\": \"Read a text file of the user's notes.\","
        " \"inputSchema\": {\"type\": \"object\", \"properties\": {\"path\": {\"type\": "
        "\"string\"}},"
        " \"required\": [\"path\"]}, \"execute\": true}},"
        " \"stopWhen\": {\"stepCount\": 5},"
        " \"recording\": {\"mode\": \"replay\", \"path\": \"%s\"}}",
        recording);
    printf("== a small agent: the model calls read_file, the host runs it\n");
    if ((err = aimux_stream("stream_text", params, &stream)) != NULL)
        return fail(err, "aimux_stream");
    for (;;) {
        char *event = NULL, type[32];
        if ((err = aimux_stream_next(stream, &event)) != NULL) {
            aimux_stream_free(stream);
            return fail(err, "aimux_stream_next");
        }
        if (event == NULL) break; /* the end */
        field(event, "type", type, sizeof type);
        if (strcmp(type, "start-step") == 0) {
            printf("step %d\n", ++steps);
        } else if (strcmp(type, "text-delta") == 0) {
            char delta[256];
            field(event, "text", delta, sizeof delta);
            strncat(text, delta, sizeof text - strlen(text) - 1);
            printf("  model says: %s\n", delta);
        } else if (strcmp(type, "tool-call") == 0) {
            /* run the tool and answer (here on this thread; any thread would do) */
            field(event, "toolCallId", id, sizeof id);
            field(event, "toolName", name, sizeof name);
            field(event, "path", path, sizeof path);
            printf("  model calls %s(%s)\n", name, path);
            read_file(path, answer, sizeof answer);
            printf("  host answers %s\n", answer);
            if ((err = aimux_stream_tool_result(stream, id, answer)) != NULL) {
                aimux_string_free(event);
                aimux_stream_free(stream);
                return fail(err, "aimux_stream_tool_result");
            }
        } else if (strcmp(type, "tool-error") == 0) {
            printf("  the model reads the tool error and may recover\n");
        } else if (strcmp(type, "tool-result") == 0) {
            printf("  the model reads the tool result\n");
        } else if (strcmp(type, "finish-step") == 0) {
            char reason[32];
            printf("  step done: %s\n", field(event, "finishReason", reason, sizeof reason));
        } else if (strcmp(type, "finish") == 0) {
            printf("done after %d steps: %s\n", steps, text);
        } else if (strcmp(type, "error") == 0) {
            printf("  error event: %s\n", event);
        }
        aimux_string_free(event);
    }
    aimux_stream_free(stream);
    if (steps != 3 || strcmp(text, "Your todo list: buy milk, and call Ada.") != 0) {
        fprintf(stderr, "agent: unexpected run (%d steps, text \"%s\")\n", steps, text);
        return 1;
    }
    return 0;
}
