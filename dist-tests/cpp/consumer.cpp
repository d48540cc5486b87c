// A downstream C++ program on an installed libaimux, found with CMake find_package(aimux CONFIG)
// (dist-tests): a replayed generate_text, then a failing call whose native cause chain must end in
// ConnectionRefusedError. Usage: consumer <recording.jsonl>. Exit status 0 when both behave.
#include <aimux.hpp>

#include <iostream>
#include <string>

int main(int argc, char **argv) {
    if (argc < 2) { std::cerr << "usage: consumer <recording.jsonl>\n"; return 2; }
    bool ok = true;
    std::cout << "libaimux ABI " << aimux::abi_version() << "\n";
    const std::string replay =
        std::string(R"({"model": {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": )"
                    R"("http://127.0.0.1:1/v1"}, "prompt": "Say hello in one word.", )"
                    R"("recording": {"mode": "replay", "path": ")") + argv[1] + "\"}}";
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
    try {
        aimux::call("generate_text",
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
