/*
 * The aimux demo: a C program on the shared library alone (native/aimux.h).
 *   1. one successful generate_text, replayed from the shipped recording (no network, no key);
 *   2. one failing call (a closed local port) with its whole native cause chain as a tree.
 * Usage: demo [path/to/recordings/demo.jsonl]
 * Exit status 0 when both behave as described.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimux.h"

#ifndef AIMUX_REPO
#define AIMUX_REPO "."
#endif

static void print_error_tree(const aimux_error_t *err)
{
    int depth = 0;
    for (const aimux_error_t *n = err; n != NULL; n = aimux_error_cause(n), depth++) {
        char *kind = aimux_error_kind(n), *name = aimux_error_name(n),
             *msg = aimux_error_message(n);
        printf("    ");
        for (int i = 1; i < depth; i++) printf("   ");
        if (depth > 0) printf("\xe2\x94\x94\xe2\x94\x80 "); /* "└─ " */
        if (aimux_error_code(n) != 0)
            printf("%s (%s %d): %s\n", name ? name : "?", kind, aimux_error_code(n),
                   msg ? msg : "");
        else
            printf("%s (source): %s\n", name ? name : "exception", msg ? msg : "");
        aimux_string_free(kind);
        aimux_string_free(name);
        aimux_string_free(msg);
    }
}

int main(int argc, char **argv)
{
    const char *recording = argc > 1 ? argv[1] : AIMUX_REPO "/recordings/demo.jsonl";
    char params[8192], *result = NULL;
    int ok = 1;

    printf("aimux demo: libaimux ABI %u (header %d)\n", aimux_abi_version(), AIMUX_ABI_VERSION);
    aimux_error_t *err = aimux_call("aimux.version", "{}", &result);
    if (err == NULL) printf("core: %s\n", result);
    aimux_error_free(err);
    aimux_string_free(result);
    result = NULL;

    /* 1. a successful call, replayed */
    snprintf(params, sizeof params,
             "{\"model\": {\"provider\": \"openai\", \"modelId\": \"gpt-4o-mini\", \"baseURL\": "
             "\"http://127.0.0.1:1/v1\"},"
             " \"prompt\": \"Say hello in one word.\","
             " \"recording\": {\"mode\": \"replay\", \"path\": \"%s\"}}",
             recording);
    printf("\n1) generate_text, replayed from %s\n", recording);
    err = aimux_call("generate_text", params, &result);
    if (err == NULL) {
        printf("    result: %s\n", result);
        ok &= strstr(result, "\"text\":\"Hello!\"") != NULL;
    } else {
        printf("    unexpected error:\n");
        print_error_tree(err);
        ok = 0;
    }
    aimux_error_free(err);
    aimux_string_free(result);
    result = NULL;

    /* 2. a failing call: port 1 on loopback is closed */
    const char *failing = "{\"model\": {\"provider\": \"openai\", \"modelId\": \"gpt-4o-mini\", "
                          "\"baseURL\": \"http://127.0.0.1:1/v1\","
                          " \"apiKey\": \"sk-test\"}, \"prompt\": \"hi\", \"maxRetries\": 1, "
                          "\"retry\": {\"initialDelayMs\": 10}}";
    printf("\n2) generate_text against a closed port (maxRetries 1)\n");
    err = aimux_call("generate_text", failing, &result);
    if (err == NULL) {
        printf("    unexpected success: %s\n", result);
        ok = 0;
    } else {
        char *json = aimux_error_json(err);
        printf("    error %d, native cause chain:\n", aimux_error_code(err));
        print_error_tree(err);
        printf("    envelope: %s\n", json);
        const aimux_error_t *last = err;
        for (const aimux_error_t *n = err; n; n = aimux_error_cause(n)) last = n;
        char *lm = aimux_error_message(last);
        ok &= aimux_error_code(err) == AIMUX_CODE_RETRY && lm && strstr(lm, "Connection refused");
        aimux_string_free(lm);
        aimux_string_free(json);
    }
    aimux_error_free(err);
    aimux_string_free(result);
    printf("\n%s\n", ok ? "demo ok" : "demo FAILED");
    return ok ? 0 : 1;
}
