// A downstream C++ program on an installed libaimux, found with CMake find_package(aimux CONFIG)
// (dist-tests), the day-one program: a replayed generate_text, the same prompt streamed
// (stream_text), then a failing call whose native cause chain must end in ConnectionRefusedError.
// Usage: consumer <recording.jsonl>. Exit status 0 when all three behave.
#include <aimux.hpp>

#include <iostream>
#include <string>

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::cerr << "usage: consumer <recording.jsonl>\n";
        return 2;
    }
    bool ok = true;
    std::cout << "libaimux ABI " << aimux::abi_version() << "\n";
    const std::string replay =
        std::string(R"({"model": {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": )"
                    R"("http://127.0.0.1:1/v1"}, "prompt": "Say hello in one word.", )"
                    R"("recording": {"mode": "replay", "path": ")") +
        argv[1] + "\"}}";
    try {
        std::string r = aimux::call("generate_text", replay);
        if (r.find(R"("text":"Hello!")") != std::string::npos) {
            std::cout << "replay ok: " << r << "\n";
        } else {
            std::cout << "replay FAILED: " << r << "\n";
            ok = false;
        }
    } catch (const aimux::NativeError &e) {
        std::cout << "replay FAILED: " << e.json() << "\n";
        ok = false;
    }
    try {  // the same prompt streamed: text-delta events, then finish
        std::string text, finish;
        for (const std::string &event : aimux::Stream("stream_text", replay)) {
            if (auto err = aimux::event_error(event)) throw *err;
            const std::string key = R"("text":")";
            const auto at = event.find(key);
            if (event.find(R"("type":"text-delta")") != std::string::npos &&
                at != std::string::npos)
                text += event.substr(at + key.size(),
                                     event.find('"', at + key.size()) - at - key.size());
            if (event.find(R"("type":"finish")") != std::string::npos)
                finish = event.find(R"("stop")") != std::string::npos ? "stop" : "?";
        }
        if (text == "Hello!" && finish == "stop") {
            std::cout << "stream ok: text-delta events \"" << text << "\", then finish (" << finish
                      << ")\n";
        } else {
            std::cout << "stream FAILED: text \"" << text << "\", finish \"" << finish << "\"\n";
            ok = false;
        }
    } catch (const aimux::NativeError &e) {
        std::cout << "stream FAILED: " << e.json() << "\n";
        ok = false;
    }
    try {
        aimux::call(
            "generate_text",
            R"({"model": {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": )"
            R"("http://127.0.0.1:1/v1", "apiKey": "sk-test"}, "prompt": "hi", "maxRetries": 0})");
        std::cout << "chain FAILED: unexpected success\n";
        ok = false;
    } catch (const aimux::NativeError &e) {
        std::string last = e.name().value_or("?");
        std::cout << "error " << e.code() << ", native chain: " << last;
        for (auto c = e.cause(); c; c = c->cause()) {
            last = c->name().value_or("?");
            std::cout << " -> " << last;
        }
        std::cout << "\n";
        if (last == "ConnectionRefusedError") {
            std::cout << "chain ok: ends in ConnectionRefusedError\n";
        } else {
            std::cout << "chain FAILED: ends in " << last << "\n";
            ok = false;
        }
    }
    return ok ? 0 : 1;
}
