// aimux.hpp — the header-only C++17 binding of libaimux (native/aimux.h).
//
//   std::string r = aimux::call("generate_text", params_json);     // throws aimux::NativeError
//   for (const std::string& event : aimux::Stream("stream_text", params_json)) {
//       if (auto err = aimux::event_error(event)) throw *err;   // a failure mid-stream
//   }
//   try { ... } catch (const aimux::NativeError& e) {
//       e.code(); e.kind(); e.name(); e.json();
//       for (auto c = e.cause(); c; c = c->cause()) { ... }      // the native cause chain
//   }
//
// Host tools (the multi-step loop): aimux::call_with_tools / aimux::ToolStream, see "host tools"
// below.
//
// Build with -I<repo>/native -I<repo>/bindings/cpp and link -laimux. No JSON library is needed:
// the chain is walked with aimux_error_cause(), and kind / name come from the library.
#ifndef AIMUX_HPP
#define AIMUX_HPP

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <typeinfo>
#include <vector>

#include <cxxabi.h>
#include <pthread.h>

#include "aimux.h"

namespace aimux
{

// The stable error codes, aimux::codes::API_CALL etc., come from aimux.h (the generated
// aimux_codes.h, from the catalogue).

namespace detail
{
struct StringDeleter {
    void operator()(char *s) const noexcept { aimux_string_free(s); }
};
using CString = std::unique_ptr<char, StringDeleter>;

inline std::string take(char *s)
{
    CString owned(s);
    return owned ? std::string(owned.get()) : std::string();
}
inline std::optional<std::string> take_opt(char *s)
{
    CString owned(s);
    if (!owned) return std::nullopt;
    return std::string(owned.get());
}
struct ErrorDeleter {
    void operator()(aimux_error_t *e) const noexcept { aimux_error_free(e); }
};

/// How many forks made this process, counted in each child (a pthread_atfork child handler,
/// registered on the first call): events a Stream holds belong to the process that took them.
inline unsigned fork_generation() noexcept
{
    static std::atomic<unsigned> forks{0};
    static const int registered = pthread_atfork(
        nullptr, nullptr, +[] { forks.fetch_add(1, std::memory_order_relaxed); });
    (void)registered;
    return forks.load(std::memory_order_relaxed);
}

/// In a batch "[e1,e2,...]" (aimux_stream_next_batch), the index of the ',' or ']' that ends the
/// event starting at b[pos]: depth 0, outside strings (the library's own scanner, so an event's
/// bytes are exactly what aimux_stream_next returns).
inline std::size_t event_end(const char *b, std::size_t pos, std::size_t len) noexcept
{
    int depth = 0;
    for (std::size_t i = pos; i < len; i++) {
        char c = b[i];
        if (c == '"') {
            for (i++; i < len && b[i] != '"'; i++)
                if (b[i] == '\\') i++;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) return i;
            depth--;
        } else if (c == ',' && depth == 0) {
            return i;
        }
    }
    return len; /* malformed: the rest (never for the library's arrays) */
}

/// The input iterator of a stream of events (Stream, ToolStream): each step takes `next()`, the
/// end when it answers nothing (range-for over the events).
template <class S> class EventIterator
{
  public:
    using iterator_category = std::input_iterator_tag;
    using value_type = std::string;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string *;
    using reference = const std::string &;

    EventIterator() = default;
    explicit EventIterator(S *s) : stream_(s) { advance(); }
    reference operator*() const { return *current_; }
    pointer operator->() const { return &*current_; }
    EventIterator &operator++()
    {
        advance();
        return *this;
    }
    void operator++(int) { advance(); }
    bool operator==(const EventIterator &o) const { return stream_ == o.stream_; }
    bool operator!=(const EventIterator &o) const { return stream_ != o.stream_; }

  private:
    void advance()
    {
        current_ = stream_->next();
        if (!current_) stream_ = nullptr;
    }
    S *stream_ = nullptr;
    std::optional<std::string> current_;
};

struct StreamTestAccess;  // the binding's tests look at what a Stream holds
}  // namespace detail

/// One node of an aimux error chain, as a C++ exception. The root owns the C chain (shared by
/// every NativeError reached through cause(), so a cause outlives the error it came from).
class NativeError : public std::runtime_error
{
  public:
    /// Takes ownership of a root error returned by the C API (must not be NULL).
    static NativeError adopt(aimux_error_t *err)
    {
        std::shared_ptr<aimux_error_t> root(err, detail::ErrorDeleter{});
        return NativeError(root, err);
    }

    /// As adopt, for an op's failure (aimux_call / aimux_stream): a wrong mode's message names
    /// this header's API, not the C ABI's (the core cannot know its caller); code, kind, name and
    /// json() stay the core's.
    static NativeError adopt_op_error(aimux_error_t *err)
    {
        NativeError e = adopt(err);
        if (e.code() != codes::WRONG_MODE) return e;
        static const std::pair<std::string, std::string> own_api[] = {
            {"; use aimux_call", "; use aimux::call (host tools: aimux::call_with_tools)"},
            {"; use aimux_stream", "; use aimux::Stream (host tools: aimux::ToolStream)"},
        };
        const std::string message = e.what();
        for (const auto &[c_name, own_name] : own_api) {
            if (message.size() >= c_name.size() &&
                message.compare(message.size() - c_name.size(), c_name.size(), c_name) == 0)
                return NativeError(e.root_, e.node_,
                                   message.substr(0, message.size() - c_name.size()) + own_name);
        }
        return e;
    }

    /// The stable code; 0 for a source node (a snapshot of an external exception).
    std::int32_t code() const noexcept { return aimux_error_code(node_); }

    /// "aimux", "recording", "binding", "protocol" (or a kind a newer core sends), or "source".
    /// Falls back to the code range if the library cannot read the node.
    std::string kind() const
    {
        if (auto k = detail::take_opt(aimux_error_kind(node_))) return *k;
        return kind_of_code(code());
    }
    static std::string kind_of_code(std::int32_t code)
    {
        if (code == 0) return "source";
        const char *kind = aimux_code_kind(code);
        return kind != nullptr ? kind : "unknown";
    }

    bool is_source() const { return kind() == "source"; }

    /// error.name of an aimux node (e.g. "AI_APICallError"), the exception type of a source node
    /// (e.g. "ConnectionRefusedError"); nullopt when the node has none.
    std::optional<std::string> name() const { return detail::take_opt(aimux_error_name(node_)); }

    /// The decoded root's own `retryable`, as the envelope gives it (never recomputed, CONTRACT
    /// §4); false for a cause node.
    bool retryable() const noexcept { return aimux_error_retryable(node_) != 0; }

    /// The decoded root's own `retryAfterMs` (>= 0; 0 means "retry now") as the envelope gives
    /// it; nullopt when it has none, and for a cause node.
    std::optional<std::int64_t> retry_after_ms() const noexcept
    {
        std::int64_t ms = aimux_error_retry_after_ms(node_);
        if (ms < 0) return std::nullopt;
        return ms;
    }

    /// The node's HTTP status (`error.statusCode`, e.g. 429); an AI_RetryError's is its last
    /// attempt's. nullopt when it has none (a refused connection, a source node).
    std::optional<std::int32_t> status_code() const noexcept
    {
        std::int32_t status = aimux_error_status_code(node_);
        if (status == 0) return std::nullopt;
        return status;
    }

    /// The display message (also what()).
    std::string message() const { return what(); }

    /// The JSON of this node: the whole envelope for a root, the node's JSON below it.
    std::string json() const { return detail::take(aimux_error_json(node_)); }

    /// The next link of the native cause chain (a node's cause; for an AI_RetryError its last
    /// attempt), or nullopt at the end.
    std::optional<NativeError> cause() const
    {
        const aimux_error_t *next = aimux_error_cause(node_);
        if (next == nullptr) return std::nullopt;
        return NativeError(root_, next);
    }

    /// The root of the chain this node belongs to.
    NativeError root() const { return NativeError(root_, root_.get()); }

    /// The underlying C node (borrowed; valid as long as any NativeError of this chain lives).
    const aimux_error_t *raw() const noexcept { return node_; }

  private:
    NativeError(std::shared_ptr<aimux_error_t> root, const aimux_error_t *node)
        : std::runtime_error(message_of(node)), root_(std::move(root)), node_(node)
    {
    }
    NativeError(std::shared_ptr<aimux_error_t> root, const aimux_error_t *node,
                const std::string &message)
        : std::runtime_error(message), root_(std::move(root)), node_(node)
    {
    }
    static std::string message_of(const aimux_error_t *node)
    {
        return detail::take(aimux_error_message(node));
    }

    std::shared_ptr<aimux_error_t> root_;
    const aimux_error_t *node_;
};

/// Throws the error as a NativeError (taking ownership) when it is not NULL.
inline void check(aimux_error_t *err)
{
    if (err != nullptr) throw NativeError::adopt(err);
}

/// Decodes an envelope given as JSON text into its NativeError (with its cause chain). Throws a
/// NativeError (202 / 201) when the text is not an envelope (a NUL byte inside it included).
inline NativeError decode(const std::string &envelope_json);

namespace detail
{
/// The envelope JSON text of an error the binding raises itself: code, kind (the code→kind rule)
/// and error.name from the generated catalogue (aimux_codes.h). message and extra_members are
/// JSON-safe text written by this header (no quote or control character to escape).
inline std::string local_envelope(int32_t code, const std::string &message, const char *name,
                                  const std::string &extra_members)
{
    return std::string("{\"kind\":\"") + aimux_code_kind(code) +
           "\",\"code\":" + std::to_string(code) + ",\"message\":\"" + message +
           "\",\"error\":{\"name\":\"" + name + "\"" + extra_members + "},\"retryable\":false}";
}

/// A C string ends at the first NUL: text the library could not see whole is refused as every
/// binding refuses it (CONTRACT §4), 300 for an op name and 202 for params / envelope JSON
/// text, never a silently truncated call.
inline void check_no_nul(const std::string &op, const std::string &json_text, const char *argument)
{
    if (op.find('\0') != std::string::npos)
        throw decode(local_envelope(codes::UNKNOWN_OP,
                                    "unknown op (the name contains a NUL character)",
                                    error_names::UNKNOWN_OP, ""));
    if (json_text.find('\0') != std::string::npos)
        throw decode(local_envelope(
            codes::INVALID_WIRE_JSON,
            std::string(argument) + " is not valid JSON: it contains a NUL character",
            error_names::INVALID_WIRE_JSON, std::string(",\"argument\":\"") + argument + "\""));
}
}  // namespace detail

/// Calls a request/response op; returns the result JSON or throws NativeError.
inline std::string call(const std::string &op, const std::string &params_json = "{}")
{
    detail::check_no_nul(op, params_json, "params_json");
    char *out = nullptr;
    if (aimux_error_t *err = aimux_call(op.c_str(), params_json.c_str(), &out))
        throw NativeError::adopt_op_error(err);
    return detail::take(out);
}

inline NativeError decode(const std::string &envelope_json)
{
    detail::check_no_nul(std::string(), envelope_json, "envelope_json");
    aimux_error_t *decoded = nullptr;
    check(aimux_error_from_json(envelope_json.c_str(), &decoded));
    return NativeError::adopt(decoded);
}

/// For a stream `error` event ({"type":"error","error":<envelope>}, as the core writes it), the
/// decoded NativeError; nullopt for any other event.
inline std::optional<NativeError> event_error(const std::string &event_json)
{
    static const std::string prefix = "{\"type\":\"error\",\"error\":";
    if (event_json.size() < prefix.size() + 2 ||
        event_json.compare(0, prefix.size(), prefix) != 0 || event_json.back() != '}')
        return std::nullopt;
    return decode(event_json.substr(prefix.size(), event_json.size() - prefix.size() - 1));
}

/// The ABI version of the loaded library.
inline std::uint32_t abi_version() noexcept { return aimux_abi_version(); }

/// A stream (RAII: the handle is freed by the destructor). Iterate it with range-for; each event
/// is one JSON string ({"type": "text-delta", ...}, ..., {"type": "error", "error": <envelope>}).
/// next() and iteration throw NativeError for an invalid handle; cancel() may be called from
/// any thread and ends the iteration.
///
/// Events are read in batches (aimux_stream_next_batch: every event the stream has ready, up to
/// batch_events, in one crossing) and handed out one by one, byte for byte what
/// aimux_stream_next gives, in the same order. Events taken and not yet handed out are dropped
/// by cancel() (the next next() reports the end, as aimux_stream_next would) and freed with the
/// stream. While it hands out a batch, next() calls aimux_stream_poll (one event at most, kept
/// in order) whenever touch_interval has passed since its last call into the library, so the
/// core's idle reaper (AIMUX_STREAM_IDLE_TIMEOUT_MS) sees a consumer that keeps calling next()
/// as read, as it does one that reads each event from the library. In a forked child the held
/// events are dropped: its next() asks the library, which answers 203 for the parent's stream.
class Stream
{
  public:
    /// At most this many events per crossing (the library's queue bound).
    static constexpr std::size_t batch_events = 1024;
    /// While events are held: a read of the library (aimux_stream_poll) at least this often.
    static constexpr std::chrono::milliseconds touch_interval{100};

    Stream(const std::string &op, const std::string &params_json)
    {
        detail::check_no_nul(op, params_json, "params_json");
        if (aimux_error_t *err = aimux_stream(op.c_str(), params_json.c_str(), &handle_))
            throw NativeError::adopt_op_error(err);
    }
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;
    Stream(Stream &&other) noexcept { take_from(other); }
    Stream &operator=(Stream &&other) noexcept
    {
        if (this != &other) {
            reset();
            take_from(other);
        }
        return *this;
    }
    ~Stream() { reset(); }

    /// The next event, or nullopt when the stream has ended (or was cancelled).
    std::optional<std::string> next()
    {
        if (cancelled_.load(std::memory_order_acquire)) drop_held();
        if (holding() && held_by_ != detail::fork_generation()) {  // a forked child: not ours
            drop_held();
            ended_ = false;
        }
        if (holding()) {
            auto now = std::chrono::steady_clock::now();
            if (now - last_read_ >= touch_interval) touch(now);
            if (holding()) return take_held();
        }
        if (ended_) return std::nullopt;
        char *batch = nullptr;
        std::int32_t ended = AIMUX_STREAM_OPEN;
        aimux_error_t *err = aimux_stream_next_batch(handle_, batch_events, &batch, &ended);
        last_read_ = std::chrono::steady_clock::now();
        if (err != nullptr) {
            aimux_string_free(batch);  // NULL per the ABI; freed should a library ever set both
            throw NativeError::adopt(err);
        }
        if (batch == nullptr) return std::nullopt;  // the end
        batch_.reset(batch);
        batch_len_ = std::strlen(batch);
        batch_pos_ = 1;
        held_by_ = detail::fork_generation();
        ended_ = ended == AIMUX_STREAM_ENDED;
        if (cancelled_.load(std::memory_order_acquire)) {  // a cancel that came meanwhile
            drop_held();
            return next();
        }
        return take_held();
    }

    /// Cancels the stream (thread-safe): a blocked next() wakes and reports the end; events
    /// already taken from the library and not handed out yet are dropped.
    void cancel() noexcept
    {
        if (handle_ != 0) {
            cancelled_.store(true, std::memory_order_release);
            aimux_stream_cancel(handle_);
        }
    }

    std::uint64_t handle() const noexcept { return handle_; }

    using iterator = detail::EventIterator<Stream>;

    iterator begin() { return iterator(this); }
    iterator end() { return iterator(); }

  private:
    friend struct detail::StreamTestAccess;

    bool holding() const noexcept { return batch_ != nullptr || !polled_.empty(); }

    /// The next held event: the rest of the batch first, then what touch() took after it.
    std::string take_held()
    {
        if (batch_ != nullptr) {
            const char *b = batch_.get();
            std::size_t end = detail::event_end(b, batch_pos_, batch_len_);
            std::string ev(b + batch_pos_, end - batch_pos_);
            batch_pos_ = end + 1;
            if (batch_pos_ >= batch_len_) batch_.reset();
            return ev;
        }
        std::string ev = std::move(polled_.front());
        polled_.pop_front();
        return ev;
    }

    /// A read of the library while events are held (aimux_stream_poll, one event at most, never
    /// blocks): the core's reaper counts it. Its event goes after the held ones; its error (the
    /// stream is then over) is thrown now, as the next per-event read would have thrown it.
    void touch(std::chrono::steady_clock::time_point now)
    {
        char *batch = nullptr;
        std::int32_t ended = AIMUX_STREAM_OPEN;
        aimux_error_t *err = aimux_stream_poll(handle_, 1, &batch, &ended);
        last_read_ = now;
        detail::CString owned(batch);
        if (err != nullptr) {
            drop_held();
            throw NativeError::adopt(err);
        }
        if (owned) {
            std::size_t len = std::strlen(owned.get());
            if (len >= 2) polled_.emplace_back(owned.get() + 1, len - 2);  // "[ev]" → ev
        }
        if (ended == AIMUX_STREAM_ENDED) ended_ = true;
    }

    void drop_held() noexcept
    {
        batch_.reset();
        polled_.clear();
    }

    void take_from(Stream &other) noexcept
    {
        handle_ = std::exchange(other.handle_, 0);
        batch_ = std::move(other.batch_);
        batch_len_ = std::exchange(other.batch_len_, 0);
        batch_pos_ = std::exchange(other.batch_pos_, 0);
        polled_ = std::move(other.polled_);
        other.polled_.clear();
        ended_ = std::exchange(other.ended_, false);
        held_by_ = other.held_by_;
        cancelled_.store(other.cancelled_.exchange(false));
        last_read_ = other.last_read_;
    }

    void reset() noexcept
    {
        drop_held();
        ended_ = false;
        cancelled_.store(false);
        if (handle_ != 0) aimux_stream_free(std::exchange(handle_, 0));
    }

    std::uint64_t handle_ = 0;
    detail::CString batch_;           // the batch being handed out ("[e1,e2,...]"), or null
    std::size_t batch_len_ = 0;       // its length
    std::size_t batch_pos_ = 0;       // where its next event starts
    std::deque<std::string> polled_;  // events touch() took, after the batch's
    bool ended_ = false;              // no event follows the held ones
    unsigned held_by_ = 0;            // detail::fork_generation() of the process that took them
    std::atomic<bool> cancelled_{false};
    std::chrono::steady_clock::time_point last_read_{};
};

// ---- host tools (CONTRACT §2.2, seed 001's three layers) ---------------------------------------
//
//   aimux::Tools tools{{"weather", [](const std::string &input_json, const aimux::ToolContext &ctx)
//   {
//       if (unknown_city(input_json)) return aimux::ToolResult::error("no such city");  // the
//       model reads it return aimux::ToolResult::text("sunny"); // a value
//   }}};                                                   // a thrown exception fails the call
//   std::string result = aimux::call_with_tools("generate_text", params_json, tools);
//
// Each call of a host tool runs on a thread of its own (a step's calls run concurrently) and is
// answered through aimux_stream_tool_result; no callback crosses the C ABI. What the tool does
// decides the layer: a returned value → a tool-result the model reads; ToolResult::error /
// error_with_data → a tool-error the model reads and may recover from; a thrown exception → the
// model never sees it, the call fails with AI_ToolExecutionError (22) whose cause chain holds
// the exception's what() and type name (std::throw_with_nested chains followed), and the
// NativeError thrown by call_with_tools nests the very exception (std::rethrow_if_nested).

namespace detail
{
/// `s` as a JSON string literal; bytes that are not UTF-8 become U+FFFD (an answer is UTF-8).
inline std::string json_quote(const std::string &s)
{
    static const char hex[] = "0123456789abcdef";
    std::string out = "\"";
    const auto *b = reinterpret_cast<const unsigned char *>(s.data());
    std::size_t n = s.size();
    for (std::size_t i = 0; i < n;) {
        unsigned char c = b[i];
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            i++;
        } else if (c < 0x20) {
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
            i++;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
            i++;
        } else {
            std::size_t len = c >= 0xf0 && c <= 0xf4  ? 4
                              : c >= 0xe0             ? 3
                              : c >= 0xc2 && c < 0xe0 ? 2
                                                      : 0;
            bool ok = len > 0 && i + len <= n;
            for (std::size_t k = 1; ok && k < len; k++) ok = (b[i + k] & 0xc0) == 0x80;
            if (ok && len == 3) {
                unsigned cp = ((c & 0x0fu) << 12) | ((b[i + 1] & 0x3fu) << 6);
                ok = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
            } else if (ok && len == 4) {
                unsigned cp = ((c & 0x07u) << 18) | ((b[i + 1] & 0x3fu) << 12);
                ok = cp >= 0x10000 && cp <= 0x10ffff;
            }
            if (ok) {
                out.append(s, i, len);
                i += len;
            } else {
                out += "\\ufffd";
                i++;
            }
        }
    }
    return out + "\"";
}

inline std::size_t skip_ws(const std::string &j, std::size_t i)
{
    while (i < j.size() && (j[i] == ' ' || j[i] == '\n' || j[i] == '\r' || j[i] == '\t')) i++;
    return i;
}

/// The end (one past) of the JSON value starting at j[i] (strings and nesting skipped).
inline std::size_t value_end(const std::string &j, std::size_t i)
{
    if (i < j.size() && j[i] == '"') {
        for (i++; i < j.size() && j[i] != '"'; i++)
            if (j[i] == '\\') i++;
        return i + 1;
    }
    int depth = 0;
    for (; i < j.size(); i++) {
        char c = j[i];
        if (c == '"') {
            for (i++; i < j.size() && j[i] != '"'; i++)
                if (j[i] == '\\') i++;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) return i;
            if (--depth == 0) return i + 1;
        } else if (depth == 0 && (c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
            return i;
        }
    }
    return i;
}

/// The value of a JSON string literal (escapes decoded, \u surrogate pairs included).
inline std::string json_unquote(const std::string &raw)
{
    std::string out;
    auto put = [&out](unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xc0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xe0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        } else {
            out += static_cast<char>(0xf0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        }
    };
    auto hex4 = [&raw](std::size_t at) {
        return at + 4 <= raw.size()
                   ? static_cast<unsigned>(std::stoul(raw.substr(at, 4), nullptr, 16))
                   : 0xfffdu;
    };
    for (std::size_t i = 1; i + 1 < raw.size(); i++) {
        char c = raw[i];
        if (c != '\\') {
            out += c;
            continue;
        }
        char e = raw[++i];
        switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
            unsigned cp = hex4(i + 1);
            i += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < raw.size() && raw[i + 1] == '\\' &&
                raw[i + 2] == 'u') {
                unsigned lo = hex4(i + 3);
                if (lo >= 0xdc00 && lo < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    i += 6;
                }
            }
            put(cp);
            break;
        }
        default: out += e; break;  // \" \\ \/
        }
    }
    return out;
}

/// The members of a JSON object as (key, raw value text), in order; empty for anything else.
inline std::vector<std::pair<std::string, std::string>> json_members(const std::string &obj)
{
    std::vector<std::pair<std::string, std::string>> out;
    std::size_t i = skip_ws(obj, 0);
    if (i >= obj.size() || obj[i] != '{') return out;
    i = skip_ws(obj, i + 1);
    while (i < obj.size() && obj[i] == '"') {
        std::size_t kend = value_end(obj, i);
        std::string key = json_unquote(obj.substr(i, kend - i));
        i = skip_ws(obj, kend);
        if (i >= obj.size() || obj[i] != ':') break;
        i = skip_ws(obj, i + 1);
        std::size_t vend = value_end(obj, i);
        out.emplace_back(std::move(key), obj.substr(i, vend - i));
        i = skip_ws(obj, vend);
        if (i < obj.size() && obj[i] == ',') i = skip_ws(obj, i + 1);
    }
    return out;
}

/// The raw value of member `key` of a JSON object, or nullopt.
inline std::optional<std::string> json_member(const std::string &obj, const std::string &key)
{
    for (auto &m : json_members(obj))
        if (m.first == key) return m.second;
    return std::nullopt;
}

inline std::string json_object(const std::vector<std::pair<std::string, std::string>> &members)
{
    std::string out = "{";
    for (std::size_t k = 0; k < members.size(); k++) {
        if (k) out += ',';
        out += json_quote(members[k].first) + ":" + members[k].second;
    }
    return out + "}";
}

inline std::string demangle(const char *name)
{
    int status = 0;
    std::unique_ptr<char, void (*)(void *)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                              std::free);
    return status == 0 && d ? std::string(d.get()) : std::string(name);
}

/// The cause node ({message, type, cause?}) of a thrown exception and its nested ones.
inline std::string failure_node(const std::exception_ptr &thrown, int depth = 1)
{
    std::string node;
    try {
        std::rethrow_exception(thrown);
    } catch (const std::exception &e) {
        node = "{\"message\":" + json_quote(e.what()) +
               ",\"type\":" + json_quote(demangle(typeid(e).name()));
        if (depth < 16) {
            try {
                std::rethrow_if_nested(e);
            } catch (...) {
                node += ",\"cause\":" + failure_node(std::current_exception(), depth + 1);
            }
        }
        return node + "}";
    } catch (...) {
        return "{\"message\":\"an exception that is not a std::exception\",\"type\":\"unknown\"}";
    }
}

/// `params_json` with every tool `names` holds marked as the host's ("execute": true).
template <typename Names> std::string with_tools(const std::string &params_json, const Names &names)
{
    auto top = json_members(params_json);
    if (skip_ws(params_json, 0) >= params_json.size() ||
        params_json[skip_ws(params_json, 0)] != '{')
        throw decode(local_envelope(
            codes::INVALID_WIRE_JSON, "params_json with host tools must be a JSON object",
            error_names::INVALID_WIRE_JSON, ",\"argument\":\"params_json\""));
    std::vector<std::pair<std::string, std::string>> specs;
    bool has_tools = false;
    for (auto &m : top)
        if (m.first == "tools") {
            specs = json_members(m.second);
            has_tools = true;
        }
    for (const auto &entry : names) {
        bool found = false;
        for (auto &spec : specs) {
            if (spec.first != entry.first) continue;
            auto fields = json_members(spec.second);
            fields.emplace_back("execute", "true");  // the last "execute" is the one that counts
            spec.second = json_object(fields);
            found = true;
        }
        if (!found) specs.emplace_back(entry.first, "{\"execute\":true}");
    }
    if (has_tools) {
        for (auto &m : top)
            if (m.first == "tools") m.second = json_object(specs);
    } else {
        top.emplace_back("tools", json_object(specs));
    }
    return json_object(top);
}
}  // namespace detail

/// What a host tool returns: its value (the model reads it) or a tool-level error (the model reads
/// it and may recover). A thrown exception is a framework error instead.
class ToolResult
{
  public:
    /// A value, as JSON text (any JSON value: "42", "{\"a\":1}", "\"text\"").
    static ToolResult output(const std::string &json_value)
    {
        return ToolResult("{\"output\":" + json_value + "}");
    }
    /// A text value (quoted here).
    static ToolResult text(const std::string &value) { return output(detail::json_quote(value)); }
    /// A tool-level error with a message.
    static ToolResult error(const std::string &message)
    {
        return ToolResult("{\"error\":{\"message\":" + detail::json_quote(message) + "}}");
    }
    /// A tool-level error with a message and data (JSON text).
    static ToolResult error_with_data(const std::string &message, const std::string &data_json)
    {
        return ToolResult("{\"error\":{\"message\":" + detail::json_quote(message) +
                          ",\"data\":" + data_json + "}}");
    }
    /// The answer sent to aimux_stream_tool_result.
    const std::string &answer_json() const noexcept { return answer_; }

  private:
    explicit ToolResult(std::string answer) : answer_(std::move(answer)) {}
    std::string answer_;
};

/// What a running call knows of itself: its id and name, and whether its stream was cancelled
/// (a tool that runs long polls cancelled()).
class ToolContext
{
  public:
    ToolContext(std::string id, std::string name,
                std::shared_ptr<const std::atomic<bool>> cancelled)
        : tool_call_id(std::move(id)), tool_name(std::move(name)), cancelled_(std::move(cancelled))
    {
    }
    bool cancelled() const noexcept { return cancelled_->load(std::memory_order_acquire); }
    const std::string tool_call_id;
    const std::string tool_name;

  private:
    std::shared_ptr<const std::atomic<bool>> cancelled_;
};

/// A host tool: the call's input as JSON text → its ToolResult (or a thrown exception).
using Tool = std::function<ToolResult(const std::string &input_json, const ToolContext &ctx)>;
/// Tool name → its host tool.
using Tools = std::map<std::string, Tool>;

/// A stream with host tools: each `tool-call` event of a tool in `tools`, as next() hands it out,
/// runs that tool on a thread of its own and its outcome is answered to the stream. cancel() (any
/// thread) and the destructor cancel the stream and set every running call's cancelled(); the
/// destructor then joins the calls' threads (a tool must return once cancelled).
class ToolStream
{
  public:
    ToolStream(const std::string &op, const std::string &params_json, Tools tools)
        : tools_(std::move(tools)), stream_(op, detail::with_tools(params_json, tools_))
    {
    }
    ToolStream(const ToolStream &) = delete;
    ToolStream &operator=(const ToolStream &) = delete;
    ~ToolStream()
    {
        cancel();
        for (auto &t : threads_)
            if (t.joinable()) t.join();
    }

    /// The next event (a host tool's call started), or nullopt at the end.
    std::optional<std::string> next()
    {
        auto event = stream_.next();
        if (event && event->find("\"tool-call\"") != std::string::npos &&
            detail::json_member(*event, "type").value_or("") == "\"tool-call\"")
            start(*event);
        return event;
    }

    /// Cancels the stream (thread-safe); every running call sees cancelled().
    void cancel() noexcept
    {
        cancelled_->store(true, std::memory_order_release);
        stream_.cancel();
    }

    /// The exception a tool threw for `tool_call_id`, or null.
    std::exception_ptr raised(const std::string &tool_call_id) const
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = raised_.find(tool_call_id);
        return it == raised_.end() ? nullptr : it->second;
    }

    std::uint64_t handle() const noexcept { return stream_.handle(); }

    /// Range-for over the events, as over a Stream.
    using iterator = detail::EventIterator<ToolStream>;

    iterator begin() { return iterator(this); }
    iterator end() { return iterator(); }

  private:
    void start(const std::string &event)
    {
        auto name = detail::json_member(event, "toolName");
        auto id = detail::json_member(event, "toolCallId");
        auto invalid = detail::json_member(event, "invalid");
        if (!name || !id || (invalid && *invalid == "true")) return;
        auto tool = tools_.find(detail::json_unquote(*name));
        if (tool == tools_.end() || !tool->second) return;
        std::string input = detail::json_member(event, "input").value_or("null");
        ToolContext ctx(detail::json_unquote(*id), tool->first, cancelled_);
        threads_.emplace_back([this, fn = tool->second, input = std::move(input),
                               ctx = std::move(ctx)]() {
            std::string answer;
            try {
                answer = fn(input, ctx).answer_json();
            } catch (...) {
                auto thrown = std::current_exception();
                {
                    std::lock_guard<std::mutex> lock(mu_);
                    raised_[ctx.tool_call_id] = thrown;
                }
                answer = "{\"failure\":" + detail::failure_node(thrown) + "}";
            }
            if (cancelled_->load(std::memory_order_acquire))
                return;  // the stream takes no more answers
            // an answer the stream no longer takes (cancelled, freed) is nobody's: dropped
            aimux_error_t *err = aimux_stream_tool_result(stream_.handle(),
                                                          ctx.tool_call_id.c_str(), answer.c_str());
            if (err != nullptr) aimux_error_free(err);
        });
    }

    Tools tools_;
    Stream stream_;
    std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
    std::vector<std::thread> threads_;
    mutable std::mutex mu_;
    std::map<std::string, std::exception_ptr> raised_;
};

/// generate_text with host tools: the loop streamed (stream_text), its result JSON put together as
/// the AI SDK's generateText gives it (text, toolCalls and toolResults of the last step, every
/// step, usage summed). Throws NativeError; a tool's thrown exception is AI_ToolExecutionError
/// thrown with the very exception nested (std::rethrow_if_nested reaches it).
inline std::string call_with_tools(const std::string &op, const std::string &params_json,
                                   const Tools &tools)
{
    if (op != "generate_text")
        throw decode(detail::local_envelope(codes::UNSUPPORTED_FUNCTIONALITY,
                                            "host tools run with generate_text or stream_text",
                                            error_names::UNSUPPORTED_FUNCTIONALITY, ""));
    ToolStream s("stream_text", params_json, tools);
    struct Step {
        std::string text;
        std::vector<std::string> calls, results, errors;
        std::string finish_reason = "null", usage = "null", response = "null";
    };
    auto list = [](const std::vector<std::string> &items) {
        std::string out = "[";
        for (std::size_t k = 0; k < items.size(); k++) out += (k ? "," : "") + items[k];
        return out + "]";
    };
    auto step_json = [&list](const Step &st) {
        return detail::json_object({{"text", detail::json_quote(st.text)},
                                    {"toolCalls", list(st.calls)},
                                    {"toolResults", list(st.results)},
                                    {"toolErrors", list(st.errors)},
                                    {"finishReason", st.finish_reason},
                                    {"usage", st.usage},
                                    {"response", st.response}});
    };
    std::vector<Step> steps;
    Step step;
    while (auto event = s.next()) {
        auto members = detail::json_members(*event);
        auto get = [&members](const char *key) -> std::string {
            for (auto &m : members)
                if (m.first == key) return m.second;
            return "null";
        };
        std::string type = detail::json_unquote(get("type"));
        auto call_of = [&get]() {
            return std::vector<std::pair<std::string, std::string>>{
                {"toolCallId", get("toolCallId")},
                {"toolName", get("toolName")},
                {"input", get("input")}};
        };
        if (type == "text-delta") {
            std::string t = get("text");
            if (t != "null") step.text += detail::json_unquote(t);
        } else if (type == "tool-call") {
            step.calls.push_back(detail::json_object(call_of()));
        } else if (type == "tool-result") {
            auto c = call_of();
            c.emplace_back("output", get("output"));
            step.results.push_back(detail::json_object(c));
        } else if (type == "tool-error") {
            auto c = call_of();
            c.emplace_back("error", get("error"));
            step.errors.push_back(detail::json_object(c));
        } else if (type == "finish-step") {
            step.finish_reason = get("finishReason");
            step.usage = get("usage");
            step.response = get("response");
            steps.push_back(std::move(step));
            step = Step();
        } else if (type == "error") {
            NativeError err = decode(get("error"));
            std::exception_ptr original;
            if (err.code() == codes::TOOL_EXECUTION) {
                auto payload = detail::json_member(get("error"), "error");
                auto id = payload ? detail::json_member(*payload, "toolCallId") : std::nullopt;
                if (id) original = s.raised(detail::json_unquote(*id));
            }
            if (!original) throw err;
            try {
                std::rethrow_exception(original);
            } catch (...) {
                std::throw_with_nested(err);
            }
        } else if (type == "finish") {
            Step last = steps.empty() ? Step() : steps.back();
            std::vector<std::string> step_list;
            for (auto &st : steps) step_list.push_back(step_json(st));
            return detail::json_object({{"text", detail::json_quote(last.text)},
                                        {"finishReason", get("finishReason")},
                                        {"usage", get("usage")},
                                        {"toolCalls", list(last.calls)},
                                        {"toolResults", list(last.results)},
                                        {"response", get("response")},
                                        {"steps", list(step_list)}});
        }
    }
    throw decode(detail::local_envelope(codes::ABORTED, "the call ended before its finish event",
                                        error_names::ABORTED, ""));
}

}  // namespace aimux

#endif  // AIMUX_HPP
