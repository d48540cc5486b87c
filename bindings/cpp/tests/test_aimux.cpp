// GoogleTest suite of the C++ binding (bindings/cpp/aimux.hpp) over the real libaimux.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "aimux.hpp"

#ifndef AIMUX_REPO
#error "compile with -DAIMUX_REPO=\"/path/to/repo\""
#endif

namespace
{

std::string replay_params()
{
    return std::string("{\"model\":{\"provider\":\"openai\",\"modelId\":\"gpt-4o-mini\","
                       "\"baseURL\":\"http://127.0.0.1:1/v1\"},"
                       "\"prompt\":\"Say hello in one "
                       "word.\",\"recording\":{\"mode\":\"replay\",\"path\":\"") +
           AIMUX_REPO "/recordings/demo.jsonl\"}}";
}

const char *kRefused =
    "{\"model\":{\"provider\":\"openai\",\"modelId\":\"gpt-4o-mini\",\"baseURL\":\"http://"
    "127.0.0.1:1/v1\","
    "\"apiKey\":\"sk-test\"},\"prompt\":\"hi\",\"maxRetries\":1,\"retry\":{\"initialDelayMs\":10}}";

template <class F> aimux::NativeError expect_throw(F &&f)
{
    try {
        f();
    } catch (const aimux::NativeError &e) {
        return e;
    }
    ADD_FAILURE() << "expected an aimux::NativeError";
    return aimux::decode("{\"kind\":\"binding\",\"code\":208,\"message\":\"no "
                         "throw\",\"error\":{\"name\":\"InternalError\"},\"retryable\":false}");
}

}  // namespace

static_assert(std::is_base_of_v<std::runtime_error, aimux::NativeError>);
static_assert(!std::is_copy_constructible_v<aimux::Stream>);
static_assert(std::is_move_constructible_v<aimux::Stream>);

TEST(Call, VersionAndManifest)
{
    EXPECT_EQ(aimux::abi_version(), static_cast<std::uint32_t>(AIMUX_ABI_VERSION));
    std::string v = aimux::call("aimux.version");
    EXPECT_NE(v.find("\"abiVersion\":1"), std::string::npos) << v;
    std::string m = aimux::call("aimux.manifest", "{}");
    EXPECT_NE(m.find("\"generate_text\""), std::string::npos);
}

TEST(Call, GenerateTextReplay)
{
    std::string r = aimux::call("generate_text", replay_params());
    EXPECT_NE(r.find("\"text\":\"Hello!\""), std::string::npos) << r;
}

TEST(Errors, UnknownOp)
{
    auto e = expect_throw([] { aimux::call("no.such.op"); });
    EXPECT_EQ(e.code(), aimux::codes::UNKNOWN_OP);
    EXPECT_EQ(e.kind(), "protocol");
    EXPECT_EQ(e.name().value_or(""), "UnknownOpError");
    EXPECT_EQ(e.message(), std::string(e.what()));
    EXPECT_NE(e.message().find("no.such.op"), std::string::npos);
    EXPECT_EQ(e.json().rfind("{\"kind\":\"protocol\",\"code\":300,", 0), 0u) << e.json();
    EXPECT_FALSE(e.is_source());
}

TEST(Errors, CatchAsRuntimeError)
{
    try {
        aimux::call("aimux.version", "{not json");
        FAIL() << "no throw";
    } catch (const std::runtime_error &e) {
        EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
    }
}

TEST(Errors, InvalidParamsCauseIsSourceNode)
{
    auto e = expect_throw([] { aimux::call("aimux.version", "{\"bogus\":1}"); });
    EXPECT_EQ(e.code(), aimux::codes::INVALID_PARAMS);
    auto c = e.cause();
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->code(), 0);
    EXPECT_EQ(c->kind(), "source");
    EXPECT_TRUE(c->is_source());
    EXPECT_EQ(c->name().value_or(""), "pydantic_core.ValidationError");
    EXPECT_FALSE(c->cause().has_value());
}

TEST(Errors, WireErrors)
{
    EXPECT_EQ(expect_throw([] { aimux::call("aimux.\xff", "{}"); }).code(),
              aimux::codes::INVALID_UTF8);
    EXPECT_EQ(expect_throw([] { aimux::call("aimux.version", "nope"); }).code(),
              aimux::codes::INVALID_WIRE_JSON);
    EXPECT_EQ(expect_throw([] { aimux::call("stream_text", replay_params()); }).code(),
              aimux::codes::WRONG_MODE);
}

TEST(Errors, WrongModeNamesTheCppApi)
{
    auto e = expect_throw([] { aimux::call("stream_text", replay_params()); });
    EXPECT_EQ(e.code(), aimux::codes::WRONG_MODE);
    EXPECT_EQ(e.kind(), "protocol");
    EXPECT_EQ(e.name().value_or(""), "WrongModeError");
    EXPECT_EQ(e.message(),
              "op 'stream_text' is a stream op; use aimux::Stream (host tools: aimux::ToolStream)");
    EXPECT_NE(e.json().find("use aimux_stream"), std::string::npos) << e.json();  // the core's
    auto s = expect_throw([] { aimux::Stream st("aimux.version", "{}"); });
    EXPECT_STREQ(s.what(), "op 'aimux.version' is a call op; use aimux::call (host tools: "
                           "aimux::call_with_tools)");
}

TEST(Errors, ConnectionRefusedChain)
{
    auto e = expect_throw([] { aimux::call("generate_text", kRefused); });
    std::vector<std::string> names;
    std::vector<std::int32_t> codes;
    std::string last;
    for (std::optional<aimux::NativeError> n = e; n; n = n->cause()) {
        names.push_back(n->name().value_or("?"));
        codes.push_back(n->code());
        last = n->message();
    }
    ASSERT_GE(names.size(), 3u);
    EXPECT_EQ(names[0], "AI_RetryError");
    EXPECT_EQ(codes[0], aimux::codes::RETRY);
    EXPECT_FALSE(e.status_code());  // a refused connection has no HTTP status
    EXPECT_EQ(names[1], "AI_APICallError");
    EXPECT_EQ(codes[1], aimux::codes::API_CALL);
    EXPECT_EQ(names.back(), "ConnectionRefusedError");
    EXPECT_EQ(codes.back(), 0);
    EXPECT_NE(last.find("Connection refused"), std::string::npos);
    EXPECT_EQ(e.json().find("sk-test"), std::string::npos);
}

TEST(Errors, CauseOutlivesItsRoot)
{
    std::optional<aimux::NativeError> cause;
    {
        auto e = expect_throw([] { aimux::call("generate_text", kRefused); });
        cause = e.cause();
    }
    ASSERT_TRUE(cause.has_value());
    EXPECT_EQ(cause->code(), aimux::codes::API_CALL);
    EXPECT_EQ(cause->message().rfind("Cannot connect to API: ", 0), 0u) << cause->message();
    EXPECT_EQ(cause->root().code(), aimux::codes::RETRY);
    aimux::NativeError copy = *cause;  // copies share the chain
    cause.reset();
    EXPECT_EQ(copy.code(), aimux::codes::API_CALL);
}

TEST(Check, NullIsSuccessNonNullThrows)
{
    EXPECT_NO_THROW(aimux::check(nullptr));
    char *out = nullptr;
    aimux_error_t *err = aimux_call("nope", "{}", &out);
    ASSERT_NE(err, nullptr);
    try {
        aimux::check(err);  // takes ownership
        FAIL() << "no throw";
    } catch (const aimux::NativeError &e) {
        EXPECT_EQ(e.code(), 300);
        EXPECT_EQ(e.raw(), err);
    }
    EXPECT_EQ(expect_throw([] { aimux::check(aimux_call("aimux.version", "{}", nullptr)); }).code(),
              aimux::codes::NULL_ARGUMENT);
}

TEST(Decode, EnvelopeText)
{
    auto e = aimux::decode("{\"kind\":\"aimux\",\"code\":14,\"message\":\"retry\",\"error\":{"
                           "\"name\":\"AI_RetryError\",\"reason\":"
                           "\"maxRetriesExceeded\",\"errors\":[{\"kind\":\"aimux\",\"code\":11,"
                           "\"message\":\"\\u00e9\",\"error\":{\"name\":"
                           "\"AI_APICallError\"}}]},\"retryable\":true}");
    EXPECT_EQ(e.code(), 14);
    EXPECT_FALSE(e.status_code());
    auto c = e.cause();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->message(), "\xc3\xa9");
    EXPECT_FALSE(c->cause());
    auto with_status = aimux::decode(
        "{\"kind\":\"aimux\",\"code\":14,\"message\":\"retry\",\"error\":{\"name\":"
        "\"AI_RetryError\",\"statusCode\":429,\"errors\":[{\"kind\":\"aimux\",\"code\":11,"
        "\"message\":\"m\",\"error\":{\"name\":\"AI_APICallError\",\"statusCode\":429}}]},"
        "\"retryable\":true}");
    EXPECT_EQ(with_status.status_code(), std::optional<std::int32_t>(429));
    ASSERT_TRUE(with_status.cause());
    EXPECT_EQ(with_status.cause()->status_code(), std::optional<std::int32_t>(429));
    auto bad = expect_throw([] { aimux::decode("[]"); });
    EXPECT_EQ(bad.code(), aimux::codes::INVALID_WIRE_JSON);
    auto unknown = aimux::decode(
        "{\"kind\":\"future\",\"code\":901,\"message\":\"m\",\"error\":{},\"retryable\":false}");
    EXPECT_EQ(unknown.kind(), "future");
    EXPECT_FALSE(unknown.name().has_value());
    EXPECT_EQ(aimux::NativeError::kind_of_code(0), "source");
    EXPECT_EQ(aimux::NativeError::kind_of_code(105), "recording");
}

// Issue 13: the root fields are the envelope's own (the C accessors had none); a root code beyond
// int32 is refused (it decoded to a root with code 0); escaped / duplicate keys read as JSON.
TEST(Decode, RootFieldsAsGivenAndCodeRange)
{
    auto e = aimux::decode(
        "{\"kind\":\"aimux\",\"code\":11,\"message\":\"m\",\"error\":{\"name\":\"AI_APICallError\","
        "\"isRetryable\":false},\"retryable\":true,\"retryAfterMs\":0,\"cause\":{\"message\":\"s\"}"
        "}");
    EXPECT_TRUE(e.retryable());
    ASSERT_TRUE(e.retry_after_ms().has_value());
    EXPECT_EQ(*e.retry_after_ms(), 0);
    ASSERT_TRUE(e.cause());
    EXPECT_FALSE(e.cause()->retryable());
    EXPECT_FALSE(e.cause()->retry_after_ms().has_value());
    auto none = aimux::decode(
        "{\"kind\":\"aimux\",\"code\":1,\"message\":\"m\",\"error\":{},\"retryable\":false}");
    EXPECT_FALSE(none.retryable());
    EXPECT_FALSE(none.retry_after_ms().has_value());
    auto big = expect_throw([] {
        aimux::decode(
            "{\"kind\":\"aimux\",\"code\":4294967307,\"message\":\"m\",\"error\":{\"name\":"
            "\"AI_APICallError\"},\"retryable\":false}");
    });
    EXPECT_EQ(big.code(), aimux::codes::INVALID_WIRE_JSON);
    auto esc = aimux::decode(
        "{\"\\u006bind\":\"aimux\",\"code\":1,\"message\":\"m\",\"error\":{\"name\":\"AI_Old\","
        "\"name\":\"AI_OtherError\"},\"retryable\":false}");
    EXPECT_EQ(esc.kind(), "aimux");
    EXPECT_EQ(esc.name().value_or(""), "AI_OtherError");
}

// Issue 13: a NUL byte cannot cross the C boundary; it was silently truncated here.
TEST(Errors, NulByteIsRefusedNotTruncated)
{
    auto op = expect_throw([] { aimux::call(std::string("aimux.version\0x", 15)); });
    EXPECT_EQ(op.code(), aimux::codes::UNKNOWN_OP);
    EXPECT_EQ(op.name().value_or(""), "UnknownOpError");
    auto params = expect_throw([] { aimux::call("aimux.version", std::string("{}\0junk", 7)); });
    EXPECT_EQ(params.code(), aimux::codes::INVALID_WIRE_JSON);
    auto stream = expect_throw([] { aimux::Stream s(std::string("stream_text\0", 12), "{}"); });
    EXPECT_EQ(stream.code(), aimux::codes::UNKNOWN_OP);
    auto env = expect_throw([] {
        aimux::decode(std::string(
            "{\"kind\":\"aimux\",\"code\":1,\"message\":\"m\",\"error\":{},\"retryable\":false}\0x",
            70));
    });
    EXPECT_EQ(env.code(), aimux::codes::INVALID_WIRE_JSON);
}

TEST(Stream, RangeForOverReplayedEvents)
{
    std::vector<std::string> events;
    std::uint64_t handle = 0;
    {
        aimux::Stream s("stream_text", replay_params());
        handle = s.handle();
        EXPECT_NE(handle, 0u);
        for (const std::string &ev : s) events.push_back(ev);
        EXPECT_FALSE(s.next().has_value());  // stays ended
    }
    ASSERT_EQ(events.size(), 3u);
    EXPECT_NE(events[0].find("\"Hel\""), std::string::npos) << events[0];
    EXPECT_NE(events[1].find("\"lo!\""), std::string::npos) << events[1];
    EXPECT_NE(events[2].find("\"finish\""), std::string::npos) << events[2];
    // the destructor freed the handle: it is stale now
    char *ev = nullptr;
    aimux_error_t *err = aimux_stream_next(handle, &ev);
    ASSERT_NE(err, nullptr);
    EXPECT_EQ(aimux_error_code(err), aimux::codes::INVALID_HANDLE);
    aimux_error_free(err);
}

TEST(Stream, MoveTransfersOwnership)
{
    aimux::Stream a("stream_text", replay_params());
    std::uint64_t h = a.handle();
    aimux::Stream b(std::move(a));
    EXPECT_EQ(a.handle(), 0u);
    EXPECT_EQ(b.handle(), h);
    aimux::Stream c("stream_text", replay_params());
    std::uint64_t hc = c.handle();
    EXPECT_GT(hc, h);  // never reused
    c = std::move(b);  // frees hc
    EXPECT_EQ(c.handle(), h);
    EXPECT_EQ(expect_throw([&] {
                  char *ev = nullptr;
                  aimux::check(aimux_stream_next(hc, &ev));
              }).code(),
              aimux::codes::INVALID_HANDLE);
    int n = 0;
    for (const auto &ev : c) n += !ev.empty();
    EXPECT_EQ(n, 3);
}

TEST(Stream, CancelEndsIteration)
{
    aimux::Stream s("stream_text", replay_params());
    auto first = s.next();
    ASSERT_TRUE(first.has_value());
    s.cancel();
    EXPECT_FALSE(s.next().has_value());
}

TEST(Stream, ErrorEventDecodes)
{
    auto err = aimux::event_error("{\"type\":\"error\",\"error\":{\"kind\":\"aimux\",\"code\":11,"
                                  "\"message\":\"stream broke\","
                                  "\"error\":{\"name\":\"AI_APICallError\",\"statusCode\":500},"
                                  "\"cause\":{\"message\":\"reset\","
                                  "\"type\":\"ConnectionResetError\"},\"retryable\":true}}");
    ASSERT_TRUE(err.has_value());
    EXPECT_EQ(err->code(), aimux::codes::API_CALL);
    EXPECT_EQ(err->message(), "stream broke");
    ASSERT_TRUE(err->cause());
    EXPECT_EQ(err->cause()->name().value_or(""), "ConnectionResetError");
    EXPECT_FALSE(aimux::event_error("{\"type\":\"text-delta\",\"text\":\"x\"}").has_value());
}

TEST(Stream, ErrorsThrow)
{
    EXPECT_EQ(expect_throw([] { aimux::Stream s("aimux.version", "{}"); }).code(),
              aimux::codes::WRONG_MODE);
    EXPECT_EQ(expect_throw([] { aimux::Stream s("stream_text", "{\"model\":1}"); }).code(),
              aimux::codes::INVALID_PARAMS);
}

TEST(Threads, ConcurrentCallsAndErrors)
{
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; t++) {
        threads.emplace_back([&wrong, t] {
            for (int i = 0; i < 250; i++) {
                try {
                    if ((i + t) % 2) {
                        if (aimux::call("aimux.version").find("\"abiVersion\":1") ==
                            std::string::npos)
                            wrong++;
                    } else {
                        aimux::call("nope");
                        wrong++;
                    }
                } catch (const aimux::NativeError &e) {
                    if (e.code() != 300 || e.kind() != "protocol") wrong++;
                }
            }
        });
    }
    for (auto &th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
}
