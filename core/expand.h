// Kubernetes variable references in env values, command and args:
// "$(VAR)" becomes VAR's value when VAR is defined, "$$" is an escaped "$",
// and an undefined "$(VAR)" stays as written (third_party/forked/golang/expansion,
// used by the kubelet).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace daemonlet {

std::string expand_vars(std::string_view input,
                        const std::function<std::optional<std::string>(const std::string&)>& lookup);

}  // namespace daemonlet
