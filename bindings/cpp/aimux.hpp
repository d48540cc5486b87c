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

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

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
class Stream
{
  public:
    Stream(const std::string &op, const std::string &params_json)
    {
        detail::check_no_nul(op, params_json, "params_json");
        check(aimux_stream(op.c_str(), params_json.c_str(), &handle_));
    }
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;
    Stream(Stream &&other) noexcept : handle_(std::exchange(other.handle_, 0)) {}
    Stream &operator=(Stream &&other) noexcept
    {
        if (this != &other) {
            reset();
            handle_ = std::exchange(other.handle_, 0);
        }
        return *this;
    }
    ~Stream() { reset(); }

    /// The next event, or nullopt when the stream has ended (or was cancelled).
    std::optional<std::string> next()
    {
        char *event = nullptr;
        check(aimux_stream_next(handle_, &event));
        return detail::take_opt(event);
    }

    /// Cancels the stream (thread-safe): a blocked next() wakes and reports the end.
    void cancel() noexcept
    {
        if (handle_ != 0) aimux_stream_cancel(handle_);
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
    void reset() noexcept
    {
        if (handle_ != 0) aimux_stream_free(std::exchange(handle_, 0));
    }
    std::uint64_t handle_ = 0;
};

}  // namespace aimux

#endif  // AIMUX_HPP
