// The call-level shared fixtures (contract-tests/calls/cases.json) through this binding's public
// API, aimux::call / aimux::Stream (JSON text in: params encoded, paramsText as given). The C
// ABI underneath is the same aimux_call / aimux_stream a C program calls. DESIGN.md
// "Call-level fixtures".
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "aimux.hpp"

#ifndef AIMUX_REPO
#error "compile with -DAIMUX_REPO=\"/path/to/repo\""
#endif

namespace
{

using nlohmann::json;

/// want ⊆ got: objects member by member, arrays and scalars exactly.
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

json outcome(const json &c)
{
    const std::string op = c.at("op").get<std::string>();
    const std::string params = c.contains("paramsText")
                                   ? c.at("paramsText").get<std::string>()
                                   : replace_all(c.at("params").dump(), "@REPO@", AIMUX_REPO);
    try {
        if (c.at("api") == "call") return json{{"result", json::parse(aimux::call(op, params))}};
        json events = json::array();
        aimux::Stream s(op, params);
        for (const std::string &e : s) events.push_back(json::parse(e));
        return json{{"events", events}};
    } catch (const aimux::NativeError &e) {
        return json{
            {"error", {{"kind", e.kind()}, {"code", e.code()}, {"name", e.name().value_or("")}}}};
    }
}

}  // namespace

TEST(CallFixtures, EveryCase)
{
    std::ifstream in(AIMUX_REPO "/contract-tests/calls/cases.json");
    ASSERT_TRUE(in) << "contract-tests/calls/cases.json";
    json doc = json::parse(
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
    const json &cases = doc.at("cases");
    ASSERT_GE(cases.size(), 10u);
    for (const json &c : cases) {
        SCOPED_TRACE(c.at("key").get<std::string>());
        json got = outcome(c);
        EXPECT_TRUE(subset(c.at("expect"), got))
            << c.at("description") << "\n want " << c.at("expect").dump() << "\n  got "
            << got.dump();
    }
}
