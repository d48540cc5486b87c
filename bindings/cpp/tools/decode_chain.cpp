// decode-chain for the C++ binding: reads one envelope JSON on stdin, decodes it with
// aimux::decode (libaimux's aimux_error_from_json), walks the native cause chain with
// NativeError::cause() and prints [{"kind","code","name","message"}, ...] (DESIGN.md).
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "aimux.hpp"

static void json_string(std::ostream &o, const std::string &s) {
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
            if (c < 0x20) o << "\\u00" << hex[c >> 4] << hex[c & 15];
            else o << static_cast<char>(c);
        }
    }
    o << '"';
}

int main() {
    std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    try {
        aimux::NativeError root = aimux::decode(input);
        std::ostringstream out;
        out << '[';
        bool first = true;
        for (std::optional<aimux::NativeError> e = root; e; e = e->cause()) {
            if (!first) out << ',';
            first = false;
            out << "{\"kind\":";
            json_string(out, e->kind());
            out << ",\"code\":" << e->code() << ",\"name\":";
            if (auto n = e->name()) json_string(out, *n);
            else out << "null";
            out << ",\"message\":";
            json_string(out, e->message());
            out << '}';
        }
        out << "]\n";
        std::cout << out.str();
        return 0;
    } catch (const aimux::NativeError &e) {
        std::cerr << "decode-chain: cannot decode the envelope: " << e.code() << " " << e.what() << "\n";
        return 1;
    }
}
