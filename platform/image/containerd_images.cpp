#include "platform/image/containerd_images.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/strings.h"
#include "platform/run_command.h"

namespace daemonlet::platform {

namespace {

// `ctr images ls` and `ctr images tag` read containerd's metadata only.
constexpr int kShortCtrDeadlineMs = 60 * 1000;

}  // namespace

std::vector<std::string> ctr_command(const CtrOptions& o, const std::vector<std::string>& args) {
    std::string address = o.address;
    if (address.rfind("unix://", 0) == 0) address = address.substr(7);
    std::vector<std::string> argv = {o.ctr,
                                     "--address",
                                     address,
                                     "--namespace",
                                     kCriNamespace,
                                     "--connect-timeout",
                                     std::to_string(o.connect_timeout_s) + "s"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

Result<std::vector<CtrImage>> parse_ctr_images(const std::string& output) {
    std::istringstream lines(output);
    std::string line;
    std::vector<CtrImage> out;
    bool header = false;
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        std::string ref, type, digest;
        if (!(fields >> ref)) continue;  // a blank line
        fields >> type >> digest;
        if (!header) {
            if (ref != "REF" || type != "TYPE" || digest != "DIGEST")
                return Error{ErrorCode::Invalid, "ctr images ls: unexpected header \"" + trim(line) +
                                                     "\" (expected REF TYPE DIGEST ...)"};
            header = true;
            continue;
        }
        if (digest.rfind("sha256:", 0) != 0)
            return Error{ErrorCode::Invalid, "ctr images ls: no digest in the row \"" + trim(line) + "\""};
        out.push_back({ref, digest});
    }
    if (!header && !output.empty()) return Error{ErrorCode::Invalid, "ctr images ls: no header"};
    return out;
}

Error ctr_error(const std::string& what, int exit_code, const std::string& stderr_text) {
    std::string why = trim(stderr_text);
    if (why.empty()) why = "exit status " + std::to_string(exit_code);
    const bool down = why.find("failed to dial") != std::string::npos;
    return Error{down ? ErrorCode::Unavailable : ErrorCode::CtrFailed, what + ": " + why};
}

Result<std::vector<CtrImage>> list_containerd_images(const CtrOptions& o) {
    auto r = run_command(ctr_command(o, {"images", "ls"}), kShortCtrDeadlineMs);
    if (!r) return Error{ErrorCode::CtrFailed, "ctr images ls: " + r.error().message};
    if (r.value().exit_code != 0) return ctr_error("ctr images ls", r.value().exit_code, r.value().err);
    return parse_ctr_images(r.value().out);
}

Result<std::vector<CtrImage>> import_into_containerd(const CtrOptions& o, const std::string& archive,
                                                     const std::vector<ImportedImage>& verified,
                                                     int deadline_ms) {
    if (std::none_of(verified.begin(), verified.end(),
                     [](const ImportedImage& i) { return !i.name.empty(); }))
        return Error{ErrorCode::Invalid,
                     archive +
                         ": no image in it has a name (an OCI layout's io.containerd.image.name "
                         "or full org.opencontainers.image.ref.name annotation, a docker-archive's "
                         "RepoTags): a pod could not name it"};
    // This machine's platform only (ctr's default), as verify_archive chose.
    std::vector<std::string> args = {"images", "import"};
    if (!o.snapshotter.empty()) args.insert(args.end(), {"--snapshotter", o.snapshotter});
    args.push_back(archive);
    auto r = run_command(ctr_command(o, args), deadline_ms);
    if (!r) return Error{ErrorCode::CtrFailed, archive + ": ctr images import: " + r.error().message};
    if (r.value().exit_code != 0)
        return ctr_error(archive + ": ctr images import", r.value().exit_code, r.value().err);
    auto listed = list_containerd_images(o);
    if (!listed) return Error{listed.error().code, archive + ": imported, but " + listed.error().message};
    std::map<std::string, std::string> digest_of;
    for (const CtrImage& i : listed.value()) digest_of[i.name] = i.digest;
    std::vector<CtrImage> out;
    for (const ImportedImage& image : verified) {
        if (image.name.empty()) continue;
        if (!digest_of.count(image.name) && !image.archive_name.empty() &&
            digest_of.count(image.archive_name)) {
            // ctr kept the archive's spelling: the CRI plugin resolves the
            // normalised one.
            auto t = run_command(ctr_command(o, {"images", "tag", "--force", image.archive_name, image.name}),
                                 kShortCtrDeadlineMs);
            if (!t) return Error{ErrorCode::CtrFailed, archive + ": ctr images tag: " + t.error().message};
            if (t.value().exit_code != 0)
                return ctr_error(archive + ": ctr images tag " + image.archive_name + " " + image.name,
                                 t.value().exit_code, t.value().err);
            digest_of[image.name] = digest_of[image.archive_name];
        }
        auto it = digest_of.find(image.name);
        if (it == digest_of.end())
            return Error{ErrorCode::CtrFailed, archive + ": ctr images import left no image named " +
                                                   image.name + " in containerd's " + kCriNamespace +
                                                   " namespace"};
        out.push_back({image.name, it->second});
    }
    return out;
}

}  // namespace daemonlet::platform
