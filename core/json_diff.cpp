#include "core/json_diff.h"

namespace daemonlet {

bool json_same(const Json& a, const Json& b) {
    if (a.is_object() && b.is_object()) {
        if (a.size() != b.size()) return false;
        for (auto it = a.begin(); it != a.end(); ++it)
            if (!b.contains(it.key()) || !json_same(it.value(), b[it.key()])) return false;
        return true;
    }
    if (a.is_array() && b.is_array()) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!json_same(a[i], b[i])) return false;
        return true;
    }
    return a == b;
}

Json json_merge_diff(const Json& have, const Json& want) {
    Json out = Json::object();
    for (auto it = want.begin(); it != want.end(); ++it) {
        const Json* h = have.is_object() && have.contains(it.key()) ? &have[it.key()] : nullptr;
        if (h && json_same(*h, it.value())) continue;
        if (h && h->is_object() && it.value().is_object()) {
            Json d = json_merge_diff(*h, it.value());
            if (!d.empty()) out[it.key()] = std::move(d);
        } else {
            out[it.key()] = it.value();
        }
    }
    return out;
}

std::string json_text(const Json& o, const char* key) {
    if (!o.is_object()) return {};
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const Json& json_member(const Json& o, const char* key) {
    static const Json null;
    if (!o.is_object()) return null;
    auto it = o.find(key);
    return it != o.end() ? *it : null;
}

}  // namespace daemonlet
