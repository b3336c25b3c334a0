#include "core/template_hash.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace daemonlet {
namespace {

void write_canonical(const Json& v, std::string& out) {
    if (v.is_object()) {
        std::vector<std::pair<const std::string*, const Json*>> items;
        items.reserve(v.size());
        for (auto it = v.begin(); it != v.end(); ++it) items.emplace_back(&it.key(), &it.value());
        std::sort(items.begin(), items.end(),
                  [](const auto& a, const auto& b) { return *a.first < *b.first; });
        out += '{';
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (i) out += ',';
            out += Json(*items[i].first).dump();
            out += ':';
            write_canonical(*items[i].second, out);
        }
        out += '}';
    } else if (v.is_array()) {
        out += '[';
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (i) out += ',';
            write_canonical(v[i], out);
        }
        out += ']';
    } else {
        out += v.dump(-1, ' ', false, Json::error_handler_t::replace);
    }
}

// k8s.io/apimachinery/pkg/util/rand SafeEncodeString: each byte of the
// decimal hash mapped into an alphabet without vowels and look-alikes.
std::string safe_encode(const std::string& s) {
    static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
    std::string out(s.size(), ' ');
    for (std::size_t i = 0; i < s.size(); ++i)
        out[i] = kAlphabet[static_cast<unsigned char>(s[i]) % kAlphabet.size()];
    return out;
}

}  // namespace

std::string canonical_json(const Json& v) {
    std::string out;
    write_canonical(v, out);
    return out;
}

std::uint64_t fnv1a64(std::string_view data) {
    std::uint64_t h = 14695981039346656037ULL;
    for (unsigned char c : data) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

std::string hex64(std::uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string template_hash(const Json& pod_template, std::optional<std::int32_t> collision_count) {
    std::string canon = canonical_json(pod_template);
    if (collision_count) {
        // Upstream writes the collision count into the hasher after the template.
        canon += '#';
        canon += std::to_string(*collision_count);
    }
    return safe_encode(std::to_string(fnv1a64(canon)));
}

}  // namespace daemonlet
