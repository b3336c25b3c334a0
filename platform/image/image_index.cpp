#include "platform/image/image_index.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/image_reference.h"
#include "core/io_error.h"
#include "platform/fd.h"
#include "platform/file.h"

namespace daemonlet::platform {

namespace {

using UnorderedJson = nlohmann::json;

}  // namespace

Result<IndexKey> IndexKey::of(const std::string& reference) {
    IndexKey key;
    if (reference.rfind("sha256:", 0) == 0) {
        if (!is_sha256_digest(reference))
            return Error{ErrorCode::Invalid, "image reference \"" + reference + "\": invalid digest format"};
        key.digest = reference;
        return key;
    }
    auto ref = normalize_image_reference(reference);
    if (!ref.ok()) return ref.error();
    if (ref.value().digest.empty())
        key.name = ref.value().str();
    else
        key.digest = ref.value().digest;
    return key;
}

Status write_whole(const std::string& path, const std::string& text, bool sync) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) return io_error(path, "create");
    for (std::size_t done = 0; done < text.size();) {
        ssize_t w = ::write(fd.get(), text.data() + done, text.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return io_error(path, "write");
        done += static_cast<std::size_t>(w);
    }
    if (sync && ::fsync(fd.get()) != 0) return io_error(path, "fsync");
    return Ok{};
}

Result<std::vector<IndexEntry>> read_index(const std::string& path) {
    std::vector<IndexEntry> out;
    if (::access(path.c_str(), F_OK) != 0) return out;
    auto bytes = read_file(path, 16 * 1024 * 1024);
    if (!bytes.ok()) return bytes.error();
    UnorderedJson j = UnorderedJson::parse(bytes.value(), nullptr, false);
    if (!j.is_object() || !j.contains("images") || !j["images"].is_array())
        return Error{ErrorCode::Invalid, path + ": not an image index (no images array)"};
    for (const UnorderedJson& e : j["images"]) {
        if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("digest") ||
            !e["digest"].is_string() || !is_sha256_digest(e["digest"].get<std::string>()))
            return Error{ErrorCode::Invalid, path + ": an entry is not {name, digest}: " + e.dump()};
        // "imported" is optional (older indexes lack it); a wrong type reads as 0.
        std::int64_t imported = 0;
        if (auto it = e.find("imported"); it != e.end() && it->is_number_integer())
            imported = it->get<std::int64_t>();
        out.push_back({e["name"].get<std::string>(), e["digest"].get<std::string>(), imported});
    }
    return out;
}

Status write_index(const std::string& root, const std::vector<IndexEntry>& entries) {
    UnorderedJson images = UnorderedJson::array();
    for (const auto& e : entries)
        images.push_back({{"name", e.name}, {"digest", e.digest}, {"imported", e.imported}});
    std::string text = UnorderedJson{{"images", images}}.dump(2) + "\n";
    std::string tmp = root + "/images.json.tmp", path = root + "/images.json";
    if (auto st = write_whole(tmp, text, true); !st.ok()) return st;
    if (::rename(tmp.c_str(), path.c_str()) != 0) return io_error(path, "rename");
    Fd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0 || ::fsync(dir.get()) != 0) return io_error(root, "fsync");
    return Ok{};
}

}  // namespace daemonlet::platform
