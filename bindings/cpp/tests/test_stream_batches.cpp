// aimux::Stream reads batches (aimux_stream_next_batch) and hands out events one by one: the
// same events, byte for byte and in order, as one aimux_stream_next per event, against the
// project's fault-injecting OpenAI-compatible server (tests/fault_server.py on 127.0.0.1). No
// duration is asserted: a test waits on what the server saw (GET /__wait).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "aimux.hpp"

#ifndef AIMUX_REPO
#error "compile with -DAIMUX_REPO=\"/path/to/repo\""
#endif
#ifndef AIMUX_PYTHON
#error "compile with -DAIMUX_PYTHON=\"/path/to/python\" (the venv's: the server needs orjson)"
#endif

namespace aimux::detail
{
/// What a Stream holds: events taken from the library and not handed out yet.
struct StreamTestAccess {
    static std::size_t held(const Stream &s)
    {
        std::size_t n = s.polled_.size();
        if (s.batch_ != nullptr) {
            for (std::size_t pos = s.batch_pos_; pos < s.batch_len_; n++)
                pos = event_end(s.batch_.get(), pos, s.batch_len_) + 1;
        }
        return n;
    }
};
}  // namespace aimux::detail

namespace
{

using aimux::detail::StreamTestAccess;

/// tests/fault_server.py in a child process, for the whole suite.
class FaultServer : public ::testing::Environment
{
  public:
    static inline int port = 0;
    static inline pid_t pid = -1;

    void SetUp() override
    {
        int out[2];
        ASSERT_EQ(pipe(out), 0);
        pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            dup2(out[1], 1);
            close(out[0]);
            close(out[1]);
            execl(AIMUX_PYTHON, AIMUX_PYTHON, AIMUX_REPO "/tests/fault_server.py", "--port", "0",
                  (char *)nullptr);
            _exit(127);
        }
        close(out[1]);
        std::string line;
        char c;
        while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
        close(out[0]);
        auto at = line.find("127.0.0.1:");
        ASSERT_NE(at, std::string::npos) << "fault server did not start: " << line;
        port = std::atoi(line.c_str() + at + 10);
        ASSERT_GT(port, 0) << line;
    }
    void TearDown() override
    {
        if (pid > 0) {
            kill(pid, SIGTERM);
            waitpid(pid, nullptr, 0);
        }
    }
};

const auto *const kServer = ::testing::AddGlobalTestEnvironment(new FaultServer);

/// A plain HTTP/1.0 GET to the fault server: the status code.
int http_get(const std::string &path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(FaultServer::port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
        close(fd);
        return -1;
    }
    std::string resp;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) resp.append(buf, static_cast<size_t>(n));
    close(fd);
    return resp.size() > 12 ? std::atoi(resp.c_str() + 9) : -1;
}

/// Waits (bounded: 60 s, a safety net, not a speed claim) until the server saw `event` for
/// `scenario`; true when it did.
bool server_saw(const std::string &event, const std::string &scenario)
{
    std::string q;
    for (char c : scenario) {
        if (isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') {
            q += c;
        } else {
            char hex[4];
            std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
            q += hex;
        }
    }
    return http_get("/__wait?event=" + event + "&scenario=" + q + "&n=1&timeout_ms=60000") == 200;
}

std::string json_escape(const std::string &s)
{
    std::string o;
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\';
        o += c;
    }
    return o;
}

std::string params(const std::string &spec)
{
    return "{\"model\":{\"provider\":\"openai\",\"modelId\":\"fault:" + json_escape(spec) +
           "\",\"baseURL\":\"http://127.0.0.1:" + std::to_string(FaultServer::port) +
           "/v1\",\"apiKey\":\"sk-test\"},\"prompt\":\"hi\",\"maxRetries\":0}";
}

/// A text of `n` one-character pieces full of what a batch splitter can trip on: , ] } " \ and
/// a two-byte character (no ';' or '=': they separate the server's spec).
std::string tricky_text(std::size_t n)
{
    static const char *const kPieces[] = {",", "]", "}", "\"", "\\", "[", "{", "a", "\xc3\xa9"};
    std::string t;
    for (std::size_t i = 0; i < n; i++) t += kPieces[i % 9];
    return t;
}

/// Every event through aimux::Stream (batches).
std::vector<std::string> batched(const std::string &p)
{
    std::vector<std::string> out;
    aimux::Stream s("stream_text", p);
    for (const std::string &ev : s) out.push_back(ev);
    EXPECT_FALSE(s.next().has_value());  // stays ended
    return out;
}

/// Every event through the C ABI, one aimux_stream_next per event.
std::vector<std::string> per_event(const std::string &p)
{
    std::vector<std::string> out;
    std::uint64_t h = 0;
    aimux::check(aimux_stream("stream_text", p.c_str(), &h));
    for (;;) {
        char *ev = nullptr;
        aimux_error_t *err = aimux_stream_next(h, &ev);
        if (err != nullptr) {
            aimux_stream_free(h);
            throw aimux::NativeError::adopt(err);
        }
        if (ev == nullptr) break;
        out.emplace_back(ev);
        aimux_string_free(ev);
    }
    aimux_stream_free(h);
    return out;
}

/// The events with the response's Date header blanked (two requests a second apart differ there).
std::vector<std::string> undated(std::vector<std::string> events)
{
    static const std::string key = "\"date\":\"";
    for (std::string &ev : events) {
        for (std::size_t at = ev.find(key); at != std::string::npos; at = ev.find(key, at + 1)) {
            std::size_t end = ev.find('"', at + key.size());
            if (end != std::string::npos) ev.erase(at + key.size(), end - at - key.size());
        }
    }
    return events;
}

std::string texts(const std::vector<std::string> &events)
{
    std::string t;
    for (const std::string &ev : events) {
        static const std::string head = "{\"type\":\"text-delta\",\"text\":\"";
        if (ev.compare(0, head.size(), head) != 0) continue;
        for (std::size_t i = head.size(); i + 2 < ev.size(); i++) {  // unescape \" and \\ only
            if (ev[i] == '\\') i++;
            t += ev[i];
        }
    }
    return t;
}

}  // namespace

TEST(StreamBatches, ManyEventsAsPerEventReads)
{
    const std::string text = tricky_text(1500);
    const std::string p = params("mode=ok;parts=1500;text=" + text);
    std::vector<std::string> got = batched(p);
    std::vector<std::string> want = per_event(p);
    ASSERT_EQ(got.size(), 1501u);            // 1,500 deltas and the finish
    EXPECT_EQ(undated(got), undated(want));  // byte for byte, in order
    EXPECT_EQ(texts(got), text);
    EXPECT_EQ(got.back().rfind("{\"type\":\"finish\"", 0), 0u) << got.back();
}

TEST(StreamBatches, MoreThanOneBatchInOrder)
{
    // 5,000 deltas at once, 256 to a server write: batches of many events, more than the 1,024 a
    // crossing takes at most, and more than the core's queue holds
    aimux::Stream s("stream_text", params("mode=chunks;n=5000"));
    std::size_t n = 0, most_held = 0;
    std::string last;
    while (auto ev = s.next()) {
        if (ev->rfind("{\"type\":\"text-delta\"", 0) == 0) {
            ASSERT_EQ(*ev, "{\"type\":\"text-delta\",\"text\":\"w" + std::to_string(n) + " \"}");
            n++;
        }
        most_held = std::max(most_held, StreamTestAccess::held(s));
        last = *ev;
    }
    EXPECT_EQ(n, 5000u);
    EXPECT_EQ(last.rfind("{\"type\":\"finish\"", 0), 0u) << last;
    EXPECT_GT(most_held, 0u);                           // events came several per crossing
    EXPECT_LT(most_held, aimux::Stream::batch_events);  // at most 1,024 per crossing
}

TEST(StreamBatches, ErrorMidStreamAsPerEventReads)
{
    const std::string p = params("mode=errframe;parts=1500;after=1200;text=" + tricky_text(1500));
    std::vector<std::string> got = batched(p);
    std::vector<std::string> want = per_event(p);
    ASSERT_EQ(got.size(), 1201u);  // 1,200 deltas, then the terminal error event
    EXPECT_EQ(undated(got), undated(want));
    auto err = aimux::event_error(got.back());
    ASSERT_TRUE(err.has_value()) << got.back();
    auto want_err = aimux::event_error(want.back());
    ASSERT_TRUE(want_err.has_value());
    EXPECT_EQ(err->code(), aimux::codes::API_CALL);
    // the same chain, node by node
    std::optional<aimux::NativeError> a = *err, b = *want_err;
    for (; a && b; a = a->cause(), b = b->cause()) {
        EXPECT_EQ(undated({a->json()}), undated({b->json()}));
        EXPECT_EQ(a->name(), b->name());
    }
    EXPECT_FALSE(a.has_value());
    EXPECT_FALSE(b.has_value());
}

TEST(StreamBatches, CancelMidBatchDropsHeldEvents)
{
    const std::string spec =
        "mode=stall;parts=600;after=600;stall_ms=60000;text=cancel" + std::string(594, 'c');
    aimux::Stream s("stream_text", params(spec));
    ASSERT_TRUE(server_saw("stall", spec));  // all 600 deltas were sent
    std::size_t n = 0;
    while (StreamTestAccess::held(s) == 0 && n < 600) {
        ASSERT_TRUE(s.next().has_value());
        n++;
    }
    ASSERT_GT(StreamTestAccess::held(s), 0u) << "never more than one event per crossing";
    std::thread([&s] { s.cancel(); }).join();  // from another thread
    EXPECT_FALSE(s.next().has_value());        // the held events are not handed out
    EXPECT_EQ(StreamTestAccess::held(s), 0u);
    EXPECT_FALSE(s.next().has_value());
    EXPECT_TRUE(server_saw("gone", spec));  // the stream's connection was closed
}

TEST(StreamBatches, DestroyedMidBatchIsFreed)
{
    const std::string spec =
        "mode=stall;parts=600;after=600;stall_ms=60000;text=destroy" + std::string(593, 'd');
    std::uint64_t handle = 0;
    {
        aimux::Stream s("stream_text", params(spec));
        handle = s.handle();
        ASSERT_TRUE(server_saw("stall", spec));
        std::size_t n = 0;
        while (StreamTestAccess::held(s) == 0 && n < 600) {
            ASSERT_TRUE(s.next().has_value());
            n++;
        }
        ASSERT_GT(StreamTestAccess::held(s), 0u);
    }  // the destructor frees the handle and the held batch (valgrind / ASan see a leak)
    char *ev = nullptr;
    aimux_error_t *err = aimux_stream_next(handle, &ev);
    ASSERT_NE(err, nullptr);
    EXPECT_EQ(aimux_error_code(err), aimux::codes::INVALID_HANDLE);
    aimux_error_free(err);
    EXPECT_TRUE(server_saw("gone", spec));
}

TEST(StreamBatches, MovedStreamKeepsItsHeldEvents)
{
    const std::string spec = "mode=ok;parts=300;text=" + std::string(300, 'm');
    std::vector<std::string> want = per_event(params(spec));
    aimux::Stream a("stream_text", params(spec));
    std::vector<std::string> got;
    got.push_back(*a.next());
    aimux::Stream b(std::move(a));
    EXPECT_EQ(StreamTestAccess::held(a), 0u);
    EXPECT_THROW(a.next(), aimux::NativeError);  // handle 0: 203, as before
    while (auto ev = b.next()) got.push_back(*ev);
    EXPECT_EQ(undated(got), undated(want));
}

TEST(StreamBatches, CancelWakesABlockedNext)
{
    const std::string spec = "mode=stall;after=1;stall_ms=60000;text=blocked";
    aimux::Stream s("stream_text", params(spec));
    ASSERT_TRUE(s.next().has_value());  // "bl", then the server stalls
    std::thread t([&s, &spec] {
        server_saw("stall", spec);
        s.cancel();
    });
    EXPECT_FALSE(s.next().has_value());  // woken by the cancel: the end
    t.join();
    EXPECT_TRUE(server_saw("gone", spec));
}

/// A forked child gets none of the events its parent's Stream holds: its next() asks the library,
/// which answers 203 for a stream of the parent (as one aimux_stream_next per event would); the
/// parent goes on with them.
TEST(StreamBatches, AForkedChildGetsNoneOfTheParentsHeldEvents)
{
    const std::string spec =
        "mode=stall;parts=40;after=40;stall_ms=60000;text=forked" + std::string(34, 'f');
    aimux::Stream s("stream_text", params(spec));
    std::size_t deltas = 0;
    ASSERT_TRUE(
        server_saw("stall", spec));  // all 40 deltas were sent: the first batch takes what arrived
    while (StreamTestAccess::held(s) == 0 && deltas < 40) {
        auto ev = s.next();
        ASSERT_TRUE(ev.has_value());
        deltas++;
    }
    ASSERT_GT(StreamTestAccess::held(s), 0u) << "no batch held more than one event";
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        int code = 1;  // an event handed out
        try {
            (void)s.next();
        } catch (const aimux::NativeError &e) {
            code = e.code() == 203 ? 0 : 2;
        } catch (...) {
            code = 3;
        }
        _exit(code);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a held event was handed out; 2: not 203";
    while (deltas < 40) {  // the parent keeps its events
        auto ev = s.next();
        ASSERT_TRUE(ev.has_value());
        ASSERT_FALSE(aimux::event_error(*ev).has_value()) << *ev;
        deltas++;
    }
    s.cancel();
}

/// A consumer that keeps calling next() while it works through a held batch is a reader: the
/// core's idle reaper (AIMUX_STREAM_IDLE_TIMEOUT_MS) must not close its stream, as it would not
/// with one read per event. Runs in a child (the limit is read once per process).
TEST(StreamBatches, HeldBatchCountsAsReadsForTheReaper)
{
    if (std::getenv("AIMUX_CPP_REAPER_CHILD") == nullptr) {
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            setenv("AIMUX_CPP_REAPER_CHILD", "1", 1);
            setenv("AIMUX_STREAM_IDLE_TIMEOUT_MS", "1500", 1);
            char self[4096];
            ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
            if (n <= 0) _exit(126);
            self[n] = 0;
            execl(self, self, "--gtest_filter=StreamBatches.HeldBatchCountsAsReadsForTheReaper",
                  "--gtest_brief=1", (char *)nullptr);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed";
        return;
    }
    // the child: 40 deltas, then the server stalls; the consumer takes ~60 ms per event, so it
    // holds a batch for longer than the 1,500 ms limit (it reads at once: the limit counts from
    // the open, and a first read after a wait here would be a real idle time)
    const std::string spec =
        "mode=stall;parts=40;after=40;stall_ms=60000;text=reaper" + std::string(34, 'r');
    aimux::Stream s("stream_text", params(spec));
    std::size_t deltas = 0, most_held = 0;
    while (deltas < 40) {
        auto ev = s.next();
        ASSERT_TRUE(ev.has_value());
        ASSERT_FALSE(aimux::event_error(*ev).has_value())
            << "after " << deltas << " deltas: " << *ev;
        deltas++;
        most_held = std::max(most_held, StreamTestAccess::held(s));
        std::this_thread::sleep_for(std::chrono::milliseconds(60));  // the consumer's work
    }
    EXPECT_GT(most_held, 0u);
    // not reaped: a read now finds the stream open and waiting for the stalled server (a reaped
    // one answers the reaper's terminal error event)
    char *batch = nullptr;
    std::int32_t ended = -1;
    aimux::check(aimux_stream_poll(s.handle(), 1, &batch, &ended));
    EXPECT_EQ(batch, nullptr) << batch;
    EXPECT_EQ(ended, AIMUX_STREAM_OPEN);
    aimux_string_free(batch);
}
