#include "agent/cli/cli.h"
#include "platform/file.h"

namespace daemonlet::agent {

LoadedManifest load_file(const std::string& path) {
    ManifestLimits limits;
    auto data = platform::read_file(path, limits.max_bytes);
    if (!data.ok()) {
        LoadedManifest out;
        // read_file's message already starts with the path.
        out.errors.push_back({path, 0, "", data.error().message.substr(path.size() + 2)});
        return out;
    }
    return load_manifest(data.value(), path, limits);
}

bool wants_help(const std::vector<std::string>& args) {
    for (const auto& a : args)
        if (a == "-h" || a == "--help") return true;
    return false;
}

bool flag_value(const std::vector<std::string>& args, std::size_t& i, const std::string& name,
                std::string& value) {
    const std::string& a = args[i];
    if (a == name) {
        if (i + 1 >= args.size()) return false;
        value = args[++i];
        return true;
    }
    if (a.rfind(name + "=", 0) == 0) {
        value = a.substr(name.size() + 1);
        return true;
    }
    return false;
}

}  // namespace daemonlet::agent
