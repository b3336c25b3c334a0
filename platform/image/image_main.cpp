// daemonlet-image: the local image store's command, run by the agent. Kept
// out of the agent's process because the store links libarchive (and loads
// libcurl for pulls): mapped by every agent, runc or not, they cost about
// 3 MiB of resident memory (docs/figures.md, "Memory of the libraries"). An
// import also takes as long as the archive is large, which the agent's
// event loop cannot wait for.
//
//   daemonlet-image import --store DIR FILE...
//       imports each archive; one JSON line per image: {"name", "digest"}
//   daemonlet-image list --store DIR
//       every image, as a JSON array of {"name", "digest", "size", "imported"}:
//       size the bytes of its blobs (manifest, config, layers as stored),
//       imported the seconds since the epoch of its import or pull
//   daemonlet-image remove --store DIR REF...
//       removes the images REF names (a digest: every name of it), then the
//       files no remaining image needs; one JSON line per image removed,
//       {"name", "digest", "bytes"} (bytes: its files no other image
//       needs), then {"bytesFreed", "keptMounted"}
//   daemonlet-image prune --store DIR [REF...]
//       removes every image that no REF (the images in use) names, then
//       the files no remaining image needs; the same lines as remove.
//       A layer that a mounted overlay uses is kept by both (keptMounted)
//   daemonlet-image prepare --store DIR --ref REF --rootfs DIR [--overlay DIR]
//       assembles REF's root filesystem in DIR (which must not exist or be
//       empty) and prints the image's config blob (config.md) as imported.
//       With --overlay, DIR is an overlay mount of the layers whose upper and
//       work directories are made in the --overlay directory (root only; the
//       mount stays when this command exits: the caller unmounts it). An
//       image of too many layers for overlay's options, or of none, is
//       copied, and said so on stderr.
//   daemonlet-image verify --store DIR FILE...
//       every check of import on each archive, in DIR's staging directory,
//       nothing kept; the same JSON lines as import
//   daemonlet-image import --store DIR --containerd ADDRESS [--ctr PATH]
//                          [--snapshotter NAME] FILE...
//   daemonlet-image list --store DIR --containerd ADDRESS [--ctr PATH]
//       runtime.type cri: each archive verified (DIR only stages it), then
//       imported into containerd's k8s.io namespace with ctr
//       (platform/image/containerd_images.h); list prints containerd's images.
//       When containerd does not answer the message is
//       "daemonlet-image: unavailable: <reason>"
//   daemonlet-image pull --store DIR [--auth-file FILE] [--certs-dir DIR]
//                        [--insecure HOST[,HOST...]] REF
//       pulls REF from its registry (platform/image/image_pull.h) and imports it;
//       the same JSON line as import. On failure the message is
//       "daemonlet-image: <code>: <reason>", code one of unauthorized,
//       not_found, unreachable, certificate, invalid, pull_failed
//
// Exit status: 0 done; 1 an error (the message, naming the file, field and
// reason, on stderr); 2 the image is not in the store (prepare); 64 usage.
#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/local_node.h"
#include "core/oci_image.h"
#include "platform/fd.h"
#include "platform/file.h"
#include "platform/image/containerd_images.h"
#include "platform/image/image_pull.h"
#include "platform/image/image_store.h"
#include "platform/system_info.h"

namespace {

using daemonlet::ErrorCode;
using daemonlet::Json;
using daemonlet::platform::ImageStore;
using daemonlet::platform::ImportedImage;

constexpr int kFailed = 1;
constexpr int kNotFound = 2;
constexpr int kUsage = 64;
// The agent's own deadline for an import (agent/daemon/images.cpp).
constexpr int kImportDeadlineMs = 30 * 60 * 1000;

const char* const kUsageText =
    "usage: daemonlet-image import --store DIR FILE...\n"
    "       daemonlet-image verify --store DIR FILE...\n"
    "       daemonlet-image list --store DIR\n"
    "       daemonlet-image import --store DIR --containerd ADDRESS [--ctr PATH] [--snapshotter NAME] "
    "FILE...\n"
    "       daemonlet-image list --store DIR --containerd ADDRESS [--ctr PATH]\n"
    "       daemonlet-image remove --store DIR REF...\n"
    "       daemonlet-image prune --store DIR [REF...]\n"
    "       daemonlet-image prepare --store DIR --ref REF --rootfs DIR [--overlay DIR]\n"
    "       daemonlet-image pull --store DIR [--auth-file FILE] [--certs-dir DIR] [--insecure HOST,...] "
    "REF\n";

struct Args {
    std::string verb;
    std::map<std::string, std::string> options;  // "--store" -> DIR
    std::vector<std::string> files;
};

// The verb, then --name VALUE options and plain arguments in any order.
bool parse_args(int argc, char** argv, Args& out) {
    if (argc < 2) return false;
    out.verb = argv[1];
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--", 0) == 0) {
            if (i + 1 >= argc) return false;
            out.options[a] = argv[++i];
        } else {
            out.files.push_back(std::move(a));
        }
    }
    return true;
}

int fail(const std::string& message) {
    std::cerr << "daemonlet-image: " << message << "\n";
    return kFailed;
}

Json image_line(const ImportedImage& image) {
    return Json{{"name", image.name}, {"digest", image.manifest_digest}};
}

// The bytes of the image's blobs, as its descriptors say.
std::int64_t blob_bytes(const ImportedImage& image) {
    std::int64_t size = image.manifest.config.size;
    for (const auto& l : image.manifest.layers) size += l.size;
    return size;
}

// One import at a time per store, whoever runs it (the agent, or an
// operator by hand): held until this process exits.
daemonlet::Status lock_store(const std::string& root, std::optional<daemonlet::platform::Fd>& lock) {
    std::error_code ec;
    std::filesystem::create_directories(root, ec);
    if (ec) return daemonlet::Error{ErrorCode::PullFailed, "image store " + root + ": " + ec.message()};
    const std::string lock_path = root + "/import.lock";
    lock.emplace(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (lock->get() < 0 || ::flock(lock->get(), LOCK_EX) != 0)
        return daemonlet::Error{ErrorCode::PullFailed, lock_path + ": cannot lock: " + std::strerror(errno)};
    return daemonlet::Ok{};
}

// import or verify: each archive in turn, one JSON line per image; the
// first failure ends it.
int import_files(ImageStore& store, const std::vector<std::string>& files, bool verify_only) {
    for (const auto& file : files) {
        auto images = verify_only ? store.verify_archive(file) : store.import_archive(file);
        if (!images) return fail(images.error().message);
        for (const auto& image : images.value()) std::cout << image_line(image).dump() << "\n";
    }
    return 0;
}

// The agent tells containerd being down (tried again later) from a bad
// archive (tried again when the file changes) by the code.
int fail_ctr(const daemonlet::Error& e) {
    return fail(e.code == ErrorCode::Unavailable ? "unavailable: " + e.message : e.message);
}

// An archive goes to containerd only once our checks passed: a damaged one
// is refused with our error, and containerd never sees it.
int import_to_containerd(ImageStore& scratch, const daemonlet::platform::CtrOptions& ctr,
                         const std::vector<std::string>& files) {
    // containerd first: while it is down the agent asks again and again,
    // and each time an archive's verification would read it whole.
    if (auto up = daemonlet::platform::list_containerd_images(ctr); !up) return fail_ctr(up.error());
    for (const auto& file : files) {
        auto verified = scratch.verify_archive(file);
        if (!verified) return fail(verified.error().message);
        auto imported =
            daemonlet::platform::import_into_containerd(ctr, file, verified.value(), kImportDeadlineMs);
        if (!imported) return fail_ctr(imported.error());
        for (const auto& image : imported.value())
            std::cout << Json{{"name", image.name}, {"digest", image.digest}}.dump() << "\n";
    }
    return 0;
}

int list_containerd(const daemonlet::platform::CtrOptions& ctr) {
    auto images = daemonlet::platform::list_containerd_images(ctr);
    if (!images) return fail_ctr(images.error());
    Json out = Json::array();
    for (const auto& image : images.value()) out.push_back({{"name", image.name}, {"digest", image.digest}});
    std::cout << out.dump() << "\n";
    return 0;
}

int list(const ImageStore& store) {
    auto images = store.list();
    if (!images) return fail(images.error().message);
    Json out = Json::array();
    for (const auto& image : images.value()) {
        out.push_back(image_line(image));
        out.back()["size"] = blob_bytes(image);
        out.back()["imported"] = image.imported;
    }
    std::cout << out.dump() << "\n";
    return 0;
}

int print_collection(const daemonlet::Result<daemonlet::platform::Collection>& done) {
    if (!done) {
        if (done.error().code == ErrorCode::NotFound) {
            std::cerr << "daemonlet-image: " << done.error().message << "\n";
            return kNotFound;
        }
        return fail(done.error().message);
    }
    for (const auto& r : done.value().removed)
        std::cout << Json{{"name", r.name}, {"digest", r.digest}, {"bytes", r.bytes}}.dump() << "\n";
    std::cout
        << Json{{"bytesFreed", done.value().bytes_freed}, {"keptMounted", done.value().kept_mounted}}.dump()
        << "\n";
    return 0;
}

// The overlay when asked and it fits, else the copy.
daemonlet::Status assemble(const ImageStore& store, const ImportedImage& image, const std::string& rootfs,
                           const std::string& overlay_dir) {
    if (overlay_dir.empty()) return store.assemble_rootfs(image, rootfs);
    auto mounted = store.mount_rootfs(image, rootfs, overlay_dir);
    if (mounted || (mounted.error().code != ErrorCode::TooLong && mounted.error().code != ErrorCode::NoLayer))
        return mounted;
    std::cerr << "daemonlet-image: " << mounted.error().message << ": copying the layers instead\n";
    return store.assemble_rootfs(image, rootfs);
}

int prepare(const ImageStore& store, const std::string& reference, const std::string& rootfs,
            const std::string& overlay_dir) {
    auto image = store.find(reference);
    if (!image) {
        if (image.error().code == ErrorCode::NotFound) {
            std::cerr << "daemonlet-image: image \"" << reference << "\" is not in the image store "
                      << store.root() << "\n";
            return kNotFound;
        }
        return fail(image.error().message);
    }
    // The config blob as imported (its digest was verified then): what
    // core's parse_image_config reads on the agent's side.
    const std::string config_blob = store.blob_path(image.value().manifest.config.digest);
    auto config = daemonlet::platform::read_file(config_blob, daemonlet::kMaxImageJsonBytes);
    if (!config) return fail(config_blob + ": " + config.error().message);
    if (auto s = assemble(store, image.value(), rootfs, overlay_dir); !s) return fail(s.error().message);
    std::cout << config.value() << "\n";
    return 0;
}

// The error's code first, for the agent (RuncRuntime::pull_image). The
// download takes no lock; the import of what it staged takes the store's.
int pull(const std::string& root, const daemonlet::Platform& platform, const std::string& reference,
         std::map<std::string, std::string>& options) {
    daemonlet::platform::RegistryOptions registry;
    registry.auth_file = options["--auth-file"];
    registry.certs_dir = options["--certs-dir"];
    const std::string insecure = options["--insecure"];
    for (std::size_t start = 0; start < insecure.size();) {
        std::size_t end = insecure.find(',', start);
        if (end == std::string::npos) end = insecure.size();
        if (end > start) registry.insecure_registries.push_back(insecure.substr(start, end - start));
        start = end + 1;
    }
    std::optional<daemonlet::platform::Fd> lock;
    auto commit = [&](const std::string& layout) -> daemonlet::Result<std::vector<ImportedImage>> {
        auto locked = lock_store(root, lock);
        if (!locked) return locked.error();
        auto store = ImageStore::open(root, platform, ImageStore::Mode::kImport);
        if (!store)
            return daemonlet::Error{ErrorCode::PullFailed,
                                    "image store " + root + ": " + store.error().message};
        return store.value().import_layout(layout);
    };
    std::vector<std::string> warnings;
    auto pulled = daemonlet::platform::pull_image(root, platform, reference, registry, commit, warnings);
    for (const auto& w : warnings) std::cerr << "daemonlet-image: warning: " << w << "\n";
    if (!pulled) {
        std::cerr << "daemonlet-image: " << pulled.error().code_name() << ": " << pulled.error().message
                  << "\n";
        return kFailed;
    }
    for (const auto& image : pulled.value()) std::cout << image_line(image).dump() << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    if (!parse_args(argc, argv, args) || args.options.count("--store") == 0) {
        std::cerr << kUsageText;
        return kUsage;
    }
    for (const auto& [name, value] : args.options)
        if (name != "--store" && name != "--ref" && name != "--rootfs" && name != "--overlay" &&
            name != "--auth-file" && name != "--certs-dir" && name != "--insecure" &&
            name != "--containerd" && name != "--ctr" && name != "--snapshotter") {
            std::cerr << "daemonlet-image: unknown option " << name << "\n" << kUsageText;
            return kUsage;
        }
    const bool is_import = args.verb == "import", is_list = args.verb == "list",
               is_prepare = args.verb == "prepare", is_pull = args.verb == "pull",
               is_verify = args.verb == "verify", is_remove = args.verb == "remove",
               is_prune = args.verb == "prune";
    const bool containerd = args.options.count("--containerd") > 0;
    // Removals change the store as imports do: the same lock, held alike. A
    // verification stages in the store's tmp/, which an import's open
    // empties: it takes the lock too.
    const bool writes = is_import || is_verify || is_remove || is_prune;
    if ((is_import && args.files.empty()) || (is_list && !args.files.empty()) ||
        (is_verify && args.files.empty()) ||
        ((containerd || args.options.count("--ctr")) && !is_import && !is_list) ||
        (args.options.count("--ctr") && !containerd) ||
        (args.options.count("--snapshotter") && !containerd) ||
        (is_prepare &&
         (!args.files.empty() || !args.options.count("--ref") || !args.options.count("--rootfs"))) ||
        (!is_prepare && args.options.count("--overlay")) || (is_pull && args.files.size() != 1) ||
        (is_remove && args.files.empty()) ||
        (!is_import && !is_list && !is_prepare && !is_pull && !is_verify && !is_remove && !is_prune)) {
        std::cerr << kUsageText;
        return kUsage;
    }
    const std::string machine = daemonlet::platform::machine();
    const std::string root = args.options["--store"];
    // One import at a time per store, whoever runs it (the agent, or an
    // operator by hand): held until this process exits. Readers take no
    // lock, so that a container's start never waits for an import.
    daemonlet::platform::CtrOptions ctr;
    if (containerd) {
        ctr.address = args.options["--containerd"];
        if (args.options.count("--ctr")) ctr.ctr = args.options["--ctr"];
        ctr.snapshotter = args.options["--snapshotter"];
        if (is_list) return list_containerd(ctr);
    }
    std::optional<daemonlet::platform::Fd> lock;
    if (writes)
        if (auto locked = lock_store(root, lock); !locked) return fail(locked.error().message);
    const daemonlet::Platform platform =
        daemonlet::host_platform(daemonlet::goarch_from_machine(machine), machine);
    if (is_pull) return pull(root, platform, args.files.front(), args.options);
    auto store =
        ImageStore::open(root, platform, writes ? ImageStore::Mode::kImport : ImageStore::Mode::kRead);
    if (!store) return fail("image store " + root + ": " + store.error().message);
    if (is_import && containerd) return import_to_containerd(store.value(), ctr, args.files);
    if (is_import || is_verify) return import_files(store.value(), args.files, is_verify);
    if (is_list) return list(store.value());
    if (is_remove) return print_collection(store.value().remove_images(args.files));
    if (is_prune) return print_collection(store.value().prune(args.files));
    return prepare(store.value(), args.options["--ref"], args.options["--rootfs"], args.options["--overlay"]);
}
