// The JSON columns: labels, taints and container statuses as the store
// writes them. Encoding is deterministic (fixed key order, sorted labels), so
// that equal values give equal text and a put can compare stored text with
// the text it would write. Decoding never throws; a row that does not decode
// is reported as corrupt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/pod.h"
#include "core/result.h"

namespace daemonlet::store::codec {

std::string encode_labels(const Labels& labels);
Result<Labels> decode_labels(std::string_view text);

std::string encode_taints(const std::vector<Taint>& taints);
Result<std::vector<Taint>> decode_taints(std::string_view text);

// One JSON array for both kinds: init containers first, each marked
// "init": true, so rows written before init containers existed read back
// unchanged and no migration is needed. The pod's deletion grace
// (PodRecord::deletion_grace_seconds) goes with each container's entry
// when set; a row without it reads back as none.
std::string encode_containers(const std::vector<ContainerStatus>& containers,
                              const std::vector<ContainerStatus>& init_containers = {},
                              std::optional<std::int64_t> deletion_grace_seconds = std::nullopt);
Result<std::vector<ContainerStatus>> decode_containers(
    std::string_view text, std::vector<ContainerStatus>* init_containers = nullptr,
    std::optional<std::int64_t>* deletion_grace_seconds = nullptr);

// A JSON array of strings (a pod's IPs); `column` names it in errors.
std::string encode_strings(const std::vector<std::string>& values);
Result<std::vector<std::string>> decode_strings(std::string_view column, std::string_view text);

Result<PodPhase> decode_phase(std::string_view text);

}  // namespace daemonlet::store::codec
