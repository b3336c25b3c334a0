#include "platform/image/image_pull.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/image_reference.h"
#include "core/json.h"
#include "core/registry_auth.h"
#include "platform/fd.h"
#include "platform/image/sha256.h"

namespace daemonlet::platform {

namespace {

// Removes the staging directory whichever way the pull ends.
struct StagingDir {
    std::string path;
    ~StagingDir() {
        std::error_code ec;
        if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
};

// The staging directories of pulls that died (killed with the agent):
// nobody holds their alive.lock.
void remove_dead_pulls(const std::string& pulls) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(pulls, ec)) {
        const std::string lock = e.path().string() + "/alive.lock";
        Fd fd(::open(lock.c_str(), O_RDWR | O_CLOEXEC));
        if (fd.get() >= 0 && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // alive
        std::error_code rm;
        std::filesystem::remove_all(e.path(), rm);
    }
}

std::string media_type_of(const std::string& content_type) {
    std::string t = content_type.substr(0, content_type.find(';'));
    while (!t.empty() && t.back() == ' ') t.pop_back();
    return t;
}

Result<std::string> sha256_of(const std::string& text) {
    auto h = Sha256::create();
    if (!h) return h.error();
    h.value().update(text.data(), text.size());
    return h.value().finish();
}

Status write_text(const std::string& path, const std::string& text) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) return Error{ErrorCode::PullFailed, path + ": create: " + std::strerror(errno)};
    for (std::size_t done = 0; done < text.size();) {
        ssize_t w = ::write(fd.get(), text.data() + done, text.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return Error{ErrorCode::PullFailed, path + ": write: " + std::strerror(errno)};
        done += static_cast<std::size_t>(w);
    }
    return Ok{};
}

struct Puller {
    RegistryClient& client;
    std::string what;    // "image <ref>", for messages
    std::string layout;  // staging: oci-layout, index.json, blobs/sha256/

    Error invalid(const std::string& reason) const {
        return Error{ErrorCode::Invalid, what + ": registry " + client.host() + ": " + reason};
    }

    // A JSON document (manifest or index) by tag or digest, checked against
    // `digest` when known, else against Docker-Content-Digest when sent.
    Result<std::pair<std::string, Descriptor>> document(const std::string& ref, const Descriptor* expected) {
        std::string body;
        auto r = client.get_to_string("manifests/" + ref, manifest_accept_header(), body, kMaxImageJsonBytes);
        if (!r) return Error{r.error().code, what + ": " + r.error().message};
        auto digest = sha256_of(body);
        if (!digest) return digest.error();
        const std::string want = expected                       ? expected->digest
                                 : ref.rfind("sha256:", 0) == 0 ? ref
                                                                : r.value().docker_content_digest;
        if (!want.empty() && want != digest.value())
            return invalid("manifests/" + ref + ": digest mismatch: the content's is " + digest.value() +
                           ", expected " + want);
        if (expected && expected->size != static_cast<std::int64_t>(body.size()))
            return invalid("manifests/" + ref + ": size is " + std::to_string(body.size()) +
                           " bytes, the index says " + std::to_string(expected->size));
        Descriptor d;
        d.digest = digest.value();
        d.size = static_cast<std::int64_t>(body.size());
        d.media_type = media_type_of(r.value().content_type);
        Json j = Json::parse(body, nullptr, false);
        if (!j.is_object()) return invalid("manifests/" + ref + ": not a JSON object");
        // The document's own mediaType wins over a generic Content-Type.
        if (j.contains("mediaType") && j["mediaType"].is_string())
            d.media_type = j["mediaType"].get<std::string>();
        if (!is_index_media_type(d.media_type) && !is_manifest_media_type(d.media_type))
            d.media_type =
                std::string(j.contains("manifests") ? media_type::kOciIndex : media_type::kOciManifest);
        return std::pair{std::move(body), std::move(d)};
    }

    Status blob(const Descriptor& d) {
        if (!is_sha256_digest(d.digest)) return invalid(d.digest + ": not a sha256 digest");
        const std::string member = "blobs/sha256/" + hex_of(d.digest);
        const std::string file = layout + "/" + member;
        std::string got;
        auto r = client.get_to_file("blobs/" + d.digest, file, d.size, got);
        if (!r) return Error{r.error().code, what + ": " + r.error().message};
        struct stat st {};
        ::stat(file.c_str(), &st);
        if (st.st_size != d.size)
            return invalid("blobs/" + d.digest + ": size is " + std::to_string(st.st_size) +
                           " bytes, the manifest says " + std::to_string(d.size));
        if (got != d.digest)
            return invalid("blobs/" + d.digest + ": digest mismatch: the content's is " + got);
        return Ok{};
    }
};

}  // namespace

Result<std::vector<ImportedImage>> pull_image(const std::string& store_root, const Platform& platform,
                                              const std::string& reference, const RegistryOptions& options,
                                              const CommitPull& commit, std::vector<std::string>& warnings) {
    auto ref = normalize_image_reference(reference);
    if (!ref) return Error{ErrorCode::Invalid, "image \"" + reference + "\": " + ref.error().message};
    const std::string what = "image " + ref.value().str();
    auto client = RegistryClient::open(ref.value().domain, ref.value().path, options);
    if (!client) return Error{client.error().code, what + ": " + client.error().message};
    for (const auto& w : client.value().warnings()) warnings.push_back(w);

    const std::string pulls = store_root + "/pulls";
    std::error_code ec;
    std::filesystem::create_directories(pulls, ec);
    if (ec) return Error{ErrorCode::PullFailed, pulls + ": " + ec.message()};
    remove_dead_pulls(pulls);
    StagingDir staging{pulls + "/pull-XXXXXX"};
    if (!::mkdtemp(staging.path.data())) {
        std::string failed = staging.path;
        staging.path.clear();
        return Error{ErrorCode::PullFailed, failed + ": mkdtemp: " + std::strerror(errno)};
    }
    // Held while this pull lives: a later pull sees it is not dead.
    Fd alive(::open((staging.path + "/alive.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (alive.get() < 0 || ::flock(alive.get(), LOCK_EX | LOCK_NB) != 0)
        return Error{ErrorCode::PullFailed, staging.path + "/alive.lock: " + std::strerror(errno)};
    Puller p{client.value(), what, staging.path + "/layout"};
    std::filesystem::create_directories(p.layout + "/blobs/sha256", ec);
    if (ec) return Error{ErrorCode::PullFailed, p.layout + ": " + ec.message()};

    auto top = p.document(ref.value().digest.empty() ? ref.value().tag : ref.value().digest, nullptr);
    if (!top) return top.error();
    auto [body, desc] = std::move(top).value();
    if (is_index_media_type(desc.media_type)) {
        auto index = parse_image_index(body, what + ": its index");
        if (!index) return Error{ErrorCode::Invalid, index.error().message};
        auto chosen = select_platform(index.value(), platform, what + ": its index");
        if (!chosen) return Error{ErrorCode::NotFound, chosen.error().message};
        auto m = p.document(chosen.value().digest, &chosen.value());
        if (!m) return m.error();
        body = std::move(m.value().first);
        desc = std::move(m.value().second);
        desc.media_type = chosen.value().media_type;
    }
    auto manifest = parse_image_manifest(body, what + ": its manifest", desc.media_type);
    if (!manifest) return Error{ErrorCode::Invalid, manifest.error().message};
    if (auto s = write_text(p.layout + "/blobs/sha256/" + hex_of(desc.digest), body); !s) return s.error();
    if (auto s = p.blob(manifest.value().config); !s) return s.error();
    for (const Descriptor& layer : manifest.value().layers)
        if (auto s = p.blob(layer); !s) return s.error();

    // The layout names the image as containerd's export does, so that the
    // import records it under the reference the pod spec gave.
    Json index = {
        {"schemaVersion", 2},
        {"mediaType", media_type::kOciIndex},
        {"manifests", Json::array({{{"mediaType", desc.media_type},
                                    {"digest", desc.digest},
                                    {"size", desc.size},
                                    {"annotations", {{"io.containerd.image.name", ref.value().str()}}}}})}};
    if (auto s = write_text(p.layout + "/index.json", index.dump()); !s) return s.error();
    if (auto s = write_text(p.layout + "/oci-layout", R"({"imageLayoutVersion": "1.0.0"})"); !s)
        return s.error();
    auto imported = commit(p.layout);
    if (!imported) return Error{ErrorCode::Invalid, what + ": " + imported.error().message};
    return imported;
}

}  // namespace daemonlet::platform
