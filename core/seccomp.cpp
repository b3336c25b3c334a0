// Seccomp profiles to linux.seccomp: see seccomp.h.
#include "core/seccomp.h"
#include "core/strings.h"

#include <algorithm>
#include <cctype>

namespace daemonlet {
namespace {

Error invalid(const std::string& source, const std::string& why) {
    return Error{ErrorCode::Invalid, "seccomp profile " + source + ": " + why};
}

std::vector<std::string> string_list(const Json& obj, const char* key) {
    std::vector<std::string> out;
    if (!obj.is_object() || !obj.contains(key) || !obj[key].is_array()) return out;
    for (const auto& v : obj[key])
        if (v.is_string()) out.push_back(v.get<std::string>());
    return out;
}

// The Go name of an architecture (runtime.GOARCH), which includes.arches
// and excludes.arches use: "SCMP_ARCH_X86_64" -> "amd64".
std::string go_arch(const std::string& arch) {
    if (arch == "SCMP_ARCH_X86_64") return "amd64";
    if (arch == "SCMP_ARCH_AARCH64") return "arm64";
    if (arch == "SCMP_ARCH_ARM") return "arm";
    if (arch == "SCMP_ARCH_X86") return "386";
    std::string lower = arch.rfind("SCMP_ARCH_", 0) == 0 ? arch.substr(10) : arch;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    return lower;
}

// moby's setupSeccomp filter on includes / excludes: arches by their Go
// name (runtime.GOARCH), or, in a profile that says so, their SCMP name.
bool applies(const Json& rule, const std::vector<std::string>& caps, const std::string& arch) {
    const Json inc = rule.value("includes", Json::object());
    const Json exc = rule.value("excludes", Json::object());
    const std::string go = go_arch(arch);
    auto has_arch = [&](const std::vector<std::string>& list) {
        return contains(list, go) || contains(list, arch);
    };
    for (const auto& c : string_list(exc, "caps"))
        if (contains(caps, c)) return false;
    if (has_arch(string_list(exc, "arches"))) return false;
    const auto inc_arches = string_list(inc, "arches");
    if (!inc_arches.empty() && !has_arch(inc_arches)) return false;
    for (const auto& c : string_list(inc, "caps"))
        if (!contains(caps, c)) return false;
    return true;
}

}  // namespace

std::string seccomp_arch(const std::string& machine) {
    if (machine == "x86_64" || machine == "amd64") return "SCMP_ARCH_X86_64";
    if (machine == "aarch64" || machine == "arm64") return "SCMP_ARCH_AARCH64";
    if (machine.rfind("arm", 0) == 0) return "SCMP_ARCH_ARM";
    if (machine == "i386" || machine == "i686") return "SCMP_ARCH_X86";
    std::string up = machine;
    std::transform(up.begin(), up.end(), up.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    return "SCMP_ARCH_" + up;
}

Result<Json> seccomp_to_oci(const std::string& profile, const std::string& source,
                            const std::vector<std::string>& caps, const std::string& arch) {
    const Json p = Json::parse(profile, nullptr, false);
    if (p.is_discarded() || !p.is_object()) return invalid(source, "not a JSON object");
    if (!p.contains("defaultAction") || !p["defaultAction"].is_string())
        return invalid(source, "defaultAction: required");
    Json out = Json::object();
    out["defaultAction"] = p["defaultAction"];
    if (p.contains("defaultErrnoRet") && p["defaultErrnoRet"].is_number_unsigned())
        out["defaultErrnoRet"] = p["defaultErrnoRet"];
    Json arches = Json::array();
    if (p.contains("archMap") && p["archMap"].is_array()) {
        for (const auto& m : p["archMap"]) {
            if (!m.is_object() || m.value("architecture", "") != arch) continue;
            arches.push_back(arch);
            for (const auto& sub : string_list(m, "subArchitectures")) arches.push_back(sub);
        }
    } else {
        for (const auto& a : string_list(p, "architectures")) arches.push_back(a);
    }
    if (!arches.empty()) out["architectures"] = std::move(arches);
    if (p.contains("flags") && p["flags"].is_array()) out["flags"] = p["flags"];
    Json syscalls = Json::array();
    if (p.contains("syscalls")) {
        if (!p["syscalls"].is_array()) return invalid(source, "syscalls: not an array");
        std::size_t i = 0;
        for (const auto& rule : p["syscalls"]) {
            const std::string field = "syscalls[" + std::to_string(i++) + "]";
            if (!rule.is_object() || !rule.contains("action") || !rule["action"].is_string())
                return invalid(source, field + ".action: required");
            if (!applies(rule, caps, arch)) continue;
            std::vector<std::string> names = string_list(rule, "names");
            if (rule.contains("name") && rule["name"].is_string()) names.push_back(rule["name"]);
            if (names.empty()) return invalid(source, field + ".names: required");
            Json s = Json::object();
            s["names"] = names;
            s["action"] = rule["action"];
            if (rule.contains("errnoRet") && rule["errnoRet"].is_number_unsigned())
                s["errnoRet"] = rule["errnoRet"];
            Json args = Json::array();
            if (rule.contains("args") && rule["args"].is_array()) {
                for (const auto& a : rule["args"]) {
                    if (!a.is_object() || !a.contains("op"))
                        return invalid(source, field + ".args: malformed");
                    Json arg = {{"index", a.value("index", 0)},
                                {"value", a.value("value", std::uint64_t{0})},
                                {"op", a["op"]}};
                    if (a.value("valueTwo", std::uint64_t{0}) != 0) arg["valueTwo"] = a["valueTwo"];
                    args.push_back(std::move(arg));
                }
            }
            if (!args.empty()) s["args"] = std::move(args);
            syscalls.push_back(std::move(s));
        }
    }
    out["syscalls"] = std::move(syscalls);
    return out;
}

}  // namespace daemonlet
