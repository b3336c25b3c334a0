// A manifest file's DaemonSet as Sources gives it (sources.h), for the
// suites over DesiredDaemonSets: one object, shared while the file is
// unchanged (a new call is an edited file).
#pragma once

#include <memory>
#include <string>
#include <variant>

#include "agent/daemon/sources.h"
#include "core/manifest.h"
#include "core/source_merge.h"

#include <CppUTest/TestHarness.h>

namespace daemonlet::testing {

// /m/<name>.yaml: DaemonSet `name` in kube-system, labelled l=<label>, its
// one container running `image`; spec_extra: lines of its spec (indented
// two spaces).
inline agent::SourcedDaemonSet from_file(const std::string& name, const std::string& image,
                                         const std::string& label = "a", const std::string& spec_extra = "") {
    const std::string path = "/m/" + name + ".yaml";
    auto m = load_manifest("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: " + name +
                               ", namespace: kube-system, labels: {l: " + label + "}}\nspec:\n" + spec_extra +
                               "  selector: {matchLabels: {app: " + name +
                               "}}\n  template:\n    metadata: {labels: {app: " + name +
                               "}}\n    spec:\n      containers: [{name: c, image: " + image + "}]\n",
                           path);
    CHECK_TEXT(m.errors.empty(), m.errors.empty() ? "" : m.errors.front().to_string().c_str());
    return {std::make_shared<const DaemonSet>(std::get<DaemonSet>(m.objects.front().object)),
            DaemonSetSource::file(path)};
}

}  // namespace daemonlet::testing
