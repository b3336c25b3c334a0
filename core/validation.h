// Validation as the API server does it (pkg/apis/apps/validation and
// pkg/apis/core/validation, Kubernetes 1.25 to 1.30), applied to defaulted
// objects. What the API server accepts is accepted, even where it can never
// match (a Gt requirement with a non-integer value): only what it rejects is
// rejected, with its messages.
#pragma once

#include <string>

#include "core/field_error.h"
#include "core/model.h"

namespace daemonlet {

FieldErrors validate_daemonset(const DaemonSet& ds);
FieldErrors validate_node(const Node& node);

// ValidateConfigMap: a DNS-subdomain name, keys IsConfigMapKey, no key in
// both data and binaryData, at most MaxSecretSize (1 MiB) of values.
FieldErrors validate_config_map(const ConfigMap& cm);

// ValidateSecret: a DNS-subdomain name, keys IsConfigMapKey, at most 1 MiB,
// and the keys (or annotation) each built-in type requires. Values never
// appear in an error ("<secret contents redacted>", as upstream).
FieldErrors validate_secret(const Secret& s);

// ValidatePodCreate's metadata and spec checks, for a static pod read from
// a file. `raw_spec` is the spec as written (may be null).
FieldErrors validate_pod(const Pod& pod, const Json& raw_spec);

// What every object needs, for a kind daemonlet does not use: apiVersion,
// kind, a name valid for that kind (the kind's registry name rule where
// daemonlet knows it, else a DNS subdomain as for custom resources), and a
// namespace that is a DNS label where one is written.
FieldErrors validate_other_object(const OtherObject& o);

// Kinds whose registry strategy is cluster-scoped: the API server drops a
// namespace written on them (rest.BeforeCreate) instead of checking it.
bool is_cluster_scoped_kind(const std::string& kind);

}  // namespace daemonlet
