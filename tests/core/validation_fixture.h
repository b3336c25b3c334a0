// Shared by the validation tests: a valid, defaulted DaemonSet and Node to
// mutate row by row, upstream's long name-syntax messages, and the
// comparison of an error list with the expected one (order ignored, every
// error accounted for, so "no more than upstream" is checked too).
// No CppUTest here: the test files include it before CppUTest's headers.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "core/field_error.h"
#include "core/model.h"

namespace daemonlet::testing {

// A DaemonSet as the API server holds it after v1 defaulting: the shape of
// upstream's validPodTemplate (apps validation_test.go) with the defaults
// filled in.
inline DaemonSet valid_daemonset() {
    DaemonSet ds;
    ds.metadata.name = "abc";
    ds.metadata.namespace_ = "default";
    ds.spec.selector = LabelSelector{{{"a", "b"}}, {}};
    PodTemplateSpec& t = ds.spec.template_;
    t.metadata.labels = {{"a", "b"}};
    t.spec.restart_policy = "Always";
    t.spec.dns_policy = "ClusterFirst";
    t.spec.termination_grace_period_seconds = 30;
    t.spec.scheduler_name = "default-scheduler";
    Container c;
    c.name = "abc";
    c.image = "image";
    c.image_pull_policy = "IfNotPresent";
    c.termination_message_path = "/dev/termination-log";
    c.termination_message_policy = "File";
    t.spec.containers.push_back(c);
    ds.spec.update_strategy.type = "RollingUpdate";
    ds.spec.update_strategy.rolling_update =
        RollingUpdateDaemonSet{IntOrString::from_int(1), IntOrString::from_int(0)};
    ds.spec.revision_history_limit = 10;
    return ds;
}

inline Container& first_container(DaemonSet& ds) { return ds.spec.template_.spec.containers[0]; }
inline PodSpec& pod_spec(DaemonSet& ds) { return ds.spec.template_.spec; }

inline Node valid_node() {
    Node n;
    n.metadata.name = "node-1";
    n.metadata.labels = {{"kubernetes.io/hostname", "node-1"}};
    return n;
}

inline Volume host_path_volume(const std::string& name, const std::string& path) {
    Volume v;
    v.name = name;
    v.source = Volume::Source::HostPath;
    v.host_path = path;
    return v;
}

inline Quantity qty(const char* text, std::int64_t milli) { return Quantity{text, milli}; }

// The messages of k8s.io/apimachinery/pkg/util/validation, as printed.
inline const std::string kDnsLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
inline const std::string kDnsSubdomainMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
inline const std::string kQualifiedNameMsg =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
inline const std::string kLabelValueMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
inline const std::string kPercentMsg =
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex "
    "used "
    "for validation is '[0-9]+%')";
inline const std::string kEnvVarNameMsg =
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and "
    "must "
    "not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for "
    "validation "
    "is '[-._a-zA-Z][-._a-zA-Z0-9]*')";

// Sorted, one error per line: what a row expects and what it got compare
// as text, so a failure shows both lists.
inline std::string error_lines(std::vector<std::string> lines) {
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
}

inline std::string error_lines(const FieldErrors& errs) {
    std::vector<std::string> lines;
    for (const auto& e : errs) lines.push_back(e.to_string());
    return error_lines(lines);
}

// A row: a name citing the upstream test and case it pins, a change to the
// valid object, and the exact errors expected (none: the object stays valid).
template <class T>
struct Row {
    const char* name;
    void (*mutate)(T&);
    std::vector<std::string> expected;
};

}  // namespace daemonlet::testing
