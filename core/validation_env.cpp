// Environment variables: ValidateEnv and validateEnvVarValueFrom with the
// downward API selectors they use (validateObjectFieldSelector,
// validateContainerResourceFieldSelector, the key selectors), from
// pkg/apis/core/validation/validation.go and
// pkg/api/pod (ConvertDownwardAPIFieldLabel), Kubernetes 1.25 to 1.30.
#include <string>

#include "core/names.h"
#include "core/pod_env.h"
#include "core/strings.h"
#include "core/validation_internal.h"

namespace daemonlet::validation {
namespace {

const std::vector<std::string> kEnvFieldPaths = {
    "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
    "status.hostIP", "status.hostIPs",     "status.podIP", "status.podIPs",
};
// validVolumeDownwardAPIFieldPathExpressions.
const std::vector<std::string> kVolumeFieldPaths = {
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
};
const std::vector<std::string> kResourceFieldPaths = {
    "limits.cpu",   "limits.ephemeral-storage",   "limits.memory",
    "requests.cpu", "requests.ephemeral-storage", "requests.memory",
};

// The field labels ConvertDownwardAPIFieldLabel knows for v1 pods.
const std::vector<std::string> kSupportedFieldLabels = {
    "metadata.annotations", "metadata.labels", "metadata.name",      "metadata.namespace",
    "metadata.uid",         "spec.nodeName",   "spec.restartPolicy", "spec.serviceAccountName",
    "spec.schedulerName",   "status.phase",    "status.hostIP",      "status.hostIPs",
    "status.podIP",         "status.podIPs",
};

// podshelper.ConvertDownwardAPIFieldLabel: "" and an error text, or the
// internal field path.
bool convert_field_label(const std::string& version, const std::string& label, std::string& out,
                         std::string& error) {
    if (version != "v1") {
        error = "unsupported pod version: " + version;
        return false;
    }
    std::string path, subscript;
    if (split_subscripted_path(label, path, subscript)) {
        if (path == "metadata.annotations" || path == "metadata.labels") {
            out = label;
            return true;
        }
        error = "field label does not support subscript: " + label;
        return false;
    }
    if (label == "spec.host") {
        out = "spec.nodeName";
        return true;
    }
    if (!contains(kSupportedFieldLabels, label)) {
        error = "field label not supported: " + label;
        return false;
    }
    out = label;
    return true;
}

}  // namespace

// validateObjectFieldSelector with the env var or the volume expressions.
void validate_object_field_selector(const ObjectFieldSelector& fs, bool volume, const FieldPath& p,
                                    FieldErrors& errs) {
    const std::vector<std::string>& expressions = volume ? kVolumeFieldPaths : kEnvFieldPaths;
    if (fs.api_version.empty()) {
        errs.push_back(required(p.child("apiVersion")));
        return;
    }
    if (fs.field_path.empty()) {
        errs.push_back(required(p.child("fieldPath")));
        return;
    }
    std::string internal, error;
    if (!convert_field_label(fs.api_version, fs.field_path, internal, error)) {
        errs.push_back(invalid(p.child("fieldPath"), render_string(fs.field_path),
                               "error converting fieldPath: " + error));
        return;
    }
    std::string path, subscript;
    if (split_subscripted_path(internal, path, subscript)) {
        if (path == "metadata.annotations") {
            std::string lower = to_lower(subscript);
            invalid_each(errs, p, render_string(lower), names::is_qualified_name(lower));
        } else if (path == "metadata.labels") {
            invalid_each(errs, p, render_string(subscript), names::is_qualified_name(subscript));
        } else {
            errs.push_back(invalid(p, render_string(path), "does not support subscript"));
        }
    } else if (!contains(expressions, internal)) {
        errs.push_back(not_supported(p.child("fieldPath"), render_string(internal), expressions));
    }
}

// validateContainerResourceFieldSelector: a volume's must name its container.
void validate_resource_field_selector(const ResourceFieldSelector& fs, bool volume, const FieldPath& p,
                                      FieldErrors& errs) {
    if (volume && fs.container_name.empty()) {
        errs.push_back(required(p.child("containerName")));
    } else if (fs.resource.empty()) {
        errs.push_back(required(p.child("resource")));
    } else if (!contains(kResourceFieldPaths, fs.resource) &&
               fs.resource.rfind("requests.hugepages-", 0) != 0 &&
               fs.resource.rfind("limits.hugepages-", 0) != 0) {
        errs.push_back(not_supported(p.child("resource"), render_string(fs.resource), kResourceFieldPaths));
    }
    validate_container_resource_divisor(fs.resource, fs.divisor, p, errs);
}

namespace {

// validateConfigMapKeySelector / validateSecretKeySelector (kept as written).
void validate_key_selector(const Json& ref, const FieldPath& p, FieldErrors& errs) {
    std::string name = string_member(ref, "name");
    invalid_each(errs, p.child("name"), render_string(name), name_is_dns_subdomain(name, false));
    std::string key = string_member(ref, "key");
    if (key.empty())
        errs.push_back(required(p.child("key")));
    else
        invalid_each(errs, p.child("key"), render_string(key), is_config_map_key(key));
}

// validateEnvVarValueFrom: exactly one source, and no value beside it.
void validate_env_value_from(const EnvVar& ev, const FieldPath& p, FieldErrors& errs) {
    if (!ev.value_from) return;
    const EnvVarSource& src = *ev.value_from;
    int sources = 0;
    if (src.field_ref) {
        ++sources;
        validate_object_field_selector(*src.field_ref, false, p.child("fieldRef"), errs);
    }
    if (src.resource_field_ref) {
        ++sources;
        validate_resource_field_selector(*src.resource_field_ref, false, p.child("resourceFieldRef"), errs);
    }
    if (!src.config_map_key_ref.is_null()) {
        ++sources;
        validate_key_selector(src.config_map_key_ref, p.child("configMapKeyRef"), errs);
    }
    if (!src.secret_key_ref.is_null()) {
        ++sources;
        validate_key_selector(src.secret_key_ref, p.child("secretKeyRef"), errs);
    }
    if (sources == 0)
        errs.push_back(invalid(
            p, render_string(""),
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"));
    else if (!ev.value.empty())
        errs.push_back(invalid(p, render_string(""), "may not be specified when `value` is not empty"));
    else if (sources > 1)
        errs.push_back(invalid(p, render_string(""), "may not have more than one field specified at a time"));
}

}  // namespace

// ValidateEnv (strict names: RelaxedEnvironmentVariableValidation is off by
// default through 1.30).
void validate_env(const std::vector<EnvVar>& env, const FieldPath& p, FieldErrors& errs) {
    for (std::size_t i = 0; i < env.size(); ++i) {
        FieldPath ip = p.index(i);
        if (env[i].name.empty())
            errs.push_back(required(ip.child("name")));
        else
            invalid_each(errs, ip.child("name"), render_string(env[i].name),
                         names::is_env_var_name(env[i].name));
        validate_env_value_from(env[i], ip.child("valueFrom"), errs);
    }
}

// ValidateEnvFrom with validateConfigMapEnvSource / validateSecretEnvSource:
// a valid prefix, exactly one source (the count errors name the list, as
// upstream does), and a name that is a DNS subdomain (prefix allowed).
void validate_env_from(const std::vector<EnvFromSource>& env_from, const FieldPath& p, FieldErrors& errs) {
    for (std::size_t i = 0; i < env_from.size(); ++i) {
        const EnvFromSource& ev = env_from[i];
        FieldPath ip = p.index(i);
        if (!ev.prefix.empty())
            invalid_each(errs, ip.child("prefix"), render_string(ev.prefix),
                         names::is_env_var_name(ev.prefix));
        int sources = 0;
        auto ref = [&](const std::optional<EnvFromRef>& r, const char* key) {
            if (!r) return;
            ++sources;
            FieldPath np = ip.child(key).child("name");
            if (r->name.empty())
                errs.push_back(required(np));
            else
                invalid_each(errs, np, render_string(r->name), name_is_dns_subdomain(r->name, true));
        };
        ref(ev.config_map_ref, "configMapRef");
        ref(ev.secret_ref, "secretRef");
        if (sources == 0)
            errs.push_back(
                invalid(p, render_string(""), "must specify one of: `configMapRef` or `secretRef`"));
        else if (sources > 1)
            errs.push_back(
                invalid(p, render_string(""), "may not have more than one field specified at a time"));
    }
}

}  // namespace daemonlet::validation
