#include "core/expand.h"

namespace daemonlet {

std::string expand_vars(std::string_view in,
                        const std::function<std::optional<std::string>(const std::string&)>& lookup) {
    std::string out;
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '$' || i + 1 >= in.size()) {
            out += in[i];
            continue;
        }
        char next = in[i + 1];
        if (next == '$') {  // "$$" -> "$"
            out += '$';
            ++i;
        } else if (next == '(') {
            std::size_t close = in.find(')', i + 2);
            if (close == std::string_view::npos) {  // unterminated: kept as written
                out += in.substr(i);
                break;
            }
            std::string name(in.substr(i + 2, close - i - 2));
            auto v = name.empty() ? std::nullopt : lookup(name);
            if (v)
                out += *v;
            else
                out += in.substr(i, close - i + 1);
            i = close;
        } else {
            out += '$';  // a lone "$" is literal
        }
    }
    return out;
}

}  // namespace daemonlet
