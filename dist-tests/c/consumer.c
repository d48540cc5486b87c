/* A downstream C program on an installed libaimux (dist-tests): no path of the checkout, no
 * environment variable (the day-one program). 1) a replayed generate_text; 2) the same prompt
 * streamed (a replayed stream_text); 3) a failing call (a closed loopback port) whose native cause
 * chain must end in ConnectionRefusedError.
 * Usage: consumer <recording.jsonl>. Exit status 0 when all three behave. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <aimux.h>

int main(int argc, char **argv)
{
    char params[4096], *result = NULL;
    int ok = 1;
    if (argc < 2) {
        fprintf(stderr, "usage: consumer <recording.jsonl>\n");
        return 2;
    }
    printf("libaimux ABI %u (header %d)\n", aimux_abi_version(), AIMUX_ABI_VERSION);

    snprintf(params, sizeof params,
             "{\"model\": {\"provider\": \"openai\", \"modelId\": \"gpt-4o-mini\","
             " \"baseURL\": \"http://127.0.0.1:1/v1\"}, \"prompt\": \"Say hello in one word.\","
             " \"recording\": {\"mode\": \"replay\", \"path\": \"%s\"}}",
             argv[1]);
    aimux_error_t *err = aimux_call("generate_text", params, &result);
    if (err == NULL && strstr(result, "\"text\":\"Hello!\"") != NULL) {
        printf("replay ok: %s\n", result);
    } else {
        char *json = err ? aimux_error_json(err) : NULL;
        printf("replay FAILED: %s\n", json ? json : result ? result : "(nothing)");
        aimux_string_free(json);
        ok = 0;
    }
    aimux_error_free(err);
    aimux_string_free(result);
    result = NULL;

    /* the same prompt streamed (stream_text), replayed from the same recording */
    uint64_t stream = 0;
    char text[256] = "", finish[64] = "";
    err = aimux_stream("stream_text", params, &stream);
    for (char *event = NULL; err == NULL; aimux_string_free(event)) {
        err = aimux_stream_next(stream, &event);
        if (err != NULL || event == NULL) break;
        const char *at = strstr(event, "\"text\":\"");
        if (strstr(event, "\"type\":\"text-delta\"") && at)
            strncat(text, at + 8, strcspn(at + 8, "\""));
        if (strstr(event, "\"type\":\"finish\""))
            snprintf(finish, sizeof finish, "%s", strstr(event, "\"stop\"") ? "stop" : "?");
    }
    if (err == NULL && strcmp(text, "Hello!") == 0 && strcmp(finish, "stop") == 0) {
        printf("stream ok: text-delta events \"%s\", then finish (%s)\n", text, finish);
    } else {
        char *json = err ? aimux_error_json(err) : NULL;
        printf("stream FAILED: text \"%s\", finish \"%s\" %s\n", text, finish, json ? json : "");
        aimux_string_free(json);
        ok = 0;
    }
    aimux_error_free(err);
    aimux_stream_free(stream);

    err = aimux_call("generate_text",
                     "{\"model\": {\"provider\": \"openai\", \"modelId\": \"gpt-4o-mini\","
                     " \"baseURL\": \"http://127.0.0.1:1/v1\", \"apiKey\": \"sk-test\"},"
                     " \"prompt\": \"hi\", \"maxRetries\": 0}",
                     &result);
    if (err == NULL) {
        printf("chain FAILED: unexpected success %s\n", result);
        ok = 0;
    } else {
        char *last = NULL;
        printf("error %d, native chain:", aimux_error_code(err));
        for (const aimux_error_t *n = err; n != NULL; n = aimux_error_cause(n)) {
            char *name = aimux_error_name(n);
            printf(" %s%s", n == err ? "" : "-> ", name ? name : "?");
            aimux_string_free(last);
            last = name;
        }
        printf("\n");
        /* maxRetries 0: the APICallError itself, its code from the installed aimux_codes.h */
        if (aimux_error_code(err) == AIMUX_CODE_API_CALL && last != NULL &&
            strcmp(last, "ConnectionRefusedError") == 0) {
            printf("chain ok: ends in ConnectionRefusedError\n");
        } else {
            printf("chain FAILED: ends in %s\n", last ? last : "?");
            ok = 0;
        }
        aimux_string_free(last);
    }
    aimux_error_free(err);
    aimux_string_free(result);
    return ok ? 0 : 1;
}
