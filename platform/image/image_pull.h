// `daemonlet-image pull`: an image from its registry into the local image
// store. The manifest (an index: this machine's manifest chosen by core's
// select_platform), the config and the layers are fetched through
// RegistryClient into a staging directory under the store's tmp/, each
// checked against its digest and size as it arrives, into an OCI image
// layout directory that ImageStore::import_layout commits, verifying them
// again and unpacking the layers with the checks of an archive's import: a
// pull is an import whose layout came from the network (no archive is
// written: that would need libarchive's writers, which bring libxml2 and
// ICU, docs/dependencies.md), and a failed pull leaves the store as it was.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/oci_image.h"
#include "core/result.h"
#include "platform/image/image_store.h"
#include "platform/image/registry_client.h"

namespace daemonlet::platform {

// Pulls `reference` (as a pod spec names it: "busybox", "host:5000/x:1",
// "x@sha256:...") for `platform` into the store at `store_root`. The
// download needs no lock: it is staged under <store_root>/pulls/ (its own
// directory, locked while it lives, so that a later pull removes only the
// leftovers of pulls that died); `commit` then imports the staged layout,
// taking the store's import lock (image_main.cpp). Errors carry
// RegistryClient's codes; `warnings` gets what is worth telling and not fatal.
using CommitPull = std::function<Result<std::vector<ImportedImage>>(const std::string& layout)>;
Result<std::vector<ImportedImage>> pull_image(const std::string& store_root, const Platform& platform,
                                              const std::string& reference, const RegistryOptions& options,
                                              const CommitPull& commit, std::vector<std::string>& warnings);

}  // namespace daemonlet::platform
