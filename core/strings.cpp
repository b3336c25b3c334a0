#include "core/strings.h"

namespace daemonlet {

std::string trim(std::string_view s) {
    constexpr std::string_view kSpace = " \t\n\r\f\v";
    const auto first = s.find_first_not_of(kSpace);
    if (first == std::string_view::npos) return {};
    return std::string(s.substr(first, s.find_last_not_of(kSpace) - first + 1));
}

std::string to_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

}  // namespace daemonlet
