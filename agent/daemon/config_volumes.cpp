#include "agent/daemon/config_volumes.h"

#include <unistd.h>

#include <filesystem>

#include "core/volume_payload.h"
#include "platform/atomic_writer.h"
#include "platform/file.h"
#include "platform/log.h"

namespace daemonlet::agent {

using platform::Level;
using platform::log;

Result<std::map<std::string, std::string>> ConfigVolumes::write(const Pod& pod,
                                                                const ConfigObjects* objects) {
    PodFacts facts = pod.facts;
    facts.spec = pod.spec.get();
    facts.objects = objects;
    std::map<std::string, std::string> out;
    // The pod's fsGroup: each plugin's SetUpAt makes its volume the group's.
    const auto& psc = pod.spec->security_context;
    const std::optional<std::int64_t> fs_group = psc ? psc->fs_group : std::nullopt;
    for (const auto& v : pod.spec->volumes) {
        if (!has_payload(v)) continue;
        // The payload first: a missing object leaves what is on disk as it was.
        auto payload = volume_payload(v, facts);
        if (!payload) return payload.error();
        std::string dir = dir_of(facts.uid, v.name);
        if (holds_secrets(v)) {
            if (auto s = platform::make_secret_dir(dir); !s) return s.error();
        } else if (auto s = platform::make_dirs(dir, 0755); !s) {
            return s.error();
        }
        Status owned = Ok{};
        if (auto w = platform::atomic_write(dir, payload.value(), fs_group, &owned); !w)
            return Error{w.error().code, "volume \"" + v.name + "\": " + w.error().message};
        // The payload is there; the file system refused its group (the
        // writer does not write it again for that): said once.
        if (owned.ok())
            ownership_refused_.erase(dir);
        else if (ownership_refused_.insert(dir).second)
            log(Level::Warning, "pod " + facts.namespace_ + "/" + facts.name + ": volume \"" + v.name +
                                    "\": fsGroup " + std::to_string(*fs_group) + " not applied: " +
                                    owned.error().message + "; the files keep their group (said once)");
        out[v.name] = dir;
    }
    return out;
}

Result<std::map<std::string, std::string>> ConfigVolumes::prepare(const PodFacts& facts,
                                                                  std::shared_ptr<const PodSpec> spec) {
    Pod pod{facts, std::move(spec)};
    pod.facts.objects = nullptr;
    pod.facts.spec = nullptr;
    auto r = write(pod, facts.objects);
    // Remembered either way: the pod's volumes follow its objects from now on.
    pods_[facts.uid] = std::move(pod);
    return r;
}

std::vector<std::string> ConfigVolumes::rewrite(const ConfigObjects& objects) {
    std::vector<std::string> problems;
    for (const auto& [uid, pod] : pods_) {
        auto r = write(pod, &objects);
        if (!r)
            problems.push_back("pod " + pod.facts.namespace_ + "/" + pod.facts.name + ": " +
                               r.error().message);
    }
    return problems;
}

Status ConfigVolumes::forget(const std::string& uid) {
    pods_.erase(uid);
    const std::string prefix = root_ + "/" + uid + "/";
    for (auto it = ownership_refused_.lower_bound(prefix);
         it != ownership_refused_.end() && it->starts_with(prefix);)
        it = ownership_refused_.erase(it);
    // What is on disk, remembered or not (a pod adopted after a restart of
    // the agent is remembered only once a container of it starts again).
    std::string pod_dir = root_ + "/" + uid;
    std::error_code ec;
    if (!std::filesystem::exists(pod_dir, ec)) return Ok{};
    for (const auto& e : std::filesystem::directory_iterator(pod_dir, ec))
        if (auto s = platform::remove_volume_dir(e.path().string()); !s) return s;
    (void)::rmdir(pod_dir.c_str());
    return Ok{};
}

void ConfigVolumes::sweep(const std::set<std::string>& live) {
    std::error_code ec;
    std::vector<std::string> gone;
    for (const auto& e : std::filesystem::directory_iterator(root_, ec))
        if (!live.count(e.path().filename().string())) gone.push_back(e.path().filename().string());
    for (const auto& uid : gone) (void)forget(uid);
}

}  // namespace daemonlet::agent
