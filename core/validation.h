// Validation as the API server does it (pkg/apis/apps/validation and
// pkg/apis/core/validation, Kubernetes 1.25 to 1.30), applied to defaulted
// objects. What the API server accepts is accepted, even where it can never
// match (a Gt requirement with a non-integer value): only what it rejects is
// rejected, with its messages.
#pragma once

#include "core/field_error.h"
#include "core/model.h"

namespace daemonlet {

FieldErrors validate_daemonset(const DaemonSet& ds);
FieldErrors validate_node(const Node& node);

}  // namespace daemonlet
