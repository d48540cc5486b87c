// decode-chain for the C++ binding: reads one envelope JSON on stdin, decodes it with
// aimux::decode (libaimux's aimux_error_from_json), walks the native cause chain with
// NativeError::cause() and prints [{"kind","code","name","message"}, ...] (DESIGN.md).
// --lines: long-lived, one envelope per stdin line, one answer line each:
// {"chain": [...], "root": {"retryable", "retryAfterMs"}} or {"rejected": {"code", "message"}}.
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "aimux.hpp"

static void json_string(std::ostream &o, const std::string &s)
{
    static const char hex[] = "0123456789abcdef";
    o << '"';
    for (unsigned char c : s) {
        switch (c) {
        case '"': o << "\\\""; break;
        case '\\': o << "\\\\"; break;
        case '\n': o << "\\n"; break;
        case '\r': o << "\\r"; break;
        case '\t': o << "\\t"; break;
        default:
            if (c < 0x20)
                o << "\\u00" << hex[c >> 4] << hex[c & 15];
            else
                o << static_cast<char>(c);
        }
    }
    o << '"';
}

static std::string chain_json(const aimux::NativeError &root)
{
    std::ostringstream out;
    out << '[';
    bool first = true;
    for (std::optional<aimux::NativeError> e = root; e; e = e->cause()) {
        if (!first) out << ',';
        first = false;
        out << "{\"kind\":";
        json_string(out, e->kind());
        out << ",\"code\":" << e->code() << ",\"name\":";
        if (auto n = e->name())
            json_string(out, *n);
        else
            out << "null";
        out << ",\"message\":";
        json_string(out, e->message());
        out << '}';
    }
    out << ']';
    return out.str();
}

// The long-lived mode's answer for one envelope (DESIGN.md "decode-chain").
static std::string answer(const std::string &envelope)
{
    std::ostringstream out;
    try {
        aimux::NativeError root = aimux::decode(envelope);
        out << "{\"chain\":" << chain_json(root)
            << ",\"root\":{\"retryable\":" << (root.retryable() ? "true" : "false")
            << ",\"retryAfterMs\":";
        if (auto ms = root.retry_after_ms())
            out << *ms;
        else
            out << "null";
        out << "}}";
    } catch (const aimux::NativeError &e) {
        out << "{\"rejected\":{\"code\":" << e.code() << ",\"message\":";
        json_string(out, e.message());
        out << "}}";
    }
    return out.str();
}

int main(int argc, char **argv)
{
    if (argc == 2 && std::string(argv[1]) == "--lines") {
        // One envelope per line, one answer line each, on one process.
        for (std::string line; std::getline(std::cin, line);) {
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            std::cout << answer(line) << '\n' << std::flush;
        }
        return 0;
    }
    if (argc > 1) {
        std::cerr << "usage: decode-chain [--lines]\n";
        return 2;
    }
    std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    try {
        std::cout << chain_json(aimux::decode(input)) << "\n";
        return 0;
    } catch (const aimux::NativeError &e) {
        std::cerr << "decode-chain: cannot decode the envelope: " << e.code() << " " << e.what()
                  << "\n";
        return 1;
    }
}
