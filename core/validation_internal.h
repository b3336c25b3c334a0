// Internal to core: the pieces of API-server validation shared between the
// validation_*.cpp files. Each function follows the upstream function named
// in its comment (Kubernetes 1.25 to 1.30) and appends its field errors to
// `errs`, in upstream's order, with upstream's messages.
//
// Bad values are rendered as field.Error.ErrorBody renders them: strings
// quoted; numbers bare; resource names, whose type has a String() method,
// unquoted; composites as Go's %#v prints them where that is reproducible
// (maps, the internal Toleration and Taint structs, the label selector's
// generated String()). IntOrString and Quantity values follow field_error.h's
// JSON convention ("25%", 1, "500m"), and a security context, whose %#v is
// all pointer addresses, is shown as compact JSON of the fields set.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/field_error.h"
#include "core/json.h"
#include "core/model.h"

namespace daemonlet::validation {

// ---- rendering ---------------------------------------------------------

// Go's %#v of a map[string]string: map[string]string{"a":"b", "c":"d"};
// an empty map prints as the nil map, map[string]string(nil).
std::string go_string_map(const Labels& m);
// An IntOrString as its JSON: the number bare, the string quoted (field_error.h's
// convention; 1.25 to 1.30 print the Go struct, intstr.IntOrString{Type:1, ...}).
std::string render_int_or_string(const IntOrString& v);
// resource.Quantity.String(): the canonical form ("1500m" -> "1500m",
// "1.5" -> "1500m", "2000" -> "2k", "1024Mi" -> "1Gi").
std::string canonical_quantity(const Quantity& q);
// util/validation RegexError: msg (e.g. 'a',  or 'b', regex used for validation is 'fmt').
std::string regex_error(std::string_view msg, std::string_view fmt, const std::vector<std::string>& examples);
std::string inclusive_range_error(std::int64_t lo, std::int64_t hi);
// validateSeccompProfileField (pod and container securityContext.seccompProfile).
void validate_seccomp_profile_field(const SeccompProfile& sp, const FieldPath& p, FieldErrors& errs);

// ---- raw document access -------------------------------------------------

// The member `key` of `obj`, or nullptr when obj is not an object or the
// member is absent or null (null reads as absent, as in Go's decoder).
const Json* member(const Json& obj, const char* key);
// The string member `key` of `obj`, or "" when absent or not a string.
std::string string_member(const Json& obj, const char* key);

// ---- apimachinery ----------------------------------------------------------

// One field.Invalid per message.
void invalid_each(FieldErrors& errs, const FieldPath& p, const std::string& value,
                  const std::vector<std::string>& msgs);
// ValidateNonnegativeField.
void validate_nonnegative(std::int64_t v, const FieldPath& p, FieldErrors& errs);
// NameIsDNSSubdomain / NameIsDNSLabel (prefix: trailing dash allowed, for generateName).
std::vector<std::string> name_is_dns_subdomain(const std::string& name, bool prefix);
std::vector<std::string> name_is_dns_label(const std::string& name, bool prefix);
// ValidateDNS1123Label.
void validate_dns1123_label(const std::string& v, const FieldPath& p, FieldErrors& errs);
// metav1 validation ValidateLabelName, ValidateLabels.
void validate_label_name(const std::string& k, const FieldPath& p, FieldErrors& errs);
void validate_labels(const Labels& l, const FieldPath& p, FieldErrors& errs);
// apimachinery ValidateAnnotations: keys are qualified names once lower-cased,
// and all keys and values together fit in 256 KiB.
void validate_annotations(const Labels& a, const FieldPath& p, FieldErrors& errs);
// metav1 validation ValidateLabelSelector, AllowInvalidLabelValueInSelector off
// (the option only relaxes updates of objects already stored).
void validate_label_selector(const LabelSelector& s, const FieldPath& p, FieldErrors& errs);
// apimachinery ValidateObjectMeta on create, name checked as a DNS-1123
// subdomain (DaemonSet and Node both use NameIsDNSSubdomain).
void validate_object_meta(const ObjectMeta& m, bool namespaced, const FieldPath& p, FieldErrors& errs);
// util/validation IsConfigMapKey.
std::vector<std::string> is_config_map_key(std::string_view v);

// ---- paths (pkg/apis/core/validation) ------------------------------------

void validate_path_no_backsteps(const std::string& target, const FieldPath& p, FieldErrors& errs);
void validate_local_descending_path(const std::string& target, const FieldPath& p, FieldErrors& errs);
void validate_local_non_reserved_path(const std::string& target, const FieldPath& p, FieldErrors& errs);

// ---- pod template and spec -----------------------------------------------

// ValidatePodTemplateSpec. `raw_spec` is the template's spec as written (may
// be null): it carries the few fields the typed model does not keep.
void validate_pod_template_spec(const PodTemplateSpec& t, const Json& raw_spec, const FieldPath& p,
                                FieldErrors& errs);

// ValidateVolumes: returns the names of the volumes that validated, the only
// ones a volumeMount may refer to.
std::set<std::string> validate_volumes(const std::vector<Volume>& volumes, const FieldPath& p,
                                       FieldErrors& errs);

// validateContainers / validateInitContainers.
void validate_containers(const PodSpec& spec, const std::set<std::string>& volumes, const Json& raw_spec,
                         const FieldPath& p, FieldErrors& errs);
void validate_init_containers(const PodSpec& spec, const std::set<std::string>& volumes, const Json& raw_spec,
                              const FieldPath& p, FieldErrors& errs);

// ValidateEnv (strict names: RelaxedEnvironmentVariableValidation is off
// through 1.30).
void validate_env(const std::vector<EnvVar>& env, const FieldPath& p, FieldErrors& errs);
// validateObjectFieldSelector / validateContainerResourceFieldSelector for
// env (volume false) or a downwardAPI volume file (volume true).
void validate_object_field_selector(const ObjectFieldSelector& fs, bool volume, const FieldPath& p,
                                    FieldErrors& errs);
void validate_resource_field_selector(const ResourceFieldSelector& fs, bool volume, const FieldPath& p,
                                      FieldErrors& errs);
void validate_env_from(const std::vector<EnvFromSource>& env_from, const FieldPath& p, FieldErrors& errs);

// ValidateResourceRequirements for a container.
void validate_resource_requirements(const ResourceRequirements& r, const FieldPath& p, FieldErrors& errs);
// validateContainerResourceDivisor (downward API resourceFieldRef).
void validate_container_resource_divisor(const std::string& resource, const std::optional<Quantity>& divisor,
                                         const FieldPath& p, FieldErrors& errs);

// validateAffinity, ValidateTolerations, validateTaintEffect.
void validate_affinity(const Affinity& a, const FieldPath& p, FieldErrors& errs);
void validate_tolerations(const std::vector<Toleration>& ts, const FieldPath& p, FieldErrors& errs);
void validate_taint_effect(const std::string& effect, bool allow_empty, const FieldPath& p,
                           FieldErrors& errs);

}  // namespace daemonlet::validation
