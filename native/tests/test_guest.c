/*
 * libaimux as a guest in a C host's process (DESIGN.md "The library as a guest"): fork, signals,
 * pools and limits. Each scenario is one subcommand, run by `make -C native test` as its own
 * process, against the real fault server (tests/fault_server.py on 127.0.0.1, an ephemeral port).
 * Every wait is bounded: each call has timeoutMs, and alarm() ends a stuck process (SIGALRM).
 * No sleep stands for a synchronisation: a host waits on what the fault server saw (a request
 * held, N requests held, clients that left) and releases held requests itself.
 *
 *   test_guest fork-warm     a warm pool, then fork: 20 calls on each side, each its own answer;
 *                            a stream opened before the fork is 203 in the child
 *   test_guest fork-busy     another thread inside a call when the host forks: the child's calls
 *                            complete, the parent's call gets its own answer
 *   test_guest fork-unknown  two threads calling unknown ops (answered by the core) while the
 *                            host forks 200 times: each child answers its own unknown ops; the
 *                            host's own fork handler (registered first) makes calls each time
 *   test_guest fork-three    10 fresh hosts: another thread starts the runtime and calls all the
 *                            time, the main thread (which never called) forks three children
 *                            150 ms apart; each child's first generate_text gets its own answer
 *   test_guest fork-anytime  10 fresh hosts fork 5 children each at random moments of their
 *                            first second (during the start-up, while the first event-driven
 *                            stream's reader imports, during calls): 50 of 50 answer; a child
 *                            that does not within 20 s is killed and counted
 *   test_guest payload-pth   the runtime runs no site import; a payload .pth runs, the two it
 *                            skips (distutils-precedence, an editable aimux_ops) do not
 *   test_guest signals       every disposition and the mask are the same before and after calls
 *   test_guest sigint        a real SIGINT to a host blocked in a slow call: it dies by SIGINT;
 *                            with its own handler, the handler runs and the call completes
 *   test_guest streams200    200 streams open and never freed: the next call completes
 *   test_guest limits        a full per-host pool is a clear error (11, naming the limit), and
 *                            streams nobody reads are released by the core's idle timeout
 *   test_guest exit          a host that ends while the core's stream threads run: in its own
 *                            exit handler (run after OpenSSL's would be) the library still works,
 *                            OpenSSL on those threads included, and the process exits cleanly
 *
 * Event-driven streams (aimux_stream_start) run on reader threads of their own, or on the core's
 * stream loop with AIMUX_STREAM_READER_THREADS=0: `make -C native test-guest` runs fork-warm and
 * exit both ways.
 *
 * Prints "N passed, N failed"; exits non-zero on any failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aimux.h"

#ifndef AIMUX_REPO
#error "compile with -DAIMUX_REPO=\"/path/to/repo\""
#endif

static atomic_int g_pass, g_fail;
static int g_port;
static pid_t g_server;

static void check_(int ok, int line, const char *fmt, ...)
{
    va_list ap;
    if (ok) {
        atomic_fetch_add(&g_pass, 1);
        return;
    }
    atomic_fetch_add(&g_fail, 1);
    va_start(ap, fmt);
    fprintf(stderr, "FAIL [pid %d] test_guest.c:%d: ", (int)getpid(), line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
#define CHECK(cond, ...) check_(!!(cond), __LINE__, __VA_ARGS__)

/* --- the fault server's control endpoints (tests/fault_server.py) -------------------------- */
/* One request to the fault server on its own connection; the HTTP status (0 on failure). */
static int server_control(const char *method, const char *path)
{
    struct sockaddr_in a;
    char req[1024], resp[256];
    int fd, status = 0, n = 0, len;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)g_port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return 0;
    }
    len = snprintf(req, sizeof req,
                   "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
                   "Connection: close\r\n\r\n",
                   method, path);
    if (write(fd, req, (size_t)len) == len) {
        ssize_t r;
        while (n < (int)sizeof resp - 1 && (r = read(fd, resp + n, sizeof resp - 1 - n)) > 0)
            n += (int)r;
        resp[n] = 0;
        if (strncmp(resp, "HTTP/1.", 7) == 0 && n > 12) status = atoi(resp + 9);
    }
    close(fd);
    return status;
}

static void url_encode(char *out, size_t n, const char *in)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *in && o + 4 < n; in++) {
        unsigned char c = (unsigned char)*in;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = 0;
}

/* 1 once the server saw `n` `event` events of `scenario` (a request's spec); 0 when it did not
   within 60 s (a safety bound: a broken case fails instead of hanging). */
static int server_wait(const char *event, const char *scenario, int n)
{
    char enc[512], path[700];
    url_encode(enc, sizeof enc, scenario);
    snprintf(path, sizeof path, "/__wait?event=%s&scenario=%s&n=%d&timeout_ms=60000", event, enc,
             n);
    return server_control("GET", path) == 200;
}

/* lets the requests held under `hold` (hold=NAME in their spec) go on */
static void server_release(const char *hold)
{
    char path[300];
    snprintf(path, sizeof path, "/__release?hold=%s", hold);
    CHECK(server_control("POST", path) == 200, "the fault server released %s", hold);
}

/* --- the fault server ---------------------------------------------------------------------- */
static void stop_server(void)
{
    if (g_server > 0) {
        kill(g_server, SIGKILL);
        waitpid(g_server, NULL, 0);
        g_server = 0;
    }
}

static int start_server(const char *python)
{
    int fds[2];
    char line[256];
    size_t n = 0;
    if (pipe(fds) != 0) return -1;
    g_server = fork();
    if (g_server < 0) return -1;
    if (g_server == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(python, python, AIMUX_REPO "/tests/fault_server.py", "--port", "0", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    while (n < sizeof line - 1) { /* "fault server on http://127.0.0.1:PORT/v1\n", within 30 s */
        struct pollfd p = {fds[0], POLLIN, 0};
        ssize_t r;
        if (poll(&p, 1, 30000) <= 0) break;
        r = read(fds[0], line + n, 1);
        if (r <= 0 || line[n] == '\n') break;
        n++;
    }
    line[n] = 0;
    close(fds[0]);
    {
        const char *p = strstr(line, "127.0.0.1:");
        g_port = p ? atoi(p + 10) : 0;
    }
    if (g_port <= 0) {
        fprintf(stderr, "fault server did not start: '%s'\n", line);
        stop_server();
        return -1;
    }
    return 0;
}

/* --- calls --------------------------------------------------------------------------------- */
/* Params against the fault server; `extra` ("" or ",\"key\":value") ends the object. */
static void params(char *buf, size_t n, const char *spec, int timeout_ms, const char *extra)
{
    snprintf(buf, n,
             "{\"model\":{\"provider\":\"openai\",\"modelId\":\"fault:%s\",\"baseURL\":"
             "\"http://127.0.0.1:%d/v1\",\"apiKey\":\"sk-guest-test\"},\"prompt\":\"hi\","
             "\"maxRetries\":0,\"timeoutMs\":%d%s}",
             spec, g_port, timeout_ms, extra);
}

/* generate_text with the server answering `text`; 1 when the result carries exactly it. */
static int call_text(const char *text, const char *extra_spec, char *why, size_t why_n)
{
    char spec[256], p[1024], want[300], *res = NULL;
    aimux_error_t *e;
    int ok;
    snprintf(spec, sizeof spec, "%s;text=%s", extra_spec ? extra_spec : "mode=ok", text);
    params(p, sizeof p, spec, 20000, "");
    e = aimux_call("generate_text", p, &res);
    if (e) {
        char *m = aimux_error_message(e);
        snprintf(why, why_n, "error %d: %s", aimux_error_code(e), m ? m : "?");
        aimux_string_free(m);
        aimux_error_free(e);
        return 0;
    }
    snprintf(want, sizeof want, "\"text\":\"%s\"", text);
    ok = res && strstr(res, want) != NULL;
    snprintf(why, why_n, "%.200s", res ? res : "NULL");
    aimux_string_free(res);
    return ok;
}

/* A stream opened with `open` (aimux_stream: read on its reader's thread; aimux_stream_start:
   event-driven, on a reader thread of the core or its stream loop, its open's own failure
   coming with the first read).
   `*code`: the open's error code (0: opened). */
static uint64_t open_with(aimux_error_t *(*open)(const char *, const char *, uint64_t *),
                          const char *spec, int timeout_ms, int32_t *code)
{
    char p[1024];
    uint64_t h = 0;
    aimux_error_t *e;
    params(p, sizeof p, spec, timeout_ms, "");
    e = open("stream_text", p, &h);
    *code = e ? aimux_error_code(e) : 0;
    aimux_error_free(e);
    return h;
}

static uint64_t open_stream(const char *spec, int timeout_ms, int32_t *code)
{
    return open_with(aimux_stream, spec, timeout_ms, code);
}

static uint64_t start_stream(const char *spec, int timeout_ms, int32_t *code)
{
    return open_with(aimux_stream_start, spec, timeout_ms, code);
}

static int32_t next_code(uint64_t h, char **ev)
{
    aimux_error_t *e = aimux_stream_next(h, ev);
    int32_t c = e ? aimux_error_code(e) : 0;
    aimux_error_free(e);
    return c;
}

/* --- fork ---------------------------------------------------------------------------------- */
static int calls_in_process(const char *who, int count)
{
    int i, bad = 0;
    char text[64], why[512];
    for (i = 0; i < count; i++) {
        snprintf(text, sizeof text, "%s-%d-%d", who, (int)getpid(), i);
        if (!call_text(text, NULL, why, sizeof why)) {
            fprintf(stderr, "[%s %d] call %d did not get its own answer: %s\n", who, (int)getpid(),
                    i, why);
            bad++;
        }
    }
    return bad;
}

static void test_fork_warm(void)
{
    char why[512], *ev = NULL;
    int round, status;
    int32_t code;
    uint64_t h, hs;
    CHECK(call_text("warm-up", NULL, why, sizeof why), "warm-up call: %s", why);
    /* streams opened before the fork: one read on its reader's thread, one event-driven (on a
       core thread: a reader thread, or the stream loop) */
    h = open_stream("mode=ok;text=abcdefgh;parts=4;drip_ms=50", 20000, &code);
    CHECK(h != 0 && code == 0, "stream before the fork: code %d", code);
    hs = start_stream("mode=ok;text=abcdefgh;parts=4;drip_ms=50", 20000, &code);
    CHECK(hs != 0 && code == 0, "event-driven stream before the fork: code %d", code);
    for (round = 0; round < 3; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            int bad;
            alarm(60);
            g_pass = 0;
            g_fail = 0;
            code = next_code(h, &ev);
            CHECK(code == 203 && ev == NULL, "child: the parent's stream is 203, got %d", code);
            code = next_code(hs, &ev);
            CHECK(code == 203 && ev == NULL,
                  "child: the parent's event-driven stream is 203, got %d", code);
            aimux_stream_free(h); /* stale handles: no effect, no crash */
            aimux_stream_free(hs);
            bad = calls_in_process("child", 20);
            CHECK(bad == 0, "child round %d: %d of 20 calls without their own answer", round, bad);
            _exit(g_fail ? 1 : 0);
        }
        CHECK(pid > 0, "fork");
        CHECK(calls_in_process("parent", 20) == 0,
              "parent round %d: calls without their own answer", round);
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "child round %d exited with status %#x", round, status);
    }
    /* the parent's stream still works in the parent */
    code = next_code(h, &ev);
    CHECK(code == 0 && ev != NULL, "parent: its stream still reads after the forks (code %d)",
          code);
    aimux_string_free(ev);
    ev = NULL;
    code = next_code(hs, &ev);
    CHECK(code == 0 && ev != NULL,
          "parent: its event-driven stream still reads after the forks (%d)", code);
    aimux_string_free(ev);
    aimux_stream_free(h);
    aimux_stream_free(hs);
}

struct slow_call {
    char spec[64]; /* mode=ok;hold=busy-<round>: the server holds it until the round releases it */
    int ok;
};
static void *slow_call_thread(void *arg)
{
    char why[512];
    struct slow_call *c = arg;
    c->ok = call_text("slow-parent", c->spec, why, sizeof why);
    if (!c->ok) fprintf(stderr, "slow call in the parent: %s\n", why);
    return NULL;
}

/* back-to-back calls (the interpreter lock is taken and released all the time) until stopped */
static atomic_int g_stop_busy;
static void *busy_calls_thread(void *arg)
{
    char why[512], text[64];
    int i = 0, *bad = (int *)arg;
    while (!atomic_load(&g_stop_busy)) {
        snprintf(text, sizeof text, "busy-%d", i++);
        if (!call_text(text, NULL, why, sizeof why)) (*bad)++;
    }
    return NULL;
}

static void test_fork_busy(void)
{
    char why[512];
    int round, busy_bad = 0;
    pthread_t busy;
    CHECK(call_text("warm-up", NULL, why, sizeof why), "warm-up call: %s", why);
    pthread_create(&busy, NULL, busy_calls_thread, &busy_bad);
    for (round = 0; round < 8; round++) {
        pthread_t t;
        int status = 0;
        pid_t pid;
        char hold[32], scenario[128];
        struct slow_call slow;
        snprintf(hold, sizeof hold, "busy-%d", round);
        snprintf(slow.spec, sizeof slow.spec, "mode=ok;hold=%s", hold);
        snprintf(scenario, sizeof scenario, "%s;text=slow-parent", slow.spec);
        slow.ok = 0;
        pthread_create(&t, NULL, slow_call_thread, &slow);
        /* fork once the call is inside the core, waiting on the server (which holds it) */
        CHECK(server_wait("held", scenario, 1), "round %d: the slow call reached the server",
              round);
        pid = fork();
        if (pid == 0) {
            alarm(30); /* a child stuck on the interpreter lock dies by SIGALRM: a failure */
            g_pass = 0;
            g_fail = 0;
            CHECK(call_text("child-first", NULL, why, sizeof why), "child's first call: %s", why);
            CHECK(calls_in_process("child", 20) == 0, "child: calls without their own answer");
            _exit(g_fail ? 1 : 0);
        }
        CHECK(pid > 0, "fork");
        server_release(hold);
        pthread_join(t, NULL);
        CHECK(slow.ok, "round %d: the parent's slow call got its own answer", round);
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "round %d: child exited with status %#x", round, status);
    }
    atomic_store(&g_stop_busy, 1);
    pthread_join(busy, NULL);
    CHECK(busy_bad == 0, "the busy thread's calls each got their own answer (%d did not)",
          busy_bad);
}

/* unknown ops answered by the core on other threads while the host forks: no lock is copied
   held, each child answers its own unknown ops */
static void *unknown_ops_thread(void *arg)
{
    char name[64];
    int i = 0, *bad = (int *)arg;
    while (!atomic_load(&g_stop_busy)) {
        char *out = NULL;
        aimux_error_t *e;
        snprintf(name, sizeof name, "no.such.op.%d", i++ % 1000);
        e = aimux_call(name, "{}", &out);
        if (e == NULL || aimux_error_code(e) != 300) (*bad)++;
        aimux_error_free(e);
        aimux_string_free(out);
    }
    return NULL;
}

static int unknown_op_answered(const char *name)
{
    char *out = NULL, *msg;
    char want[128];
    aimux_error_t *e = aimux_call(name, "{}", &out);
    int ok;
    if (e == NULL) return 0;
    msg = aimux_error_message(e);
    snprintf(want, sizeof want, "unknown op '%s'", name);
    ok = aimux_error_code(e) == 300 && msg != NULL && strcmp(msg, want) == 0;
    aimux_string_free(msg);
    aimux_error_free(e);
    return ok;
}

/* the host's own fork handler, registered before its first aimux call (so it runs inside the
   shim's fork window): it makes calls, the known op and a plain unknown one */
static atomic_int g_handler_ok, g_handler_bad;
static void host_parent_handler(void)
{
    char *out = NULL;
    aimux_error_t *e = aimux_call("aimux.version", "{}", &out);
    int ok = e == NULL && out != NULL;
    aimux_error_free(e);
    aimux_string_free(out);
    atomic_fetch_add(ok && unknown_op_answered("from.the.handler") ? &g_handler_ok : &g_handler_bad,
                     1);
}

static void test_fork_unknown(void)
{
    int round, forks = 0, bad[2] = {0, 0};
    pthread_t t[2];
    pthread_atfork(NULL, host_parent_handler, NULL);
    CHECK(unknown_op_answered("no.such.op") && unknown_op_answered("no.such.op"),
          "unknown ops answered before the threads start");
    atomic_store(&g_stop_busy, 0);
    for (round = 0; round < 2; round++)
        pthread_create(&t[round], NULL, unknown_ops_thread, &bad[round]);
    for (round = 0; round < 200; round++) {
        int status = 0;
        pid_t pid = fork();
        if (pid == 0) {
            alarm(10); /* a child stuck on a lock copied held dies by SIGALRM: a failure */
            _exit(unknown_op_answered("no.such.op.in.the.child") &&
                          unknown_op_answered("another.one")
                      ? 0
                      : 1);
        }
        CHECK(pid > 0, "fork");
        forks++;
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "round %d: child exited with status %#x", round, status);
        if (g_fail) break;
    }
    atomic_store(&g_stop_busy, 1);
    for (round = 0; round < 2; round++) pthread_join(t[round], NULL);
    CHECK(bad[0] + bad[1] == 0, "the threads' unknown ops were each answered 300 (%d were not)",
          bad[0] + bad[1]);
    CHECK(atomic_load(&g_handler_ok) == forks && atomic_load(&g_handler_bad) == 0,
          "the host's fork handler's calls were answered in every round (%d ok, %d not, %d forks)",
          atomic_load(&g_handler_ok), atomic_load(&g_handler_bad), forks);
}

/* --- fork from a host thread while another thread calls ------------------------------------ */
/* Runs `test_guest MODE PORT [ARG]` as a fresh host (exec'd: nothing of this process is
   inherited); its exit status, or -1 when it did not exit by itself. Its stdout is ours. */
static int run_host(const char *mode, const char *arg)
{
    char port[16];
    int status = 0;
    pid_t pid;
    snprintf(port, sizeof port, "%d", g_port);
    pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_guest", mode, port, arg, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    if (WIFSIGNALED(status)) fprintf(stderr, "host %s died by signal %d\n", mode, WTERMSIG(status));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Forks a child that makes one generate_text call and exits 0 when it got its own answer; the
   child's status once it ends, or -1 when it did not end within `limit_s` (a child stuck on a
   lock copied held, even in the fork's own child handlers, before it could set an alarm: killed
   here, a failure). */
static int fork_and_call(const char *who, int limit_s)
{
    int status = 0, waited;
    pid_t pid = fork();
    if (pid == 0) {
        char text[64], why[512];
        alarm((unsigned)limit_s);
        snprintf(text, sizeof text, "%s-%d", who, (int)getpid());
        if (call_text(text, NULL, why, sizeof why)) _exit(0);
        fprintf(stderr, "[%s %d] its first call: %s\n", who, (int)getpid(), why);
        _exit(1);
    }
    if (pid < 0) return -1;
    for (waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited++) {
        if (waited == limit_s * 100) {
            fprintf(stderr, "[%s %d] hung: killed\n", who, (int)pid);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        usleep(10 * 1000);
    }
    if (WIFSIGNALED(status))
        fprintf(stderr, "[%s %d] died by signal %d\n", who, (int)pid, WTERMSIG(status));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* a host thread that calls the library until told to stop: the known op and an unknown one
   (the first call of the process is this thread's: the runtime starts on it) */
static atomic_int g_caller_calls;
static void *version_caller_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop_busy)) {
        char *out = NULL;
        aimux_error_free(aimux_call("aimux.version", "{}", &out));
        aimux_string_free(out);
        out = NULL;
        aimux_error_free(aimux_call("no.such.op", "{}", &out));
        aimux_string_free(out);
        atomic_fetch_add(&g_caller_calls, 1);
    }
    return NULL;
}

/* The host of `fork-three`: another thread started the runtime and calls all the time; the main
   thread (which never called) forks three children 150 ms apart; each child's first call is a
   generate_text. 0 when the three got their own answers. */
static int fork_three_host(void)
{
    pthread_t t;
    int i, bad = 0;
    alarm(60);
    pthread_create(&t, NULL, version_caller_thread, NULL);
    while (atomic_load(&g_caller_calls) == 0) usleep(1000); /* the runtime runs */
    for (i = 0; i < 3; i++) {
        usleep(150 * 1000);
        if (fork_and_call("fork-three", 20) != 0) bad++;
    }
    atomic_store(&g_stop_busy, 1);
    pthread_join(t, NULL);
    return bad ? 1 : 0;
}

static void test_fork_three(void)
{
    int run, passed = 0;
    for (run = 0; run < 10; run++) {
        int rc = run_host("fork-three-host", "");
        CHECK(rc == 0, "run %d: the host's three children each answered (host status %d)", run, rc);
        passed += rc == 0;
    }
    printf("fork-three: %d of 10 runs passed\n", passed);
}

/* --- fork at any moment of a process's first second ---------------------------------------- */
/* The caller of `fork-anytime`'s host: the process's first call is an event-driven stream
   (aimux_stream_start: its reader thread imports the HTTP stack), then calls and stream reads
   one after the other until told to stop. */
static void *anytime_caller_thread(void *arg)
{
    char why[512], text[64];
    int32_t code;
    int i = 0;
    uint64_t h = start_stream("mode=ok;text=abcdefgh;parts=4;drip_ms=20", 20000, &code);
    (void)arg;
    while (!atomic_load(&g_stop_busy)) {
        char *batch = NULL;
        int32_t ended = 0;
        if (h != 0) {
            aimux_error_t *e = aimux_stream_poll(h, 64, &batch, &ended);
            aimux_error_free(e);
            aimux_string_free(batch);
            if (e != NULL || ended) {
                aimux_stream_free(h);
                h = start_stream("mode=ok;text=abcdefgh;parts=4;drip_ms=20", 20000, &code);
            }
        }
        snprintf(text, sizeof text, "anytime-%d", i++);
        (void)call_text(text, NULL, why, sizeof why);
    }
    if (h != 0) aimux_stream_free(h);
    return NULL;
}

/* The host of `fork-anytime`: forks `FORKS_PER_HOST` children at random moments of its first
   second (during the runtime's start-up on the caller thread, while the first stream's reader
   thread imports, during calls); prints how many answered. */
#define FORKS_PER_HOST 5
static int fork_anytime_host(unsigned seed)
{
    pthread_t t;
    int i, answered = 0;
    long at[FORKS_PER_HOST], now = 0;
    alarm(120);
    srand(seed);
    for (i = 0; i < FORKS_PER_HOST; i++) at[i] = rand() % 1000000; /* microseconds */
    for (i = 1; i < FORKS_PER_HOST; i++) {                         /* in order */
        long v = at[i];
        int j = i;
        while (j > 0 && at[j - 1] > v) {
            at[j] = at[j - 1];
            j--;
        }
        at[j] = v;
    }
    pthread_create(&t, NULL, anytime_caller_thread, NULL);
    for (i = 0; i < FORKS_PER_HOST; i++) {
        if (at[i] > now) usleep((useconds_t)(at[i] - now));
        now = at[i];
        answered += fork_and_call("anytime", 20) == 0;
    }
    atomic_store(&g_stop_busy, 1);
    pthread_join(t, NULL);
    printf("%d\n", answered);
    fflush(stdout);
    return 0;
}

static void test_fork_anytime(void)
{
    int host, answered = 0, hosts = 10;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    for (host = 0; host < hosts; host++) {
        int fds[2], status = 0, n = 0;
        char port[16], arg[16], out[32] = "";
        ssize_t r;
        pid_t pid;
        CHECK(pipe(fds) == 0, "pipe");
        snprintf(port, sizeof port, "%d", g_port);
        snprintf(arg, sizeof arg, "%u", seed + (unsigned)host);
        pid = fork();
        if (pid == 0) {
            dup2(fds[1], 1);
            close(fds[0]);
            close(fds[1]);
            execl("/proc/self/exe", "test_guest", "fork-anytime-host", port, arg, (char *)NULL);
            _exit(127);
        }
        close(fds[1]);
        while (n < (int)sizeof out - 1 && (r = read(fds[0], out + n, sizeof out - 1 - n)) > 0)
            n += (int)r;
        out[n] = 0;
        close(fds[0]);
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "host %d (seed %s) status %#x", host,
              arg, status);
        answered += atoi(out);
    }
    CHECK(answered == hosts * FORKS_PER_HOST,
          "children forked at random moments answered: %d of %d (seed %u)", answered,
          hosts * FORKS_PER_HOST, seed);
    printf("fork-anytime: %d of %d children answered (seed %u)\n", answered, hosts * FORKS_PER_HOST,
           seed);
}

/* --- the payload's start-up: no site import, the payload's .pth files but the skipped ones --- */
static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* The host of `payload-pth`: its first call (AIMUX_PYTHONPATH names the payload directories). */
static int payload_pth_host(void)
{
    char *out = NULL;
    aimux_error_t *e = aimux_call("aimux.version", "{}", &out);
    int ok = e == NULL && out != NULL;
    aimux_error_free(e);
    aimux_string_free(out);
    return ok ? 0 : 1;
}

/* A payload directory first on the path list with three .pth files, each leaving a mark when it
   runs: one of the payload's own (it runs, and sees no site import), setuptools' distutils shim
   and an editable install of aimux_ops (skipped: start-up time only). */
static void test_payload_pth(const char *python)
{
    char dir[128], file[256], mark[200], cmd[600], site[512] = "", paths[1200];
    static const char *const pth[][2] = {
        {"probe.pth", "probe"},
        {"distutils-precedence.pth", "distutils"},
        {"__editable__.aimux_ops-0.0.pth", "editable"},
    };
    FILE *f;
    size_t i;
    int rc;
    snprintf(dir, sizeof dir, "/tmp/aimux-test-pth-%d", (int)getpid());
    CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
    snprintf(mark, sizeof mark, "%s/mark", dir);
    for (i = 0; i < sizeof pth / sizeof pth[0]; i++) {
        snprintf(file, sizeof file, "%s/%s", dir, pth[i][0]);
        f = fopen(file, "w");
        if (f == NULL) continue;
        fprintf(f,
                "import sys; open(%s%s.%s.' + ('nosite' if sys.flags.no_site else 'site'), "
                "'w').close()\n",
                "'", mark, pth[i][1]);
        fclose(f);
    }
    /* the build's package paths after it (the venv's site-packages, the repository) */
    snprintf(cmd, sizeof cmd, "%s -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])'",
             python);
    f = popen(cmd, "r");
    if (f != NULL) {
        if (fgets(site, sizeof site, f) == NULL) site[0] = 0;
        pclose(f);
    }
    site[strcspn(site, "\n")] = 0;
    snprintf(paths, sizeof paths, "%s:%s:%s", dir, site, AIMUX_REPO);
    setenv("AIMUX_PYTHONPATH", paths, 1);
    rc = run_host("payload-pth-host", "");
    unsetenv("AIMUX_PYTHONPATH");
    CHECK(rc == 0, "the host's first call answered (status %d)", rc);
    snprintf(file, sizeof file, "%s.probe.nosite", mark);
    CHECK(file_exists(file), "the payload's own .pth ran, in an interpreter without site");
    snprintf(file, sizeof file, "%s.probe.site", mark);
    CHECK(!file_exists(file), "no site import: the interpreter's own site-packages are not ours");
    for (i = 1; i < sizeof pth / sizeof pth[0]; i++) {
        snprintf(file, sizeof file, "%s.%s.nosite", mark, pth[i][1]);
        CHECK(!file_exists(file), "%s is skipped", pth[i][0]);
        snprintf(file, sizeof file, "%s.%s.site", mark, pth[i][1]);
        CHECK(!file_exists(file), "%s is skipped", pth[i][0]);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* --- signals ------------------------------------------------------------------------------- */
#define NSIGS        65
#define SA_RESTORER_ 0x04000000 /* the C library adds it to every action it sets */
static struct sigaction g_before[NSIGS];
static int g_valid[NSIGS];
static volatile sig_atomic_t g_host_sigint;
static void host_handler(int sig)
{
    (void)sig;
    g_host_sigint++;
}

static void record_signals(void)
{
    int i;
    for (i = 1; i < NSIGS; i++) g_valid[i] = sigaction(i, NULL, &g_before[i]) == 0;
}

static void compare_signals(const char *when)
{
    int i;
    struct sigaction now;
    for (i = 1; i < NSIGS; i++) {
        int same;
        if (!g_valid[i] || sigaction(i, NULL, &now) != 0) continue;
        same = (now.sa_flags & ~SA_RESTORER_) == (g_before[i].sa_flags & ~SA_RESTORER_) &&
               ((now.sa_flags & SA_SIGINFO) ? now.sa_sigaction == g_before[i].sa_sigaction
                                            : now.sa_handler == g_before[i].sa_handler);
        CHECK(same, "%s: the disposition of signal %d (%s) changed", when, i, strsignal(i));
    }
}

static void test_signals(void)
{
    struct sigaction sa;
    sigset_t mask_before, mask_after;
    char why[512], *ev = NULL, *res = NULL;
    int32_t code;
    uint64_t h;
    static const int named[] = {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGHUP};
    int i;
    /* a host with its own choices: a handler on SIGHUP, SIGTERM ignored; SIGINT, SIGPIPE, SIGCHLD
       left at their defaults; SIGUSR2 blocked */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = host_handler;
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = SIG_DFL; /* set here, not inherited: a shell may have started us with SIGINT
                                ignored */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGCHLD, &sa, NULL);
    sigemptyset(&mask_before);
    sigaddset(&mask_before, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &mask_before, NULL);
    pthread_sigmask(SIG_SETMASK, NULL, &mask_before);
    record_signals();
    for (i = 0; i < 5; i++) {
        struct sigaction now;
        sigaction(named[i], NULL, &now);
        CHECK(named[i] == SIGHUP    ? now.sa_handler == host_handler
              : named[i] == SIGTERM ? now.sa_handler == SIG_IGN
                                    : now.sa_handler == SIG_DFL,
              "host set-up of %s", strsignal(named[i]));
    }
    aimux_error_free(aimux_call("aimux.version", "{}", &res));
    aimux_string_free(res);
    compare_signals("after the first call (aimux.version)");
    CHECK(call_text("sig-1", NULL, why, sizeof why), "provider call: %s", why);
    compare_signals("after a provider call");
    h = open_stream("mode=ok;text=abcdef;parts=3", 20000, &code);
    CHECK(code == 0, "stream: %d", code);
    while (next_code(h, &ev) == 0 && ev != NULL) {
        aimux_string_free(ev);
        ev = NULL;
    }
    aimux_stream_free(h);
    CHECK(!call_text("sig-2", "mode=status;status=500", why, sizeof why), "a failing call fails");
    compare_signals("after a stream and a failing call");
    pthread_sigmask(SIG_SETMASK, NULL, &mask_after);
    for (i = 1; i < NSIGS; i++)
        CHECK(sigismember(&mask_before, i) == sigismember(&mask_after, i),
              "the mask of signal %d changed", i);
    for (i = 0; i < 5; i++) {
        struct sigaction now;
        sigaction(named[i], NULL, &now);
        CHECK(now.sa_handler == g_before[named[i]].sa_handler, "%s is the host's",
              strsignal(named[i]));
    }
    /* SIGHUP still reaches the host's handler */
    raise(SIGHUP);
    CHECK(g_host_sigint == 1, "the host's SIGHUP handler ran (%d)", (int)g_host_sigint);
}

/* the child's own SIGINT handler: counts, and tells the parent through fd 3 that it ran */
static void sigint_child_handler(int sig)
{
    (void)sig;
    g_host_sigint++;
    if (write(3, "s", 1) != 1) g_host_sigint += 100;
}

/* The child of `sigint`: a slow call (the server holds it until the parent releases it), with
   (own_handler) or without a SIGINT handler of its own. */
static int sigint_child(int own_handler)
{
    char why[512];
    int ok;
    alarm(60);
    if (own_handler) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = sigint_child_handler;
        sigaction(SIGINT, &sa, NULL);
    }
    if (!call_text("before", NULL, why, sizeof why)) {
        fprintf(stderr, "warm-up: %s\n", why);
        return 3;
    }
    ok = call_text("slow-sigint", own_handler ? "mode=ok;hold=sigint-1" : "mode=ok;hold=sigint-0",
                   why, sizeof why);
    if (!ok) {
        fprintf(stderr, "the call interrupted by SIGINT: %s\n", why);
        return 5;
    }
    if (g_host_sigint != 1) {
        fprintf(stderr, "the host's handler ran %d times\n", (int)g_host_sigint);
        return 6;
    }
    if (!call_text("after", NULL, why, sizeof why)) {
        fprintf(stderr, "next call: %s\n", why);
        return 7;
    }
    return 0;
}

static void sigint_case(int own_handler)
{
    int fds[2], status = 0;
    char port[16], c;
    pid_t pid;
    struct pollfd p;
    CHECK(pipe(fds) == 0, "pipe");
    snprintf(port, sizeof port, "%d", g_port);
    pid = fork();
    if (pid == 0) { /* a fresh host: exec, so nothing of this process is inherited */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL; /* a shell may have started us with SIGINT ignored */
        sigaction(SIGINT, &dfl, NULL);
        dup2(fds[1], 3);
        execl("/proc/self/exe", "test_guest", own_handler ? "sigint-child-handler" : "sigint-child",
              port, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    /* the child is inside its slow call, waiting on the server (which holds it) */
    CHECK(server_wait("held",
                      own_handler ? "mode=ok;hold=sigint-1;text=slow-sigint"
                                  : "mode=ok;hold=sigint-0;text=slow-sigint",
                      1),
          "the child host reached its slow call");
    kill(pid, SIGINT);
    if (own_handler) { /* its handler ran (it says so on fd 3): now let the call complete */
        p.fd = fds[0];
        p.events = POLLIN;
        p.revents = 0;
        CHECK(poll(&p, 1, 30000) == 1 && read(fds[0], &c, 1) == 1 && c == 's',
              "the child's SIGINT handler ran during the call");
        server_release("sigint-1");
    }
    close(fds[0]);
    waitpid(pid, &status, 0);
    if (own_handler)
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "with its own handler: the handler ran and the call completed (status %#x)", status);
    else
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT,
              "without a handler: the host died by SIGINT (status %#x)", status);
}

/* --- pools and limits ---------------------------------------------------------------------- */
static void test_streams200(void)
{
    char why[512], *ev = NULL;
    int i, opened = 0, first = 0;
    int32_t code;
    for (i = 0; i < 200; i++) {
        uint64_t h =
            open_stream("mode=stall;stall_ms=60000;after=1;text=abcdef;parts=3", 90000, &code);
        if (h != 0) {
            opened++;
            if (next_code(h, &ev) == 0 && ev != NULL) first++;
            aimux_string_free(ev);
            ev = NULL;
        } /* never freed */
    }
    CHECK(opened == 200, "200 streams open (%d)", opened);
    CHECK(first == 200, "each delivered its first event (%d)", first);
    CHECK(call_text("after-200", NULL, why, sizeof why), "the next call completes: %s", why);
    stop_server(); /* the server's stalled handlers end with it */
}

struct held_call {
    int ok;        /* the call "succeeded" (it never does: the server drops it) */
    char why[512]; /* what it ended with */
};

static void *held_call_thread(void *arg)
{
    struct held_call *c = arg;
    /* the server holds the request until the test releases it, then drops the connection
       without an answer: one pooled connection taken meanwhile */
    c->ok = call_text("held", "mode=drop;hold=limits", c->why, sizeof c->why);
    return NULL;
}

static void test_limits(void)
{
    char p[1024], *res = NULL, *ev = NULL, *msg;
    uint64_t h[4];
    pthread_t held[4];
    struct held_call held_call[4];
    int i;
    int32_t code;
    aimux_error_t *e;
    /* four calls held by the server fill the host's pool of 4 (streams have pools of their own:
       they never take the calls' connections) */
    for (i = 0; i < 4; i++) pthread_create(&held[i], NULL, held_call_thread, &held_call[i]);
    CHECK(server_wait("held", "mode=drop;hold=limits;text=held", 4),
          "the server holds the four calls");
    /* the fifth connection to that host: the pool is full */
    params(p, sizeof p, "mode=ok;text=fifth", 20000, "");
    e = aimux_call("generate_text", p, &res);
    CHECK(e != NULL && aimux_error_code(e) == 11, "a full pool is an API call error (11), got %d",
          e ? aimux_error_code(e) : 0);
    msg = e ? aimux_error_message(e) : NULL;
    CHECK(msg && strstr(msg, "limit of 4 connections") && strstr(msg, "AIMUX_POOL_MAX_PER_HOST") &&
              strstr(msg, "not sent"),
          "the message names the pool and its limit: %s", msg ? msg : "NULL");
    aimux_string_free(msg);
    aimux_string_free(res);
    aimux_error_free(e);
    server_release("limits");
    for (i = 0; i < 4; i++) {
        pthread_join(held[i], NULL);
        /* each held call had a connection (it reached the server, which dropped it), unlike the
           fifth, which the full pool refused before sending */
        CHECK(!held_call[i].ok && strstr(held_call[i].why, "error 11") &&
                  strstr(held_call[i].why, "disconnected") && !strstr(held_call[i].why, "limit of"),
              "held call %d was sent and ended by the server: %s", i, held_call[i].why);
    }
    /* streams nobody reads: the core closes them after the idle timeout (3 s here) */
    for (i = 0; i < 4; i++) {
        h[i] = open_stream("mode=stall;stall_ms=60000;after=1;text=abcdef;parts=3", 90000, &code);
        CHECK(h[i] != 0, "stream %d opened (code %d)", i, code);
    }
    /* the reaper records each stream's terminal event, then closes its connection: the server
       sees the four clients leave their stalled streams */
    CHECK(server_wait("gone", "mode=stall;stall_ms=60000;after=1;text=abcdef;parts=3", 4),
          "the core closed the four streams nobody read");
    code = next_code(h[0], &ev);
    CHECK(code == 0 && ev && strstr(ev, "\"type\":\"error\"") && strstr(ev, "\"code\":12") &&
              strstr(ev, "without a read"),
          "a reaped stream reads one terminal error event: %s", ev ? ev : "NULL");
    aimux_string_free(ev);
    ev = NULL;
    code = next_code(h[0], &ev);
    CHECK(code == 0 && ev == NULL, "then its end");
    for (i = 0; i < 4; i++) aimux_stream_free(h[i]);
}

/* --- the host's exit ---------------------------------------------------------------------- */
static uint64_t g_exit_stream;
static atomic_int g_worker_stop;
static atomic_long g_worker_calls;
static pthread_t g_worker;

/* A host worker (a thread pool's) calling the library until told to stop. */
static void *exit_worker(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_worker_stop)) {
        char *res = NULL;
        aimux_error_t *e = aimux_call("aimux.version", "{}", &res);
        if (e == NULL && res != NULL) atomic_fetch_add(&g_worker_calls, 1);
        aimux_error_free(e);
        aimux_string_free(res);
    }
    return NULL;
}

/* Takes what the stream has queued until at least `want` events were taken or the stream ended;
   waits for more (10 ms apart, 20 s at most). The number of events taken. */
static int take_events(uint64_t h, int want)
{
    int taken = 0, waits = 0;
    while (taken < want && waits < 2000) {
        char *batch = NULL, *p;
        int32_t ended = 0;
        aimux_error_t *e = aimux_stream_poll(h, 1024, &batch, &ended);
        aimux_error_free(e);
        if (e) break;
        if (batch == NULL) {
            if (ended) break;
            usleep(10 * 1000);
            waits++;
            continue;
        }
        for (p = batch; (p = strstr(p, "\"type\":")) != NULL; p++) taken++;
        aimux_string_free(batch);
        if (ended) break;
    }
    return taken;
}

/* A recorded stream (its request hashed with OpenSSL) read to its end with aimux_stream_next:
   on a core thread (event_driven: a reader thread, or the loop) or on this one. The text deltas
   read. */
static int read_recorded(int event_driven, int32_t *code)
{
    char p[1024], rec[256], extra[320], *ev = NULL;
    aimux_error_t *e;
    int deltas = 0;
    uint64_t h = 0;
    snprintf(rec, sizeof rec, "/tmp/aimux-test-exit-%d-%d.jsonl", (int)getpid(), event_driven);
    snprintf(extra, sizeof extra, ",\"recording\":{\"mode\":\"record\",\"path\":\"%s\"}", rec);
    params(p, sizeof p, "mode=ok;text=abcdef;parts=3", 20000, extra);
    e = event_driven ? aimux_stream_start("stream_text", p, &h)
                     : aimux_stream("stream_text", p, &h);
    *code = e ? aimux_error_code(e) : 0;
    aimux_error_free(e);
    while (*code == 0 && (*code = next_code(h, &ev)) == 0 && ev != NULL) {
        if (strstr(ev, "\"text-delta\"")) deltas++;
        aimux_string_free(ev);
        ev = NULL;
    }
    if (h) aimux_stream_free(h);
    unlink(rec);
    return deltas;
}

/* The host's own exit handler, registered before the library was loaded: it runs after every
   exit handler registered since, OpenSSL's among them when OpenSSL registered one. The library
   still works here: the busy stream (on a core thread) goes on, recorded streams (their
   requests hashed with OpenSSL on a core thread and on this one) read to their end, a worker
   that calls the library goes on until the handler stops and joins it, and a call on this
   thread answers (its thread-local state was destroyed by exit() before any handler ran: the
   call must not need any of the library's). */
static void host_late_exit(void)
{
    char why[512];
    int more, on_core, here, call;
    int32_t code, code2;
    long before = atomic_load(&g_worker_calls), during;
    int waits;
    /* the worker goes on calling while the host exits: its next answered call (not a head start
       against the clock: a loaded machine may not run it for a while; the bound, 30 s, only ends
       a broken run) */
    for (waits = 0; waits < 3000 && atomic_load(&g_worker_calls) == before; waits++)
        usleep(10 * 1000);
    during = atomic_load(&g_worker_calls) - before;
    atomic_store(&g_worker_stop, 1); /* as a pool's destructor does: stop it, join it */
    pthread_join(g_worker, NULL);
    more = take_events(g_exit_stream, 3000);
    aimux_stream_free(g_exit_stream);
    on_core = read_recorded(1, &code);
    here = read_recorded(0, &code2);
    if (code == 0) code = code2;
    call = call_text("late", NULL, why, sizeof why); /* this thread called before exit too */
    printf("worker joined %d, stream went on %d, recorded %d/%d (code %d), call %d (%ld worker "
           "calls, %d events)\n",
           during > 0, more >= 3000, on_core, here, code, call, during, more);
    fflush(stdout);
    if (during <= 0 || more < 3000 || on_core != 3 || here != 3 || code != 0 || !call) _exit(3);
}

/* The child of `exit` (a fresh host, exec'd): reads a fast stream for a while, calls once, and
   returns from main while a core stream thread is busy and a worker calls. */
static int exit_child(void)
{
    char *ev = NULL, why[512];
    int32_t code;
    int i, read = 0;
    alarm(60);
    atexit(host_late_exit); /* before the first aimux call */
    pthread_create(&g_worker, NULL, exit_worker, NULL);
    g_exit_stream = start_stream("mode=chunks;n=500000", 60000, &code); /* on a core thread */
    if (g_exit_stream == 0) {
        fprintf(stderr, "the stream did not open (%d)\n", code);
        return 4;
    }
    for (i = 0; i < 5000; i++) {
        if (next_code(g_exit_stream, &ev) == 0 && ev != NULL) read++;
        aimux_string_free(ev);
        ev = NULL;
    }
    if (read != 5000) {
        fprintf(stderr, "read %d of 5000 events\n", read);
        return 5;
    }
    if (!call_text("before-exit", NULL, why, sizeof why)) { /* a call from this thread */
        fprintf(stderr, "the call before the exit: %s\n", why);
        return 6;
    }
    return 0; /* a core thread is still filling the queue */
}

static void test_exit(void)
{
    int fds[2], status = 0;
    char port[16], out[256] = "";
    ssize_t n, got = 0;
    pid_t pid;
    CHECK(pipe(fds) == 0, "pipe");
    snprintf(port, sizeof port, "%d", g_port);
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl("/proc/self/exe", "test_guest", "exit-child", port, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    while ((n = read(fds[0], out + got, sizeof out - 1 - (size_t)got)) > 0) got += n;
    out[got] = 0;
    close(fds[0]);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the host exited cleanly: %s %d (%s)",
          WIFSIGNALED(status) ? "signal" : "status",
          WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), out);
    CHECK(strstr(out, "worker joined 1, stream went on 1, recorded 3/3 (code 0), call 1") != NULL,
          "in a late exit handler the worker went on until joined, the stream went on, a recorded "
          "stream read to its end and a call answered: %s",
          out);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "exit-child") == 0) { /* internal: run by `exit` */
        g_port = argc > 2 ? atoi(argv[2]) : 0;
        return exit_child();
    }
    if (strncmp(mode, "sigint-child", 12) == 0) { /* internal: run by `sigint` */
        g_port = argc > 2 ? atoi(argv[2]) : 0;
        return sigint_child(strcmp(mode, "sigint-child-handler") == 0);
    }
    if (strcmp(mode, "fork-three-host") == 0) { /* internal: run by `fork-three` */
        g_port = argc > 2 ? atoi(argv[2]) : 0;
        return fork_three_host();
    }
    if (strcmp(mode, "payload-pth-host") == 0) return payload_pth_host(); /* by `payload-pth` */
    if (strcmp(mode, "fork-anytime-host") == 0) { /* internal: run by `fork-anytime` */
        g_port = argc > 2 ? atoi(argv[2]) : 0;
        return fork_anytime_host(argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 1u);
    }
    if (argc < 3) {
        fprintf(
            stderr,
            "usage: test_guest "
            "fork-warm|fork-busy|fork-unknown|fork-three|fork-anytime|signals|sigint|streams200|"
            "limits|exit PYTHON\n");
        return 2;
    }
    alarm(strcmp(mode, "fork-anytime") == 0 ? 900 : 180);
    if (strcmp(mode, "limits") == 0) {
        setenv("AIMUX_POOL_MAX_PER_HOST", "4", 1);
        setenv("AIMUX_POOL_TIMEOUT_MS", "300", 1);
        setenv("AIMUX_STREAM_IDLE_TIMEOUT_MS", "3000", 1);
    }
    if (start_server(argv[2]) != 0) return 1;
    if (strcmp(mode, "fork-warm") == 0)
        test_fork_warm();
    else if (strcmp(mode, "fork-busy") == 0)
        test_fork_busy();
    else if (strcmp(mode, "fork-unknown") == 0)
        test_fork_unknown();
    else if (strcmp(mode, "fork-three") == 0)
        test_fork_three();
    else if (strcmp(mode, "fork-anytime") == 0)
        test_fork_anytime();
    else if (strcmp(mode, "payload-pth") == 0)
        test_payload_pth(argv[2]);
    else if (strcmp(mode, "signals") == 0)
        test_signals();
    else if (strcmp(mode, "sigint") == 0) {
        sigint_case(0);
        sigint_case(1);
    } else if (strcmp(mode, "streams200") == 0)
        test_streams200();
    else if (strcmp(mode, "limits") == 0)
        test_limits();
    else if (strcmp(mode, "exit") == 0)
        test_exit();
    else {
        fprintf(stderr, "unknown mode %s\n", mode);
        stop_server();
        return 2;
    }
    stop_server();
    printf("test_guest %s: %d passed, %d failed\n", mode, atomic_load(&g_pass),
           atomic_load(&g_fail));
    return atomic_load(&g_fail) ? 1 : 0;
}
