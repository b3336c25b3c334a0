#include "core/oci_image.h"

#include <nlohmann/json.hpp>

#include "core/image_reference.h"

namespace daemonlet {

namespace {

using UnorderedJson = nlohmann::json;

constexpr int kMaxJsonDepth = 32;

Error bad(const std::string& what, const std::string& field, const std::string& reason) {
    return Error{ErrorCode::Invalid, what + ": " + (field.empty() ? "" : field + ": ") + reason};
}

// Parses a bounded JSON document without exceptions escaping.
Result<UnorderedJson> parse_json(std::string_view text, const std::string& what) {
    if (text.size() > kMaxImageJsonBytes)
        return bad(what, "", "larger than " + std::to_string(kMaxImageJsonBytes) + " bytes");
    bool too_deep = false;
    auto cb = [&](int depth, UnorderedJson::parse_event_t, UnorderedJson&) {
        if (depth > kMaxJsonDepth) too_deep = true;
        return !too_deep;
    };
    UnorderedJson j;
    try {
        j = UnorderedJson::parse(text.begin(), text.end(), cb);
    } catch (const UnorderedJson::exception& e) {
        std::string msg = e.what();
        if (auto at = msg.find("] "); at != std::string::npos) msg = msg.substr(at + 2);
        return bad(what, "", "not JSON: " + msg);
    }
    if (too_deep) return bad(what, "", "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    return j;
}

// An optional string field: absent or null is empty.
Result<std::string> opt_string(const UnorderedJson& obj, const char* key, const std::string& what,
                               const std::string& prefix) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::string();
    if (!it->is_string()) return bad(what, prefix + key, "must be a string");
    return it->get<std::string>();
}

// An optional array of strings: absent or null is empty (config.md: Cmd
// and Entrypoint are null in many images).
Result<std::vector<std::string>> opt_strings(const UnorderedJson& obj, const char* key,
                                             const std::string& what, const std::string& prefix) {
    std::vector<std::string> out;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return out;
    if (!it->is_array()) return bad(what, prefix + key, "must be an array of strings");
    for (std::size_t i = 0; i < it->size(); ++i) {
        const UnorderedJson& v = (*it)[i];
        if (!v.is_string())
            return bad(what, prefix + key + "[" + std::to_string(i) + "]", "must be a string");
        out.push_back(v.get<std::string>());
    }
    return out;
}

Status check_schema_version(const UnorderedJson& j, const std::string& what) {
    auto it = j.find("schemaVersion");
    if (it == j.end()) return bad(what, "schemaVersion", "required");
    if (!it->is_number_integer() || it->get<std::int64_t>() != 2)
        return bad(what, "schemaVersion", "must be 2 (got " + it->dump() + ")");
    return Ok{};
}

Result<Platform> parse_platform(const UnorderedJson& j, const std::string& what, const std::string& field) {
    if (!j.is_object()) return bad(what, field, "must be an object");
    const std::string pre = field.empty() ? "" : field + ".";
    auto os = opt_string(j, "os", what, pre);
    if (!os.ok()) return os.error();
    auto arch = opt_string(j, "architecture", what, pre);
    if (!arch.ok()) return arch.error();
    auto variant = opt_string(j, "variant", what, pre);
    if (!variant.ok()) return variant.error();
    if (os.value().empty()) return bad(what, pre + "os", "required");
    if (arch.value().empty()) return bad(what, pre + "architecture", "required");
    return Platform{os.value(), arch.value(), variant.value()};
}

// descriptor.md: mediaType, digest and size are required.
Result<Descriptor> parse_descriptor(const UnorderedJson& j, const std::string& what,
                                    const std::string& field) {
    if (!j.is_object()) return bad(what, field, "must be an object");
    Descriptor d;
    auto mt = opt_string(j, "mediaType", what, field + ".");
    if (!mt.ok()) return mt.error();
    if (mt.value().empty()) return bad(what, field + ".mediaType", "required");
    d.media_type = mt.value();
    auto dg = opt_string(j, "digest", what, field + ".");
    if (!dg.ok()) return dg.error();
    if (dg.value().empty()) return bad(what, field + ".digest", "required");
    if (std::string why = digest_error(dg.value()); !why.empty())
        return bad(what, field + ".digest", why + " (\"" + dg.value() + "\")");
    if (!is_sha256_digest(dg.value()))
        return bad(what, field + ".digest", "only sha256 digests are supported (\"" + dg.value() + "\")");
    d.digest = dg.value();
    auto size = j.find("size");
    if (size == j.end()) return bad(what, field + ".size", "required");
    if (!size->is_number_integer() || size->get<std::int64_t>() < 0)
        return bad(what, field + ".size", "must be a non-negative integer (got " + size->dump() + ")");
    d.size = size->get<std::int64_t>();
    if (auto p = j.find("platform"); p != j.end() && !p->is_null()) {
        auto plat = parse_platform(*p, what, field + ".platform");
        if (!plat.ok()) return plat.error();
        d.platform = plat.value();
    }
    if (auto a = j.find("annotations"); a != j.end() && !a->is_null()) {
        if (!a->is_object()) return bad(what, field + ".annotations", "must be an object of strings");
        for (const auto& [k, v] : a->items()) {
            if (!v.is_string()) return bad(what, field + ".annotations." + k, "must be a string");
            d.annotations[k] = v.get<std::string>();
        }
    }
    return d;
}

}  // namespace

bool is_manifest_media_type(std::string_view m) {
    return m == media_type::kOciManifest || m == media_type::kDockerManifest;
}
bool is_index_media_type(std::string_view m) {
    return m == media_type::kOciIndex || m == media_type::kDockerManifestList;
}

namespace {

struct Document {
    UnorderedJson json;
    std::string media_type;  // empty when absent
};

// The head an index and a manifest share: a JSON object, schemaVersion 2,
// and a mediaType of their kind when present (image-index.md and
// manifest.md: mediaType SHOULD be set; when set, it must be the kind's).
Result<Document> open_document(std::string_view json, const std::string& what, const char* kind,
                               bool (*is_kind)(std::string_view)) {
    auto parsed = parse_json(json, what);
    if (!parsed.ok()) return parsed.error();
    Document d{std::move(parsed).value(), {}};
    if (!d.json.is_object()) return bad(what, "", std::string("an ") + kind + " must be a JSON object");
    if (auto st = check_schema_version(d.json, what); !st.ok()) return st.error();
    auto mt = opt_string(d.json, "mediaType", what, "");
    if (!mt.ok()) return mt.error();
    if (!mt.value().empty() && !is_kind(mt.value()))
        return bad(what, "mediaType", "\"" + mt.value() + "\" is not an " + kind + " media type");
    d.media_type = mt.value();
    return d;
}

}  // namespace

Result<LayerCompression> layer_compression(std::string_view m) {
    if (m == media_type::kOciLayer) return LayerCompression::kNone;
    if (m == media_type::kOciLayerGzip || m == media_type::kDockerLayerGzip) return LayerCompression::kGzip;
    if (m == media_type::kOciLayerZstd) return LayerCompression::kZstd;
    if (m.find("nondistributable") != std::string_view::npos || m.find("foreign") != std::string_view::npos)
        return Error{ErrorCode::Unsupported,
                     "layer media type " + std::string(m) +
                         ": non-distributable layers are fetched from elsewhere; this store "
                         "imports only layers carried by the archive"};
    return Error{ErrorCode::Unsupported,
                 "layer media type " + std::string(m) + " is not a layer type this store unpacks"};
}

Result<ImageIndex> parse_image_index(std::string_view json, const std::string& what) {
    auto head = open_document(json, what, "image index", is_index_media_type);
    if (!head.ok()) return head.error();
    const UnorderedJson& j = head.value().json;
    ImageIndex index;
    index.media_type =
        head.value().media_type.empty() ? std::string(media_type::kOciIndex) : head.value().media_type;
    auto it = j.find("manifests");
    if (it == j.end() || !it->is_array()) return bad(what, "manifests", "required, an array");
    if (it->size() > kMaxIndexManifests)
        return bad(what, "manifests", "more than " + std::to_string(kMaxIndexManifests) + " entries");
    for (std::size_t i = 0; i < it->size(); ++i) {
        std::string field = "manifests[" + std::to_string(i) + "]";
        auto d = parse_descriptor((*it)[i], what, field);
        if (!d.ok()) return d.error();
        index.manifests.push_back(std::move(d).value());
    }
    return index;
}

Result<ImageManifest> parse_image_manifest(std::string_view json, const std::string& what,
                                           std::string_view expected_media_type) {
    auto head = open_document(json, what, "image manifest", is_manifest_media_type);
    if (!head.ok()) return head.error();
    const UnorderedJson& j = head.value().json;
    const std::string& mt = head.value().media_type;
    ImageManifest m;
    m.media_type = mt.empty() ? std::string(media_type::kOciManifest) : mt;
    if (!expected_media_type.empty() && !mt.empty() && mt != expected_media_type)
        return bad(
            what, "mediaType",
            "\"" + mt + "\" differs from the descriptor's \"" + std::string(expected_media_type) + "\"");
    auto cfg = j.find("config");
    if (cfg == j.end()) return bad(what, "config", "required");
    auto config = parse_descriptor(*cfg, what, "config");
    if (!config.ok()) return config.error();
    if (config.value().media_type != media_type::kOciConfig &&
        config.value().media_type != media_type::kDockerConfig)
        return bad(
            what, "config.mediaType",
            "\"" + config.value().media_type + "\" is not an image config (an artifact, not an image?)");
    m.config = std::move(config).value();
    auto layers = j.find("layers");
    if (layers == j.end() || !layers->is_array()) return bad(what, "layers", "required, an array");
    if (layers->size() > kMaxImageLayers)
        return bad(what, "layers", "more than " + std::to_string(kMaxImageLayers) + " layers");
    for (std::size_t i = 0; i < layers->size(); ++i) {
        std::string field = "layers[" + std::to_string(i) + "]";
        auto d = parse_descriptor((*layers)[i], what, field);
        if (!d.ok()) return d.error();
        if (auto c = layer_compression(d.value().media_type); !c.ok())
            return bad(what, field + ".mediaType", c.error().message);
        m.layers.push_back(std::move(d).value());
    }
    return m;
}

Result<ImageConfig> parse_image_config(std::string_view json, const std::string& what) {
    auto parsed = parse_json(json, what);
    if (!parsed.ok()) return parsed.error();
    const UnorderedJson& j = parsed.value();
    if (!j.is_object()) return bad(what, "", "an image config must be a JSON object");
    ImageConfig c;
    auto plat = parse_platform(j, what, "");
    if (!plat.ok()) return plat.error();
    c.platform = plat.value();
    if (auto cfg = j.find("config"); cfg != j.end() && !cfg->is_null()) {
        if (!cfg->is_object()) return bad(what, "config", "must be an object");
        auto user = opt_string(*cfg, "User", what, "config.");
        if (!user.ok()) return user.error();
        auto wd = opt_string(*cfg, "WorkingDir", what, "config.");
        if (!wd.ok()) return wd.error();
        auto env = opt_strings(*cfg, "Env", what, "config.");
        if (!env.ok()) return env.error();
        auto ep = opt_strings(*cfg, "Entrypoint", what, "config.");
        if (!ep.ok()) return ep.error();
        auto cmd = opt_strings(*cfg, "Cmd", what, "config.");
        if (!cmd.ok()) return cmd.error();
        for (std::size_t i = 0; i < env.value().size(); ++i) {
            const std::string& e = env.value()[i];
            // config.md: Env entries are VARNAME=VARVALUE.
            if (e.find('=') == std::string::npos || e.front() == '=')
                return bad(what, "config.Env[" + std::to_string(i) + "]", "\"" + e + "\" is not NAME=value");
        }
        c.user = user.value();
        c.working_dir = wd.value();
        c.env = env.value();
        c.entrypoint = ep.value();
        c.cmd = cmd.value();
    }
    auto rootfs = j.find("rootfs");
    if (rootfs == j.end() || !rootfs->is_object()) return bad(what, "rootfs", "required, an object");
    auto type = opt_string(*rootfs, "type", what, "rootfs.");
    if (!type.ok()) return type.error();
    if (type.value() != "layers") return bad(what, "rootfs.type", "must be \"layers\"");
    auto ids = opt_strings(*rootfs, "diff_ids", what, "rootfs.");
    if (!ids.ok()) return ids.error();
    if (ids.value().size() > kMaxImageLayers)
        return bad(what, "rootfs.diff_ids", "more than " + std::to_string(kMaxImageLayers) + " layers");
    for (std::size_t i = 0; i < ids.value().size(); ++i)
        if (!is_sha256_digest(ids.value()[i]))
            return bad(what, "rootfs.diff_ids[" + std::to_string(i) + "]",
                       "\"" + ids.value()[i] + "\" is not a sha256 digest");
    c.diff_ids = ids.value();
    return c;
}

Result<std::vector<DockerArchiveImage>> parse_docker_archive_manifest(std::string_view json,
                                                                      const std::string& what) {
    auto parsed = parse_json(json, what);
    if (!parsed.ok()) return parsed.error();
    const UnorderedJson& j = parsed.value();
    if (!j.is_array() || j.empty()) return bad(what, "", "must be a non-empty array of images");
    if (j.size() > kMaxIndexManifests)
        return bad(what, "", "more than " + std::to_string(kMaxIndexManifests) + " images");
    std::vector<DockerArchiveImage> out;
    for (std::size_t i = 0; i < j.size(); ++i) {
        std::string field = "[" + std::to_string(i) + "].";
        if (!j[i].is_object()) return bad(what, "[" + std::to_string(i) + "]", "must be an object");
        DockerArchiveImage img;
        auto config = opt_string(j[i], "Config", what, field);
        if (!config.ok()) return config.error();
        if (config.value().empty()) return bad(what, field + "Config", "required");
        auto tags = opt_strings(j[i], "RepoTags", what, field);
        if (!tags.ok()) return tags.error();
        auto layers = opt_strings(j[i], "Layers", what, field);
        if (!layers.ok()) return layers.error();
        if (layers.value().size() > kMaxImageLayers)
            return bad(what, field + "Layers", "more than " + std::to_string(kMaxImageLayers) + " layers");
        img.config = config.value();
        img.repo_tags = tags.value();
        img.layers = layers.value();
        out.push_back(std::move(img));
    }
    return out;
}

std::string platform_string(const Platform& p) {
    std::string s = p.os + "/" + p.architecture;
    if (!p.variant.empty()) s += "/" + p.variant;
    return s;
}

Platform host_platform(const std::string& goarch, const std::string& uname_machine) {
    Platform p{"linux", goarch, ""};
    if (goarch == "arm64") p.variant = "v8";
    if (goarch == "arm") {
        p.variant = "v7";
        if (uname_machine.rfind("armv", 0) == 0 && uname_machine.size() > 4 && uname_machine[4] >= '5' &&
            uname_machine[4] <= '8')
            p.variant = std::string("v") + uname_machine[4];
    }
    return p;
}

namespace {

// containerd platforms.Normalize: arm64's variant v8 is the default;
// arm's is v7.
std::string normal_variant(const Platform& p) {
    if (p.architecture == "arm64" && (p.variant.empty() || p.variant == "8")) return "v8";
    if (p.architecture == "arm" && p.variant.empty()) return "v7";
    return p.variant;
}

}  // namespace

Result<Descriptor> select_platform(const ImageIndex& index, const Platform& want, const std::string& what) {
    std::string want_variant = normal_variant(want);
    // Exact variant first, then (arm only) older variants, newest first.
    std::vector<std::string> acceptable{want_variant};
    if (want.architecture == "arm" && want_variant.size() == 2 && want_variant[0] == 'v')
        for (char v = static_cast<char>(want_variant[1] - 1); v >= '5'; --v)
            acceptable.push_back(std::string("v") + v);
    for (const std::string& variant : acceptable)
        for (const Descriptor& d : index.manifests) {
            if (!d.platform || d.platform->os != want.os || d.platform->architecture != want.architecture)
                continue;
            if (normal_variant(*d.platform) == variant) return d;
        }
    std::string has;
    for (const Descriptor& d : index.manifests) {
        if (!d.platform) continue;
        has += (has.empty() ? "" : ", ") + platform_string(*d.platform);
    }
    return Error{ErrorCode::NotFound,
                 what + ": no manifest for " +
                     platform_string(Platform{want.os, want.architecture, want_variant}) +
                     " (the index has " + (has.empty() ? "no platforms" : has) + ")"};
}

}  // namespace daemonlet
