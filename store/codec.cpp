#include "store/codec.h"

#include <limits>

#include "core/json.h"

namespace daemonlet::store::codec {
namespace {

// Invalid UTF-8 (a container's message is whatever the process wrote) is
// replaced rather than refused: the row must be writable.
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Error corrupt(std::string_view column, const std::string& why) {
    return Error{ErrorCode::Corrupt, std::string(column) + ": " + why};
}

Result<Json> parse(std::string_view column, std::string_view text, Json::value_t want) {
    Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return corrupt(column, "not valid JSON");
    if (j.type() != want) return corrupt(column, "unexpected JSON type");
    return j;
}

// Field readers: absent fields keep their default, present fields must have
// the right type.
bool read(const Json& obj, const char* key, std::string& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return true;
    if (!it->is_string()) return false;
    out = it->get<std::string>();
    return true;
}

bool read(const Json& obj, const char* key, bool& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return true;
    if (!it->is_boolean()) return false;
    out = it->get<bool>();
    return true;
}

bool read(const Json& obj, const char* key, std::int64_t& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return true;
    if (!it->is_number_integer()) return false;
    out = it->get<std::int64_t>();
    return true;
}

bool read(const Json& obj, const char* key, std::int32_t& out) {
    std::int64_t v = out;
    if (!read(obj, key, v)) return false;
    if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
        return false;
    out = static_cast<std::int32_t>(v);
    return true;
}

Result<ContainerState> decode_state(std::string_view text) {
    for (ContainerState s : {ContainerState::Waiting, ContainerState::Running, ContainerState::Terminated})
        if (text == to_string(s)) return s;
    return corrupt("containers_json", "unknown container state \"" + std::string(text) + "\"");
}

}  // namespace

std::string encode_strings(const std::vector<std::string>& values) { return dump(Json(values)); }

Result<std::vector<std::string>> decode_strings(std::string_view column, std::string_view text) {
    auto j = parse(column, text, Json::value_t::array);
    if (!j) return j.error();
    std::vector<std::string> out;
    for (const auto& e : j.value()) {
        if (!e.is_string()) return corrupt(column, "element " + dump(e) + " is not a string");
        out.push_back(e.get<std::string>());
    }
    return out;
}

std::string encode_labels(const Labels& labels) {
    Json j = Json::object();
    for (const auto& [k, v] : labels) j[k] = v;  // std::map: sorted
    return dump(j);
}

Result<Labels> decode_labels(std::string_view text) {
    auto j = parse("labels_json", text, Json::value_t::object);
    if (!j) return j.error();
    Labels out;
    for (auto it = j.value().begin(); it != j.value().end(); ++it) {
        if (!it->is_string()) return corrupt("labels_json", "label " + it.key() + " is not a string");
        out[it.key()] = it->get<std::string>();
    }
    return out;
}

std::string encode_taints(const std::vector<Taint>& taints) {
    Json j = Json::array();
    for (const Taint& t : taints)
        j.push_back(
            Json{{"key", t.key}, {"value", t.value}, {"effect", t.effect}, {"timeAdded", t.time_added}});
    return dump(j);
}

Result<std::vector<Taint>> decode_taints(std::string_view text) {
    auto j = parse("taints_json", text, Json::value_t::array);
    if (!j) return j.error();
    std::vector<Taint> out;
    for (const Json& e : j.value()) {
        Taint t;
        if (!e.is_object() || !read(e, "key", t.key) || !read(e, "value", t.value) ||
            !read(e, "effect", t.effect) || !read(e, "timeAdded", t.time_added))
            return corrupt("taints_json", "malformed taint " + dump(e));
        out.push_back(std::move(t));
    }
    return out;
}

namespace {

Json encode_container(const ContainerStatus& c) {
    Json j{{"name", c.name},
           {"runtimeId", c.runtime_id},
           {"state", to_string(c.state)},
           {"reason", c.reason},
           {"message", c.message},
           {"restartCount", c.restart_count},
           {"exitCode", c.exit_code},
           {"startedAtMs", c.started_at_ms},
           {"finishedAtMs", c.finished_at_ms},
           {"terminationReason", c.termination_reason},
           {"terminationStartedAtMs", c.termination_started_at_ms},
           {"ready", c.ready},
           {"started", c.started}};
    // Written only when known, so that older records read the same.
    if (!c.termination_runtime_id.empty()) j["terminationRuntimeId"] = c.termination_runtime_id;
    if (!c.image_id.empty()) j["imageId"] = c.image_id;
    if (!c.stop_record.empty()) j["stopRecord"] = c.stop_record;
    return j;
}

}  // namespace

std::string encode_containers(const std::vector<ContainerStatus>& containers,
                              const std::vector<ContainerStatus>& init_containers,
                              std::optional<std::int64_t> deletion_grace_seconds) {
    Json j = Json::array();
    for (const ContainerStatus& c : init_containers) {
        Json e = encode_container(c);
        e["init"] = true;
        if (c.sidecar) e["sidecar"] = true;
        j.push_back(std::move(e));
    }
    for (const ContainerStatus& c : containers) j.push_back(encode_container(c));
    // With each container, beside its stop record (no migration).
    if (deletion_grace_seconds)
        for (Json& e : j) e["deletionGracePeriodSeconds"] = *deletion_grace_seconds;
    return dump(j);
}

Result<std::vector<ContainerStatus>> decode_containers(std::string_view text,
                                                       std::vector<ContainerStatus>* init_containers,
                                                       std::optional<std::int64_t>* deletion_grace_seconds) {
    auto j = parse("containers_json", text, Json::value_t::array);
    if (!j) return j.error();
    std::vector<ContainerStatus> out;
    for (const Json& e : j.value()) {
        ContainerStatus c;
        bool init = false;
        std::string state = to_string(c.state);
        if (!e.is_object() || !read(e, "name", c.name) || !read(e, "runtimeId", c.runtime_id) ||
            !read(e, "state", state) || !read(e, "reason", c.reason) || !read(e, "message", c.message) ||
            !read(e, "restartCount", c.restart_count) || !read(e, "exitCode", c.exit_code) ||
            !read(e, "startedAtMs", c.started_at_ms) || !read(e, "finishedAtMs", c.finished_at_ms) ||
            !read(e, "terminationReason", c.termination_reason) ||
            !read(e, "terminationStartedAtMs", c.termination_started_at_ms) || !read(e, "ready", c.ready) ||
            !read(e, "started", c.started) || !read(e, "init", init) || !read(e, "sidecar", c.sidecar) ||
            !read(e, "terminationRuntimeId", c.termination_runtime_id) || !read(e, "imageId", c.image_id))
            return corrupt("containers_json", "malformed container status " + dump(e));
        // Best effort: a stop record of another shape (a later agent's) is
        // no record, not a corrupt row that would cost every pod its adoption.
        if (auto r = e.find("stopRecord"); r != e.end() && r->is_string())
            c.stop_record = r->get<std::string>();
        // Best effort too: another shape is no deletion grace (the spec's).
        if (auto g = e.find("deletionGracePeriodSeconds");
            deletion_grace_seconds && g != e.end() && g->is_number_integer() && g->get<std::int64_t>() >= 0)
            *deletion_grace_seconds = g->get<std::int64_t>();
        auto s = decode_state(state);
        if (!s) return s.error();
        c.state = s.value();
        if (init && init_containers)
            init_containers->push_back(std::move(c));
        else if (!init)
            out.push_back(std::move(c));
    }
    return out;
}

Result<PodPhase> decode_phase(std::string_view text) {
    for (PodPhase p :
         {PodPhase::Pending, PodPhase::Running, PodPhase::Succeeded, PodPhase::Failed, PodPhase::Unknown})
        if (text == to_string(p)) return p;
    return corrupt("phase", "unknown pod phase \"" + std::string(text) + "\"");
}

}  // namespace daemonlet::store::codec
