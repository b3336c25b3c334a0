// `daemonlet-image pull`: an image from its registry into the local image
// store. The manifest (an index: this machine's manifest chosen by core's
// select_platform), the config and the layers are fetched through
// RegistryClient into a staging directory under the store's tmp/, each
// checked against its digest and size as it arrives, written as an OCI
// image layout archive and committed by ImageStore::import_archive, which
// verifies them again and unpacks the layers: a pull is an import whose
// archive came from the network, and a failed pull leaves the store as it
// was.
#pragma once

#include <string>
#include <vector>

#include "core/oci_image.h"
#include "core/result.h"
#include "platform/image_store.h"
#include "platform/registry_client.h"

namespace daemonlet::platform {

// Pulls `reference` (as a pod spec names it: "busybox", "host:5000/x:1",
// "x@sha256:...") for `platform` into `store` (opened kImport, its lock
// held). Errors carry RegistryClient's codes; `warnings` gets what is worth
// telling and not fatal.
Result<std::vector<ImportedImage>> pull_image(ImageStore& store, const Platform& platform,
                                              const std::string& reference, const RegistryOptions& options,
                                              std::vector<std::string>& warnings);

}  // namespace daemonlet::platform
