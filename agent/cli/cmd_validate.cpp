// daemonlet validate FILE...: every document checked, every error printed.
#include <cstdio>

#include "agent/cli/cli.h"

namespace daemonlet::agent {
namespace {

const char* const kHelp =
    "Usage: daemonlet validate FILE...\n"
    "\n"
    "Checks every document in each FILE (YAML or JSON; kind: List expanded) as the\n"
    "Kubernetes API server would: apps/v1 DaemonSet (legacy apps/v1beta2 and\n"
    "extensions/v1beta1 are converted, with a warning) and v1 Node. Prints one line\n"
    "per valid object on stdout and one line per error on stderr, each naming the\n"
    "file, the document (counted from 1), the field and the reason.\n"
    "\n"
    "Exit status: 0 when every document is valid, 1 when any is not, 2 on usage errors.\n";

std::string describe(const ManifestObject& o) {
    if (const auto* ds = std::get_if<DaemonSet>(&o.object))
        return "DaemonSet " + ds->metadata.namespace_ + "/" + ds->metadata.name;
    return "Node " + std::get<Node>(o.object).metadata.name;
}

}  // namespace

int cmd_validate(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::fputs(kHelp, stdout);
        return kExitOk;
    }
    std::vector<std::string> files;
    for (const auto& a : args) {
        if (a.size() > 1 && a[0] == '-') {
            std::fprintf(stderr, "daemonlet validate: unknown option \"%s\"\n\n%s", a.c_str(), kHelp);
            return kExitUsage;
        }
        files.push_back(a);
    }
    if (files.empty()) {
        std::fprintf(stderr, "daemonlet validate: no files given\n\n%s", kHelp);
        return kExitUsage;
    }
    bool any_error = false;
    for (const auto& f : files) {
        LoadedManifest m = load_file(f);
        for (const auto& w : m.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
        for (const auto& o : m.objects)
            std::printf("%s: %s: %s: valid\n", f.c_str(), o.where.c_str(), describe(o).c_str());
        for (const auto& e : m.errors) std::fprintf(stderr, "%s\n", e.to_string().c_str());
        if (!m.errors.empty()) any_error = true;
        if (m.objects.empty() && m.errors.empty()) std::printf("%s: no objects\n", f.c_str());
    }
    return any_error ? kExitInvalid : kExitOk;
}

}  // namespace daemonlet::agent
