// Container resources: ValidateResourceRequirements,
// validateContainerResourceName, ValidateResourceQuantityValue and
// validateContainerResourceDivisor from pkg/apis/core/validation, with the
// resource-name helpers of pkg/apis/core/helper (Kubernetes 1.25 to 1.30).
//
// Resource names have a String() method, so upstream prints them unquoted.
// Quantities print as their canonical string, quoted.
#include <algorithm>
#include <string>

#include "core/names.h"
#include "core/validation_internal.h"

namespace daemonlet::validation {
namespace {

bool has_prefix(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool is_one_of(const std::string& s, std::initializer_list<const char*> set) {
    return std::any_of(set.begin(), set.end(), [&](const char* x) { return s == x; });
}

bool is_huge_page(const std::string& name) { return has_prefix(name, "hugepages-"); }

// helper.IsNativeResource: unprefixed, or in the kubernetes.io namespace.
bool is_native(const std::string& name) {
    return name.find('/') == std::string::npos || name.find("kubernetes.io/") != std::string::npos;
}

// helper.IsExtendedResourceName.
bool is_extended(const std::string& name) {
    if (is_native(name) || has_prefix(name, "requests.")) return false;
    return names::is_qualified_name("requests." + name).empty();
}

// helper.IsOvercommitAllowed: requests may be below limits.
bool overcommit_allowed(const std::string& name) { return is_native(name) && !is_huge_page(name); }

// helper.IsStandardResourceName.
bool is_standard_resource(const std::string& name) {
    return is_one_of(name, {"cpu",
                            "memory",
                            "ephemeral-storage",
                            "requests.cpu",
                            "requests.memory",
                            "requests.ephemeral-storage",
                            "limits.cpu",
                            "limits.memory",
                            "limits.ephemeral-storage",
                            "pods",
                            "resourcequotas",
                            "services",
                            "replicationcontrollers",
                            "secrets",
                            "configmaps",
                            "persistentvolumeclaims",
                            "storage",
                            "requests.storage",
                            "services.nodeports",
                            "services.loadbalancers"}) ||
           has_prefix(name, "hugepages-") || has_prefix(name, "requests.hugepages-");
}

// helper.IsIntegerResourceName.
bool is_integer_resource(const std::string& name) {
    return is_one_of(name,
                     {"pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
                      "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"}) ||
           is_extended(name);
}

bool is_cpu_or_memory(const std::string& name) { return name == "cpu" || name == "memory"; }

// validateResourceName then validateContainerResourceName.
void validate_container_resource_name(const std::string& name, const FieldPath& p, FieldErrors& errs) {
    auto msgs = names::is_qualified_name(name);
    invalid_each(errs, p, name, msgs);
    bool unqualified = name.find('/') == std::string::npos;
    if (msgs.empty() && unqualified && !is_standard_resource(name))
        errs.push_back(invalid(p, name, "must be a standard resource type or fully qualified"));
    if (unqualified) {
        if (!is_one_of(name, {"cpu", "memory", "ephemeral-storage"}) && !is_huge_page(name))
            errs.push_back(invalid(p, name, "must be a standard resource for containers"));
    } else if (!is_native(name) && !is_extended(name)) {
        errs.push_back(invalid(p, name, "doesn't follow extended resource name standard"));
    }
}

// ValidateResourceQuantityValue: non-negative, and whole for integer resources.
void validate_quantity_value(const std::string& name, const Quantity& q, const FieldPath& p,
                             FieldErrors& errs) {
    if (q.milli < 0)
        errs.push_back(
            invalid(p, render_string(canonical_quantity(q)), "must be greater than or equal to 0"));
    if (is_integer_resource(name) && q.milli % 1000 != 0)
        errs.push_back(invalid(p, render_string(canonical_quantity(q)), "must be an integer"));
}

// Whole units, rounded up, as resource.Quantity.Value().
std::int64_t whole_units(std::int64_t milli) { return milli / 1000 + (milli % 1000 > 0 ? 1 : 0); }

// helper.IsHugePageResourceValueDivisible: a positive whole page size, and
// the value a multiple of it (AllowIndivisibleHugePagesValues is off on create).
void validate_huge_page_value(const std::string& name, const Quantity& q, const FieldPath& p,
                              FieldErrors& errs) {
    auto page = parse_quantity(name.substr(std::string("hugepages-").size()));
    bool ok = page.ok() && page.value().milli > 0 && page.value().milli % 1000 == 0 &&
              whole_units(q.milli) % whole_units(page.value().milli) == 0;
    if (!ok) {
        std::string text = canonical_quantity(q);
        errs.push_back(
            invalid(p, render_string(text), text + " is not positive integer multiple of " + name));
    }
}

}  // namespace

void validate_resource_requirements(const ResourceRequirements& r, const FieldPath& p, FieldErrors& errs) {
    FieldPath lim_path = p.child("limits");
    FieldPath req_path = p.child("requests");
    bool lim_cpu_memory = false, req_cpu_memory = false, lim_huge = false, req_huge = false;
    for (const auto& [name, q] : r.limits) {
        FieldPath fp = lim_path.key(name);
        validate_container_resource_name(name, fp, errs);
        validate_quantity_value(name, q, fp, errs);
        if (is_huge_page(name)) {
            lim_huge = true;
            validate_huge_page_value(name, q, fp, errs);
        }
        if (is_cpu_or_memory(name)) lim_cpu_memory = true;
    }
    for (const auto& [name, q] : r.requests) {
        FieldPath fp = req_path.key(name);
        validate_container_resource_name(name, fp, errs);
        validate_quantity_value(name, q, fp, errs);
        // Note: upstream reports these under `requests`, not the key.
        if (auto lim = r.limits.find(name); lim != r.limits.end()) {
            std::string limit = canonical_quantity(lim->second);
            if (q.milli != lim->second.milli && !overcommit_allowed(name))
                errs.push_back(invalid(req_path, render_string(canonical_quantity(q)),
                                       "must be equal to " + name + " limit of " + limit));
            else if (q.milli > lim->second.milli)
                errs.push_back(invalid(req_path, render_string(canonical_quantity(q)),
                                       "must be less than or equal to " + name + " limit of " + limit));
        } else if (!overcommit_allowed(name)) {
            errs.push_back(required(lim_path, "Limit must be set for non overcommitable resources"));
        }
        if (is_huge_page(name)) {
            req_huge = true;
            validate_huge_page_value(name, q, fp, errs);
        }
        if (is_cpu_or_memory(name)) req_cpu_memory = true;
    }
    if (!lim_cpu_memory && !req_cpu_memory && (req_huge || lim_huge))
        errs.push_back(forbidden(p, "HugePages require cpu or memory"));
}

void validate_container_resource_divisor(const std::string& resource, const std::optional<Quantity>& divisor,
                                         const FieldPath& p, FieldErrors& errs) {
    if (!divisor || divisor->milli == 0) return;
    std::string d = canonical_quantity(*divisor);
    auto is_byte_divisor = [&] {
        return is_one_of(d,
                         {"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"});
    };
    const char* const kBytes = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei";
    FieldPath dp = p.child("divisor");
    if (resource == "limits.cpu" || resource == "requests.cpu") {
        if (d != "1m" && d != "1")
            errs.push_back(invalid(dp, render_string(resource),
                                   "only divisor's values 1m and 1 are supported with the cpu resource"));
    } else if (resource == "limits.memory" || resource == "requests.memory") {
        if (!is_byte_divisor())
            errs.push_back(invalid(
                dp, render_string(resource),
                std::string("only divisor's values ") + kBytes + " are supported with the memory resource"));
    } else if (resource == "limits.ephemeral-storage" || resource == "requests.ephemeral-storage") {
        if (!is_byte_divisor())
            errs.push_back(invalid(dp, render_string(resource),
                                   std::string("only divisor's values ") + kBytes +
                                       " are supported with the local ephemeral storage resource"));
    }
    if ((has_prefix(resource, "requests.hugepages-") || has_prefix(resource, "limits.hugepages-")) &&
        !is_byte_divisor())
        errs.push_back(invalid(
            dp, render_string(resource),
            std::string("only divisor's values ") + kBytes + " are supported with the hugepages resource"));
}

}  // namespace daemonlet::validation
