// Defaults as the API server applies them (pkg/apis/apps/v1/defaults.go and
// pkg/apis/core/v1/defaults.go), on the document itself, before decoding and
// validation, as the API server does. Only absent fields are set; a field of
// the wrong type is left alone for the decoder to report.
#pragma once

#include "core/json.h"

namespace daemonlet {

// apps/v1 SetDefaults_DaemonSet plus the pod template's defaults: the
// RollingUpdate strategy with maxUnavailable 1 and maxSurge 0,
// revisionHistoryLimit 10, restartPolicy Always, terminationGracePeriodSeconds
// 30, dnsPolicy ClusterFirst, imagePullPolicy from the image tag, probe and
// port defaults, and hostPort = containerPort for hostNetwork pods.
// The namespace defaults to "default".
void default_daemonset(Json& obj);

// The defaults of the legacy versions, applied before conversion to apps/v1:
// extensions/v1beta1 takes its selector from the template labels and defaults
// to the OnDelete strategy; apps/v1beta2 has apps/v1's defaults.
void default_legacy_daemonset(Json& obj, const std::string& api_version);

// metadata.namespace "default" when absent, as kubectl apply sends an object
// of a namespaced kind without one.
void default_namespace(Json& obj);

// core/v1 SetDefaults_Secret: type Opaque; and the namespace.
void default_secret(Json& obj);

// A v1 Pod (a static pod from a file): the namespace and SetDefaults_PodSpec.
void default_pod(Json& obj);

// core/v1 SetDefaults_PodSpec and the container, probe, port, env and volume
// defaults under it.
void default_pod_spec(Json& spec);

// SetDefaults_Container's rule: Always for ":latest" or untagged images,
// IfNotPresent otherwise (a digest counts as a tag).
const char* default_image_pull_policy(const std::string& image);

}  // namespace daemonlet
