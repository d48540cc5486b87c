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
    check(aimux_call(op.c_str(), params_json.c_str(), &out));
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
        check(aimux_stream(op.c_str(), params_json.c_str(), &handle_));
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

    class iterator
    {
      public:
        using iterator_category = std::input_iterator_tag;
        using value_type = std::string;
        using difference_type = std::ptrdiff_t;
        using pointer = const std::string *;
        using reference = const std::string &;

        iterator() = default;
        explicit iterator(Stream *s) : stream_(s) { advance(); }
        reference operator*() const { return *current_; }
        pointer operator->() const { return &*current_; }
        iterator &operator++()
        {
            advance();
            return *this;
        }
        void operator++(int) { advance(); }
        bool operator==(const iterator &o) const { return stream_ == o.stream_; }
        bool operator!=(const iterator &o) const { return stream_ != o.stream_; }

      private:
        void advance()
        {
            current_ = stream_->next();
            if (!current_) stream_ = nullptr;
        }
        Stream *stream_ = nullptr;
        std::optional<std::string> current_;
    };

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

}  // namespace aimux

#endif  // AIMUX_HPP
