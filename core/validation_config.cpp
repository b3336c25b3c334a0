// ConfigMap and Secret validation on create (pkg/apis/core/validation
// ValidateConfigMap, ValidateSecret, Kubernetes 1.25 to 1.30), and what
// every other object is checked for: apimachinery's ValidateObjectMeta with
// the name rule of the kind's registry strategy.
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>

#include "core/names.h"
#include "core/validation.h"
#include "core/validation_internal.h"

namespace daemonlet {

using namespace validation;

namespace {

// core.MaxSecretSize: a ConfigMap or Secret holds at most 1 MiB of values.
constexpr std::size_t kMaxSecretSize = 1 * 1024 * 1024;

void validate_keys(const std::map<std::string, std::string>& m, const FieldPath& p, FieldErrors& errs,
                   std::size_t& total) {
    for (const auto& [k, v] : m) {
        invalid_each(errs, p.key(k), render_string(k), is_config_map_key(k));
        total += v.size();
    }
}

// json.Unmarshal(value, &map[string]interface{}{}), as the docker config
// types require. The parser's own message would quote the value: not used.
std::string docker_config_json_error(const std::string& value) {
    if (value.empty()) return "unexpected end of JSON input";
    Json parsed = Json::parse(value, nullptr, false);
    if (parsed.is_discarded()) return "invalid JSON";
    if (parsed.is_object()) return {};
    std::string type = parsed.is_array()     ? "array"
                       : parsed.is_string()  ? "string"
                       : parsed.is_boolean() ? "bool"
                       : parsed.is_null()    ? ""
                                             : "number";
    if (type.empty()) return {};  // null unmarshals into a map as nil
    return "json: cannot unmarshal " + type + " into Go value of type map[string]interface {}";
}

void require_docker_config(const Secret& s, const char* key, const FieldPath& data, FieldErrors& errs) {
    auto it = s.data.find(key);
    if (it == s.data.end()) {
        errs.push_back(required(data.key(key)));
        return;
    }
    std::string err = docker_config_json_error(it->second);
    if (!err.empty()) errs.push_back(invalid(data.key(key), render_string(kSecretRedacted), err));
}

// util/validation IsDNS1035Label (ValidateServiceName).
std::vector<std::string> is_dns1035_label(const std::string& v) {
    std::vector<std::string> errs;
    if (v.size() > 63) errs.emplace_back("must be no more than 63 characters");
    bool ok = !v.empty() && v.front() >= 'a' && v.front() <= 'z' &&
              ((v.back() >= 'a' && v.back() <= 'z') || (v.back() >= '0' && v.back() <= '9'));
    for (char c : v)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) ok = false;
    if (!ok)
        errs.push_back(
            regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                        "start with an alphabetic character, and end with an alphanumeric character",
                        "[a-z]([-a-z0-9]*[a-z0-9])?", {"my-name", "abc-123"}));
    return errs;
}

// apimachinery path.IsValidPathSegmentName (ValidateRBACName and the
// other registries that accept ':' in names).
std::vector<std::string> is_valid_path_segment_name(const std::string& v) {
    if (v == "." || v == "..") return {"may not be '" + v + "'"};
    std::vector<std::string> errs;
    for (const char* bad : {"/", "%"})
        if (v.find(bad) != std::string::npos) errs.push_back(std::string("may not contain '") + bad + "'");
    return errs;
}

bool is_rbac_kind(const std::string& kind) {
    return kind == "Role" || kind == "ClusterRole" || kind == "RoleBinding" || kind == "ClusterRoleBinding";
}

}  // namespace

bool is_cluster_scoped_kind(const std::string& kind) {
    static constexpr std::string_view kKinds[] = {"Namespace",
                                                  "Node",
                                                  "PersistentVolume",
                                                  "ClusterRole",
                                                  "ClusterRoleBinding",
                                                  "CustomResourceDefinition",
                                                  "APIService",
                                                  "StorageClass",
                                                  "CSIDriver",
                                                  "CSINode",
                                                  "VolumeAttachment",
                                                  "PriorityClass",
                                                  "RuntimeClass",
                                                  "IngressClass",
                                                  "MutatingWebhookConfiguration",
                                                  "ValidatingWebhookConfiguration",
                                                  "ValidatingAdmissionPolicy",
                                                  "ValidatingAdmissionPolicyBinding",
                                                  "PodSecurityPolicy",
                                                  "CertificateSigningRequest",
                                                  "FlowSchema",
                                                  "PriorityLevelConfiguration",
                                                  "ComponentStatus"};
    return std::find(std::begin(kKinds), std::end(kKinds), kind) != std::end(kKinds);
}

FieldErrors validate_config_map(const ConfigMap& cm) {
    FieldErrors errs;
    validate_object_meta(cm.metadata, true, FieldPath("metadata"), errs);
    std::size_t total = 0;
    validate_keys(cm.data, FieldPath("data"), errs, total);
    FieldPath binary("binaryData");
    for (const auto& [k, v] : cm.binary_data) {
        invalid_each(errs, binary.key(k), render_string(k), is_config_map_key(k));
        total += v.size();
        if (cm.data.count(k))
            errs.push_back(
                invalid(binary.key(k), render_string(k), "duplicate key in both data and binaryData"));
    }
    // field.TooLong(field.NewPath(""), cfg, MaxSecretSize): the whole object.
    if (total > kMaxSecretSize) errs.push_back(too_long(FieldPath(), "", kMaxSecretSize));
    return errs;
}

FieldErrors validate_secret(const Secret& s) {
    FieldErrors errs;
    validate_object_meta(s.metadata, true, FieldPath("metadata"), errs);
    FieldPath data("data");
    std::size_t total = 0;
    validate_keys(s.data, data, errs, total);
    if (total > kMaxSecretSize) errs.push_back(too_long(data, "", kMaxSecretSize));

    const std::string& type = s.type;
    if (type == "kubernetes.io/service-account-token") {
        // Only the annotation: the token controller fills in the data.
        auto it = s.metadata.annotations.find("kubernetes.io/service-account.name");
        if (it == s.metadata.annotations.end() || it->second.empty())
            errs.push_back(required(
                FieldPath("metadata").child("annotations").key("kubernetes.io/service-account.name")));
    } else if (type == "kubernetes.io/dockercfg") {
        require_docker_config(s, ".dockercfg", data, errs);
    } else if (type == "kubernetes.io/dockerconfigjson") {
        require_docker_config(s, ".dockerconfigjson", data, errs);
    } else if (type == "kubernetes.io/basic-auth") {
        // Either may be empty, but one must be there.
        if (!s.data.count("username") && !s.data.count("password")) {
            errs.push_back(required(data.key("username")));
            errs.push_back(required(data.key("password")));
        }
    } else if (type == "kubernetes.io/ssh-auth") {
        auto it = s.data.find("ssh-privatekey");
        if (it == s.data.end() || it->second.empty()) errs.push_back(required(data.key("ssh-privatekey")));
    } else if (type == "kubernetes.io/tls") {
        if (!s.data.count("tls.crt")) errs.push_back(required(data.key("tls.crt")));
        if (!s.data.count("tls.key")) errs.push_back(required(data.key("tls.key")));
    }
    // Opaque and any other type: no rule.
    return errs;
}

FieldErrors validate_other_object(const OtherObject& o) {
    FieldErrors errs;
    FieldPath meta("metadata");
    if (o.name.empty()) {
        errs.push_back(required(meta.child("name"), "name or generateName is required"));
    } else {
        std::vector<std::string> problems;
        if (o.kind == "Namespace")
            problems = name_is_dns_label(o.name, false);  // ValidateNamespaceName
        else if (o.kind == "Service" && o.api_version == "v1")
            problems = is_dns1035_label(o.name);  // ValidateServiceName
        else if (is_rbac_kind(o.kind))
            problems = is_valid_path_segment_name(o.name);  // ValidateRBACName
        else
            problems = name_is_dns_subdomain(o.name, false);  // most kinds, and custom resources
        invalid_each(errs, meta.child("name"), render_string(o.name), problems);
    }
    if (!o.namespace_.empty() && !is_cluster_scoped_kind(o.kind))
        invalid_each(errs, meta.child("namespace"), render_string(o.namespace_),
                     name_is_dns_label(o.namespace_, false));
    return errs;
}

}  // namespace daemonlet
