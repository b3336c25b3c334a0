#include "core/cgroup_oom.h"

#include <charconv>

namespace daemonlet {

std::optional<std::uint64_t> oom_kill_count(std::string_view counters) {
    constexpr std::string_view kKey = "oom_kill ";
    std::size_t start = 0;
    while (start < counters.size()) {
        std::size_t end = counters.find('\n', start);
        if (end == std::string_view::npos) end = counters.size();
        std::string_view line = counters.substr(start, end - start);
        start = end + 1;
        if (line.substr(0, kKey.size()) != kKey) continue;
        std::string_view digits = line.substr(kKey.size());
        std::uint64_t value = 0;
        auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.empty()) return std::nullopt;
        return value;
    }
    return std::nullopt;
}

bool ended_by_oom_kill(int exit_code, std::uint64_t oom_kills) { return exit_code != 0 && oom_kills > 0; }

}  // namespace daemonlet
