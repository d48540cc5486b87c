// Host tools in C++'s idiom (aimux::Tools, aimux::ToolStream, aimux::call_with_tools): the loop
// fixtures (contract-tests/calls/loops.json, replayed: a wrong answer to the model finds no
// recorded exchange), and a cancel / a thrown exception against a local HTTP server speaking
// OpenAI's streamed Chat Completions (what it was asked is counted).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <thread>

#include "aimux.hpp"

namespace
{

using nlohmann::json;

bool subset(const json &want, const json &got)
{
    if (want.is_object()) {
        if (!got.is_object()) return false;
        for (auto it = want.begin(); it != want.end(); ++it)
            if (!got.contains(it.key()) || !subset(it.value(), got.at(it.key()))) return false;
        return true;
    }
    if (want.is_array()) {
        if (!got.is_array() || got.size() != want.size()) return false;
        for (size_t i = 0; i < want.size(); i++)
            if (!subset(want[i], got[i])) return false;
        return true;
    }
    return want == got;
}

std::string replace_all(std::string s, const std::string &from, const std::string &to)
{
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
        s.replace(p, from.size(), to);
    return s;
}

const char *const kMissingFile = "/nonexistent/aimux/weather.json";

aimux::Tool loop_tool(const std::string &behaviour)
{
    auto oslo = std::make_shared<std::promise<void>>();
    auto oslo_started = std::make_shared<std::shared_future<void>>(oslo->get_future().share());
    return
        [behaviour, oslo, oslo_started](const std::string &input_json, const aimux::ToolContext &) {
            std::string city = json::parse(input_json).at("city").get<std::string>();
            if (behaviour == "value") return aimux::ToolResult::text("sunny in " + city);
            if (behaviour == "tool-error")
                return aimux::ToolResult::error("no weather for " + city);
            if (behaviour == "tool-error-data")
                return aimux::ToolResult::error_with_data("no weather for " + city,
                                                          json{{"city", city}}.dump());
            if (behaviour == "raise-io") {
                auto size = std::filesystem::file_size(kMissingFile);  // throws filesystem_error
                return aimux::ToolResult::output(std::to_string(size));
            }
            if (behaviour == "raise") throw std::runtime_error("weather service down");
            if (behaviour == "value-paired") {
                if (city == "Oslo") {
                    oslo->set_value();
                } else if (oslo_started->wait_for(std::chrono::seconds(30)) !=
                           std::future_status::ready) {
                    throw std::runtime_error("the Oslo call never started: calls ran one by one");
                }
                return aimux::ToolResult::text("sunny in " + city);
            }
            throw std::invalid_argument("unknown behaviour " + behaviour);
        };
}

json loop_outcome(const json &c)
{
    const std::string op = c.at("op").get<std::string>();
    const std::string params = replace_all(c.at("params").dump(), "@REPO@", AIMUX_REPO);
    aimux::Tools tools;
    for (auto it = c.at("tools").begin(); it != c.at("tools").end(); ++it)
        tools[it.key()] = loop_tool(it.value().get<std::string>());
    try {
        if (c.at("api") == "call")
            return json{{"result", json::parse(aimux::call_with_tools(op, params, tools))}};
        json events = json::array();
        aimux::ToolStream s(op, params, tools);
        for (const std::string &e : s) events.push_back(json::parse(e));
        return json{{"events", events}};
    } catch (const aimux::NativeError &e) {
        if (c.at("tools").value("weather", "") == "raise-io") {
            // the very exception std::filesystem threw, nested in the NativeError
            bool reached = false;
            try {
                std::rethrow_if_nested(e);
            } catch (const std::filesystem::filesystem_error &io) {
                reached =
                    io.path1() == kMissingFile && io.code() == std::errc::no_such_file_or_directory;
            } catch (...) {
            }
            EXPECT_TRUE(reached) << "the NativeError does not nest the filesystem_error";
            auto source = e.cause();
            EXPECT_TRUE(source && source->is_source());
            if (source) {
                EXPECT_EQ(source->name().value_or(""),
                          "std::filesystem::__cxx11::filesystem_error");
            }
        }
        return json{
            {"error", {{"kind", e.kind()}, {"code", e.code()}, {"name", e.name().value_or("")}}}};
    }
}

/// A server on 127.0.0.1 whose every answer is one streamed call of `weather` (t1, Paris).
class ToolCallServer
{
  public:
    ToolCallServer()
    {
        fd_ = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bind(fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
        listen(fd_, 16);
        socklen_t len = sizeof addr;
        getsockname(fd_, reinterpret_cast<sockaddr *>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~ToolCallServer()
    {
        shutdown(fd_, SHUT_RDWR);
        close(fd_);
        thread_.join();
    }
    int requests() const { return requests_.load(); }
    std::string params() const
    {
        return R"({"model":{"provider":"openai","modelId":"m","baseURL":"http://127.0.0.1:)" +
               std::to_string(port_) +
               R"(/v1","apiKey":"k"},"prompt":"What is the weather?","tools":{"weather":{"description":"The weather.",)"
               R"("inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}}},"stopWhen":{"stepCount":5},)"
               R"("maxRetries":0})";
    }

  private:
    void serve()
    {
        for (;;) {
            int c = accept(fd_, nullptr, nullptr);
            if (c < 0) return;
            std::string req;
            char buf[4096];
            std::size_t want = std::string::npos;
            while (want == std::string::npos || req.size() < want) {
                ssize_t n = read(c, buf, sizeof buf);
                if (n <= 0) break;
                req.append(buf, static_cast<std::size_t>(n));
                auto head = req.find("\r\n\r\n");
                if (want == std::string::npos && head != std::string::npos) {
                    auto cl = req.find("content-length: ");
                    if (cl == std::string::npos) cl = req.find("Content-Length: ");
                    want =
                        head + 4 + (cl == std::string::npos ? 0 : std::stoul(req.substr(cl + 16)));
                }
            }
            requests_++;
            std::string body = "data: "
                               "{\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":"
                               "{\"role\":\"assistant\"}}]}\n\n"
                               "data: "
                               "{\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":"
                               "[{\"index\":0,\"id\":\"t1\","
                               "\"type\":\"function\",\"function\":{\"name\":\"weather\","
                               "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]}}]}\n\n"
                               "data: "
                               "{\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_"
                               "reason\":\"tool_calls\"}]}\n\n"
                               "data: "
                               "{\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,"
                               "\"completion_tokens\":5}}\n\n"
                               "data: [DONE]\n\n";
            std::string resp =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: " +
                std::to_string(body.size()) + "\r\nconnection: close\r\n\r\n" + body;
            (void)!write(c, resp.data(), resp.size());
            close(c);
        }
    }
    int fd_ = -1;
    int port_ = 0;
    std::atomic<int> requests_{0};
    std::thread thread_;
};

}  // namespace

TEST(LoopFixtures, EveryCase)
{
    std::ifstream in(AIMUX_REPO "/contract-tests/calls/loops.json");
    ASSERT_TRUE(in) << "contract-tests/calls/loops.json";
    json doc = json::parse(
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
    const json &cases = doc.at("cases");
    ASSERT_GE(cases.size(), 14u);
    for (const json &c : cases) {
        SCOPED_TRACE(c.at("key").get<std::string>());
        json got = loop_outcome(c);
        EXPECT_TRUE(subset(c.at("expect"), got))
            << c.at("description") << "\n want " << c.at("expect").dump() << "\n  got "
            << got.dump();
    }
}

TEST(HostTools, CancelWhileAToolRunsEndsTheStreamAndTheToolSeesIt)
{
    ToolCallServer server;
    std::promise<void> started;
    std::atomic<bool> saw_cancel{false};
    {
        aimux::ToolStream s("stream_text", server.params(),
                            {{"weather", [&](const std::string &, const aimux::ToolContext &ctx) {
                                  started.set_value();
                                  while (!ctx.cancelled())
                                      std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                  saw_cancel = true;
                                  return aimux::ToolResult::text("too late");  // dropped
                              }}});
        std::thread canceller([&] {
            started.get_future().wait();
            s.cancel();
        });
        int after_call = 0;
        bool saw_call = false;
        while (auto e = s.next()) {
            if (saw_call) after_call++;
            if (e->find("\"tool-call\"") != std::string::npos) saw_call = true;
        }
        canceller.join();
        EXPECT_TRUE(saw_call);
        EXPECT_EQ(after_call, 0);
    }  // the destructor joins the tool's thread
    EXPECT_TRUE(saw_cancel.load());
    EXPECT_EQ(server.requests(), 1);
}

TEST(HostTools, AThrownExceptionIsAToolExecutionErrorNestingIt)
{
    ToolCallServer server;
    struct QuotaError : std::runtime_error {
        using std::runtime_error::runtime_error;
    };
    try {
        aimux::call_with_tools(
            "generate_text", server.params(),
            {{"weather", [](const std::string &, const aimux::ToolContext &) -> aimux::ToolResult {
                  try {
                      throw QuotaError("disk quota exceeded");
                  } catch (...) {
                      std::throw_with_nested(std::runtime_error("cannot save the forecast"));
                  }
              }}});
        FAIL() << "no exception";
    } catch (const aimux::NativeError &e) {
        EXPECT_EQ(e.code(), aimux::codes::TOOL_EXECUTION);
        EXPECT_NE(std::string(e.what()).find("cannot save the forecast"), std::string::npos)
            << e.what();
        // the chain the core kept: the exception, then the one it nests
        auto first = e.cause();
        ASSERT_TRUE(first && first->is_source());
        EXPECT_EQ(first->message(), "cannot save the forecast");
        auto second = first->cause();
        ASSERT_TRUE(second);
        EXPECT_EQ(second->message(), "disk quota exceeded");
        EXPECT_NE(second->name().value_or("").find("QuotaError"), std::string::npos)
            << second->name().value_or("");
        // and the very exception, nested
        bool reached = false;
        try {
            std::rethrow_if_nested(e);
        } catch (const std::runtime_error &original) {
            try {
                std::rethrow_if_nested(original);
            } catch (const QuotaError &) {
                reached = true;
            }
        }
        EXPECT_TRUE(reached);
    }
    EXPECT_EQ(server.requests(), 1);
}

TEST(HostTools, JsonHelpers)
{
    using aimux::detail::json_member;
    using aimux::detail::json_quote;
    using aimux::detail::json_unquote;
    EXPECT_EQ(json_quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\u000a\\u0001\"");
    EXPECT_EQ(json_quote("caf\xc3\xa9 \xff"), "\"caf\xc3\xa9 \\ufffd\"");
    EXPECT_EQ(json_unquote("\"a\\\"\\u00e9\\ud83d\\ude00\""), "a\"\xc3\xa9\xf0\x9f\x98\x80");
    EXPECT_EQ(json_member(R"({"a": [1, {"b": "}"}], "type" : "x"})", "type").value_or(""), "\"x\"");
    EXPECT_EQ(json_member(R"({"a":true,"b":null})", "a").value_or(""), "true");
    EXPECT_EQ(aimux::detail::with_tools(R"({"prompt":"hi","tools":{"w":{"description":"d"}}})",
                                        aimux::Tools{{"w", nullptr}}),
              R"({"prompt":"hi","tools":{"w":{"description":"d","execute":true}}})");
    EXPECT_EQ(aimux::detail::with_tools("{}", aimux::Tools{{"w", nullptr}}),
              R"({"tools":{"w":{"execute":true}}})");
    EXPECT_EQ(aimux::ToolResult::error_with_data("no city", R"({"n":1})").answer_json(),
              R"({"error":{"message":"no city","data":{"n":1}}})");
    EXPECT_THROW(aimux::detail::with_tools("[1]", aimux::Tools{}), aimux::NativeError);
    EXPECT_THROW(aimux::call_with_tools("generate_object", "{}", aimux::Tools{}),
                 aimux::NativeError);
}
