// daemonlet validate [-o json] FILE...: every document checked, every error printed.
#include <cstdio>

#include "agent/cli/cli.h"

namespace daemonlet::agent {
namespace {

const char* const kValidateHelp =
    "Usage: daemonlet validate [-o json] FILE...\n"
    "\n"
    "Checks every document in each FILE (YAML or JSON; kind: List expanded) as the\n"
    "Kubernetes API server would: apps/v1 DaemonSet (legacy apps/v1beta2 and\n"
    "extensions/v1beta1 are converted, with a warning), v1 Node, v1 ConfigMap and\n"
    "Secret (data for pods; a Secret's values are never printed), v1 Pod (a static\n"
    "pod), and any other kind (Namespace, ServiceAccount, RBAC, CRDs, Services, ...)\n"
    "for what every object needs: such an object is valid but not used on a board.\n"
    "Prints one line per valid object on stdout and one line per error on stderr,\n"
    "each naming the file, the document (counted from 1), the field and the reason.\n"
    "\n"
    "  -o json   one JSON object on stdout: {\"valid\": BOOL, \"files\": [{\"file\",\n"
    "            \"objects\": [{\"document\", \"where\", \"apiVersion\", \"kind\",\n"
    "            \"namespace\", \"name\", \"usedOnBoard\", ...}], \"errors\": [{\"document\",\n"
    "            \"field\", \"message\"}], \"warnings\": [...]}]}\n"
    "\n"
    "Exit status: 0 when every document is valid, 1 when any is not, 2 on usage errors.\n";

// What the board does with an object, for the human line.
std::string use_of(const ManifestObject& o) {
    if (const auto* cm = std::get_if<ConfigMap>(&o.object))
        return " (" + std::to_string(cm->data.size() + cm->binary_data.size()) + " keys, data for pods)";
    if (const auto* s = std::get_if<Secret>(&o.object))
        return " (" + s->type + ", " + std::to_string(s->data.size()) + " keys, data for pods)";
    if (std::holds_alternative<Pod>(o.object)) return " (a static pod)";
    if (std::holds_alternative<OtherObject>(o.object)) return " (not used on a board)";
    return "";
}

Json object_json(const ManifestObject& o) {
    Json j = Json::object();
    j["document"] = o.document;
    j["where"] = o.where;
    auto meta = [&](const char* api, const char* kind, const ObjectMeta& m) {
        j["apiVersion"] = api;
        j["kind"] = kind;
        j["namespace"] = m.namespace_;
        j["name"] = m.name;
    };
    if (const auto* ds = std::get_if<DaemonSet>(&o.object)) {
        meta("apps/v1", "DaemonSet", ds->metadata);
        j["usedOnBoard"] = true;
    } else if (const auto* n = std::get_if<Node>(&o.object)) {
        meta("v1", "Node", n->metadata);
        j["usedOnBoard"] = true;
    } else if (const auto* cm = std::get_if<ConfigMap>(&o.object)) {
        meta("v1", "ConfigMap", cm->metadata);
        j["usedOnBoard"] = true;
        j["keys"] = cm->data.size() + cm->binary_data.size();
        j["immutable"] = cm->immutable;
    } else if (const auto* s = std::get_if<Secret>(&o.object)) {
        meta("v1", "Secret", s->metadata);
        j["usedOnBoard"] = true;
        j["type"] = s->type;
        j["keys"] = s->data.size();  // the values never
        j["immutable"] = s->immutable;
    } else if (const auto* p = std::get_if<Pod>(&o.object)) {
        meta("v1", "Pod", p->metadata);
        j["usedOnBoard"] = false;
        j["staticPod"] = true;
    } else {
        const auto& x = std::get<OtherObject>(o.object);
        j["apiVersion"] = x.api_version;
        j["kind"] = x.kind;
        j["namespace"] = x.namespace_;
        j["name"] = x.name;
        j["usedOnBoard"] = false;
    }
    return j;
}

}  // namespace

int cmd_validate(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::fputs(kValidateHelp, stdout);
        return kExitOk;
    }
    std::vector<std::string> files;
    bool json = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        std::string output;
        if (a.size() > 2 && a.rfind("-o", 0) == 0 && a[2] != '=') output = a.substr(2);  // -ojson
        if (!output.empty() || flag_value(args, i, "-o", output) || flag_value(args, i, "--output", output)) {
            if (output != "json") {
                std::fprintf(stderr, "daemonlet validate: unsupported output \"%s\" (only json)\n\n%s",
                             output.c_str(), kValidateHelp);
                return kExitUsage;
            }
            json = true;
            continue;
        }
        if (a.size() > 1 && a[0] == '-') {
            std::fprintf(stderr, "daemonlet validate: unknown option \"%s\"\n\n%s", a.c_str(), kValidateHelp);
            return kExitUsage;
        }
        files.push_back(a);
    }
    if (files.empty()) {
        std::fprintf(stderr, "daemonlet validate: no files given\n\n%s", kValidateHelp);
        return kExitUsage;
    }
    bool any_error = false;
    Json out_files = Json::array();
    for (const auto& f : files) {
        LoadedManifest m = load_file(f);
        if (!m.errors.empty()) any_error = true;
        if (json) {
            Json objects = Json::array(), errors = Json::array();
            for (const auto& o : m.objects) objects.push_back(object_json(o));
            for (const auto& e : m.errors)
                errors.push_back({{"document", e.document}, {"field", e.field}, {"message", e.message}});
            out_files.push_back(
                {{"file", f}, {"objects", objects}, {"errors", errors}, {"warnings", m.warnings}});
            continue;
        }
        for (const auto& w : m.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
        for (const auto& o : m.objects)
            std::printf("%s: %s: %s: valid%s\n", f.c_str(), o.where.c_str(), describe_object(o).c_str(),
                        use_of(o).c_str());
        for (const auto& e : m.errors) std::fprintf(stderr, "%s\n", e.to_string().c_str());
        if (m.objects.empty() && m.errors.empty()) std::printf("%s: no objects\n", f.c_str());
    }
    if (json) {
        Json out{{"valid", !any_error}, {"files", out_files}};
        std::printf("%s\n", out.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
    }
    return any_error ? kExitInvalid : kExitOk;
}

}  // namespace daemonlet::agent
