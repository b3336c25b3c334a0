// Volume validation: ValidateVolumes and validateVolumeSource from
// pkg/apis/core/validation/validation.go, Kubernetes 1.25 to 1.30.
//
// Every volume names exactly one source. The sources the agent acts on
// (hostPath, emptyDir, configMap, secret) are checked field by field; the
// others (NFS, CSI, cloud disks, ...) are counted but not inspected, since
// the typed model keeps them only as written.
#include <set>
#include <string>

#include "core/validation_internal.h"

namespace daemonlet::validation {
namespace {

// The volume sources in the order validateVolumeSource tries them: the JSON
// key, and the path upstream uses when a second source is Forbidden (with
// its two historical spellings).
struct SourceKey {
    const char* key;
    const char* forbidden_path;
};
const SourceKey kSources[] = {
    {"emptyDir", "emptyDir"},
    {"hostPath", "hostPath"},
    {"gitRepo", "gitRepo"},
    {"gcePersistentDisk", "gcePersistentDisk"},
    {"awsElasticBlockStore", "awsElasticBlockStore"},
    {"secret", "secret"},
    {"nfs", "nfs"},
    {"iscsi", "iscsi"},
    {"glusterfs", "glusterfs"},
    {"flocker", "flocker"},
    {"persistentVolumeClaim", "persistentVolumeClaim"},
    {"rbd", "rbd"},
    {"cinder", "cinder"},
    {"cephfs", "cephFS"},
    {"quobyte", "quobyte"},
    {"downwardAPI", "downwarAPI"},
    {"fc", "fc"},
    {"flexVolume", "flexVolume"},
    {"configMap", "configMap"},
    {"azureFile", "azureFile"},
    {"vsphereVolume", "vsphereVolume"},
    {"photonPersistentDisk", "photonPersistentDisk"},
    {"portworxVolume", "portworxVolume"},
    {"azureDisk", "azureDisk"},
    {"storageos", "storageos"},
    {"projected", "projected"},
    {"scaleIO", "scaleIO"},
    {"csi", "csi"},
    {"ephemeral", "ephemeral"},
};

const char* const kFileModeMsg = "must be a number between 0 and 0777 (octal), both inclusive";

// The sources a volume names, in upstream's order. A volume built without
// its document (raw null) is read from the typed source.
std::vector<std::string> sources_of(const Volume& v) {
    std::vector<std::string> out;
    if (v.raw.is_object()) {
        for (const auto& s : kSources)
            if (member(v.raw, s.key)) out.emplace_back(s.key);
        return out;
    }
    switch (v.source) {
    case Volume::Source::None: break;
    case Volume::Source::HostPath: out.emplace_back("hostPath"); break;
    case Volume::Source::EmptyDir: out.emplace_back("emptyDir"); break;
    case Volume::Source::ConfigMap: out.emplace_back("configMap"); break;
    case Volume::Source::Secret: out.emplace_back("secret"); break;
    case Volume::Source::DownwardAPI: out.emplace_back("downwardAPI"); break;
    case Volume::Source::Projected: out.emplace_back("projected"); break;
    case Volume::Source::Other: out.emplace_back("other"); break;
    }
    return out;
}

// A file mode (defaultMode, items[].mode) as written, when it is set.
void validate_file_mode(const Json& obj, const char* key, const FieldPath& p, FieldErrors& errs) {
    const Json* m = member(obj, key);
    if (!m || !m->is_number_integer()) return;
    std::int64_t mode = m->get<std::int64_t>();
    if (mode < 0 || mode > 0777) errs.push_back(invalid(p.child(key), render_int(mode), kFileModeMsg));
}

// validateKeyToPath over the items of a secret or configMap source.
void validate_items(const Json& source, const FieldPath& p, FieldErrors& errs) {
    const Json* items = member(source, "items");
    if (!items || !items->is_array()) return;
    for (std::size_t i = 0; i < items->size(); ++i) {
        const Json& item = (*items)[i];
        FieldPath ip = p.child("items").index(i);
        std::string key = string_member(item, "key");
        std::string path = string_member(item, "path");
        if (key.empty()) errs.push_back(required(ip.child("key")));
        if (path.empty()) errs.push_back(required(ip.child("path")));
        validate_local_non_reserved_path(path, ip.child("path"), errs);
        validate_file_mode(item, "mode", ip, errs);
    }
}

// validateDownwardAPIVolumeFile. Upstream reports an item's errors under
// the source's path, without the item's index; so do we.
void validate_downward_file(const DownwardAPIVolumeFile& f, const FieldPath& p, FieldErrors& errs) {
    if (f.path.empty()) errs.push_back(required(p.child("path")));
    validate_local_non_reserved_path(f.path, p.child("path"), errs);
    if (f.field_ref) {
        validate_object_field_selector(*f.field_ref, true, p.child("fieldRef"), errs);
        if (f.resource_field_ref)
            errs.push_back(invalid(p, render_string("resource"),
                                   "fieldRef and resourceFieldRef can not be specified simultaneously"));
    } else if (f.resource_field_ref) {
        validate_resource_field_selector(*f.resource_field_ref, true, p.child("resourceFieldRef"), errs);
    } else {
        errs.push_back(required(p, "one of fieldRef and resourceFieldRef is required"));
    }
    if (f.mode && (*f.mode < 0 || *f.mode > 0777))
        errs.push_back(invalid(p.child("mode"), render_int(*f.mode), kFileModeMsg));
}

void validate_default_mode(const std::optional<std::int32_t>& mode, const FieldPath& p, FieldErrors& errs) {
    if (mode && (*mode < 0 || *mode > 0777))
        errs.push_back(invalid(p.child("defaultMode"), render_int(*mode), kFileModeMsg));
}

// validateKeyToPath on a typed item (a projection's).
void validate_key_to_path(const KeyToPath& k, const FieldPath& ip, FieldErrors& errs) {
    if (k.key.empty()) errs.push_back(required(ip.child("key")));
    if (k.path.empty()) errs.push_back(required(ip.child("path")));
    validate_local_non_reserved_path(k.path, ip.child("path"), errs);
    if (k.mode && (*k.mode < 0 || *k.mode > 0777))
        errs.push_back(invalid(ip.child("mode"), render_int(*k.mode), kFileModeMsg));
}

// validateProjectionSources: one source each, names, items, paths unique
// across the sources, token expiry from 10 minutes to 2^32 seconds.
void validate_projected(const Volume& v, const FieldPath& p, FieldErrors& errs) {
    validate_default_mode(v.default_mode, p, errs);
    std::set<std::string> all_paths;
    auto unique_path = [&](const std::string& path, const std::string& shown) {
        if (path.empty()) return;
        if (!all_paths.insert(path).second)
            errs.push_back(invalid(p, render_string(shown), "conflicting duplicate paths"));
    };
    for (std::size_t i = 0; i < v.projections.size(); ++i) {
        const VolumeProjection& s = v.projections[i];
        FieldPath sp = p.child("sources").index(i);
        int sources = 0;
        auto keys = [&](const std::optional<KeyProjection>& k, const char* key) {
            if (!k) return;
            ++sources;
            FieldPath kp = sp.child(key);
            if (k->name.empty()) errs.push_back(required(kp.child("name")));
            for (std::size_t j = 0; j < k->items.size(); ++j) {
                validate_key_to_path(k->items[j], kp.child("items").index(j), errs);
                unique_path(k->items[j].path, k->name);
            }
        };
        keys(s.secret, "secret");
        keys(s.config_map, "configMap");
        if (s.downward_api) {
            ++sources;
            for (const auto& f : *s.downward_api) {
                validate_downward_file(f, sp.child("downwardAPI"), errs);
                unique_path(f.path, f.path);
            }
        }
        if (s.service_account_token) {
            ++sources;
            FieldPath tp = sp.child("serviceAccountToken");
            // Defaulted to 3600 (SetDefaults_ServiceAccountTokenProjection).
            std::int64_t exp = s.service_account_token->expiration_seconds.value_or(3600);
            if (exp < 10 * 60)
                errs.push_back(invalid(tp.child("expirationSeconds"), render_int(exp),
                                       "may not specify a duration less than 10 minutes"));
            if (exp > (std::int64_t{1} << 32))
                errs.push_back(invalid(tp.child("expirationSeconds"), render_int(exp),
                                       "may not specify a duration larger than 2^32 seconds"));
            if (s.service_account_token->path.empty()) errs.push_back(required(p.child("path")));
        }
        if (sources > 1) errs.push_back(forbidden(sp, "may not specify more than 1 volume type"));
    }
}

// validateHostPathVolumeSource: a path without "..", and a known type.
void validate_host_path(const Volume& v, const FieldPath& p, FieldErrors& errs) {
    if (v.host_path.empty()) {
        errs.push_back(required(p.child("path")));
        return;
    }
    validate_path_no_backsteps(v.host_path, p.child("path"), errs);
    const std::string& t = v.host_path_type;
    if (!(t.empty() || t == "DirectoryOrCreate" || t == "Directory" || t == "FileOrCreate" || t == "File" ||
          t == "Socket" || t == "CharDevice" || t == "BlockDevice"))
        errs.push_back(not_supported(p.child("type"), render_string(t),
                                     {"", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate",
                                      "File", "FileOrCreate", "Socket"}));
}

// The checks of the volume's (first) source.
void validate_source(const Volume& v, const std::string& source, const FieldPath& p, FieldErrors& errs) {
    static const Json kNull;
    const Json* raw = member(v.raw, source.c_str());
    const Json& doc = raw ? *raw : kNull;
    if (source == "emptyDir") {
        if (v.empty_dir_size_limit && v.empty_dir_size_limit->milli < 0)
            errs.push_back(forbidden(p.child("emptyDir").child("sizeLimit"),
                                     "SizeLimit field must be a valid resource quantity"));
    } else if (source == "hostPath") {
        validate_host_path(v, p.child("hostPath"), errs);
    } else if (source == "secret") {
        FieldPath sp = p.child("secret");
        if (v.secret_name.empty()) errs.push_back(required(sp.child("secretName")));
        validate_file_mode(doc, "defaultMode", sp, errs);
        validate_items(doc, sp, errs);
    } else if (source == "configMap") {
        FieldPath cp = p.child("configMap");
        if (v.config_map_name.empty()) errs.push_back(required(cp.child("name")));
        validate_file_mode(doc, "defaultMode", cp, errs);
        validate_items(doc, cp, errs);
    } else if (source == "downwardAPI") {
        FieldPath dp = p.child("downwardAPI");
        validate_default_mode(v.default_mode, dp, errs);
        for (const auto& f : v.downward_api_items) validate_downward_file(f, dp, errs);
    } else if (source == "projected") {
        validate_projected(v, p.child("projected"), errs);
    }
}

// validateVolumeSource: exactly one source.
void validate_volume_source(const Volume& v, const FieldPath& p, FieldErrors& errs) {
    std::vector<std::string> sources = sources_of(v);
    if (sources.empty()) {
        errs.push_back(required(p, "must specify a volume type"));
        return;
    }
    validate_source(v, sources[0], p, errs);
    for (std::size_t i = 1; i < sources.size(); ++i) {
        const char* path = sources[i].c_str();
        for (const auto& s : kSources)
            if (sources[i] == s.key) path = s.forbidden_path;
        errs.push_back(forbidden(p.child(path), "may not specify more than 1 volume type"));
    }
}

}  // namespace

std::set<std::string> validate_volumes(const std::vector<Volume>& volumes, const FieldPath& p,
                                       FieldErrors& errs) {
    std::set<std::string> names;
    for (std::size_t i = 0; i < volumes.size(); ++i) {
        const Volume& v = volumes[i];
        FieldPath ip = p.index(i);
        FieldErrors el;
        validate_volume_source(v, ip, el);
        if (v.name.empty())
            el.push_back(required(ip.child("name")));
        else
            validate_dns1123_label(v.name, ip.child("name"), el);
        if (names.count(v.name)) el.push_back(duplicate(ip.child("name"), render_string(v.name)));
        // Only a volume without errors can be mounted: a mount of a broken
        // volume is also reported as not found.
        if (el.empty())
            names.insert(v.name);
        else
            errs.insert(errs.end(), el.begin(), el.end());
    }
    return names;
}

}  // namespace daemonlet::validation
