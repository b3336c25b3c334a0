// labels.Requirement and labels.Selector (k8s.io/apimachinery/pkg/labels),
// the matching engine behind nodeSelector, required node affinity terms and
// DaemonSet label selectors.
#pragma once

#include <string>
#include <vector>

#include "core/field_error.h"
#include "core/model.h"
#include "core/result.h"

namespace daemonlet {

// selection.Operator.
enum class SelectorOp {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan
};

// A parsed requirement. Construct with make_requirement, which validates as
// labels.NewRequirement does (key is a qualified name; In/NotIn need values;
// Exists/DoesNotExist take none; Gt/Lt take exactly one integer; other values
// are label values).
struct LabelRequirement {
    std::string key;
    SelectorOp op = SelectorOp::Exists;
    std::vector<std::string> values;

    // labels.Requirement.Matches.
    bool matches(const Labels& ls) const;
};

// labels.NewRequirement. Errors are reported with `path` as the requirement's
// path (its key / values children), as field.WithPath does upstream.
Result<LabelRequirement> make_requirement(const std::string& key, SelectorOp op,
                                          const std::vector<std::string>& values, const FieldPath& path);

// A conjunction of requirements. `nothing` is labels.Nothing(): matches no set.
struct LabelSelectorExpr {
    bool nothing = false;
    std::vector<LabelRequirement> requirements;
    bool matches(const Labels& ls) const;
};

// labels.SelectorFromSet: key=value equality for each pair. Never fails and,
// like the SelectorFromValidatedSet it calls in 1.25-1.30, does not validate:
// a malformed pair is compared as written, so it matches only a node carrying
// that very label, which a valid node never does. (Older releases returned
// Everything for a malformed pair.) Empty: Everything.
LabelSelectorExpr selector_from_set(const Labels& set);

// metav1.LabelSelectorAsSelector: nil -> Nothing, empty -> Everything.
Result<LabelSelectorExpr> label_selector_as_selector(const std::optional<LabelSelector>& sel);

}  // namespace daemonlet
