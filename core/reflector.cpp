#include "core/reflector.h"

#include <algorithm>

#include "core/json_parse.h"

namespace daemonlet {
namespace {

std::string string_at(const Json& obj, const char* a, const char* b) {
    if (!obj.is_object()) return {};
    auto it = obj.find(a);
    if (it == obj.end() || !it->is_object()) return {};
    auto jt = it->find(b);
    return jt != it->end() && jt->is_string() ? jt->get<std::string>() : std::string();
}

Result<WatchEvent> to_event(const Json& line) {
    if (!line.is_object()) return Error{ErrorCode::Invalid, "watch event: expected an object"};
    auto type = line.find("type");
    auto object = line.find("object");
    if (type == line.end() || !type->is_string())
        return Error{ErrorCode::Invalid, "watch event: type: expected a string"};
    if (object == line.end() || !object->is_object())
        return Error{ErrorCode::Invalid, "watch event: object: expected an object"};
    const std::string t = type->get<std::string>();
    WatchEvent ev;
    if (t == "ADDED")
        ev.type = WatchEventType::Added;
    else if (t == "MODIFIED")
        ev.type = WatchEventType::Modified;
    else if (t == "DELETED")
        ev.type = WatchEventType::Deleted;
    else if (t == "BOOKMARK")
        ev.type = WatchEventType::Bookmark;
    else if (t == "ERROR")
        ev.type = WatchEventType::Error;
    else
        return Error{ErrorCode::Invalid, "watch event: type: unknown \"" + t.substr(0, 64) + "\""};
    ev.object = *object;
    return ev;
}

}  // namespace

bool Reflector::shrink_page() {
    if (target_.page_size <= 1) return false;
    target_.page_size = std::max<std::int64_t>(1, target_.page_size / 2);
    return true;
}

Result<std::vector<WatchEvent>> WatchDecoder::feed(std::string_view data) {
    std::vector<WatchEvent> out;
    while (!data.empty()) {
        auto nl = data.find('\n');
        std::string_view part = data.substr(0, nl);
        if (buf_.size() + part.size() > max_line_)
            return Error{ErrorCode::TooLarge,
                         "watch event: longer than " + std::to_string(max_line_) + " bytes"};
        buf_.append(part);
        if (nl == std::string_view::npos) break;
        data.remove_prefix(nl + 1);
        std::string line = std::move(buf_);
        buf_.clear();
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        Json j = parse_json(line);
        if (j.is_discarded()) return Error{ErrorCode::Invalid, "watch event: not JSON"};
        auto ev = to_event(j);
        if (!ev.ok()) return ev.error();
        out.push_back(std::move(ev).value());
    }
    return out;
}

std::string query_escape(std::string_view s) {
    static const char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
            c == '.' || c == '_' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

Reflector::Reflector(ListWatchTarget target, ReflectorPolicy policy)
    : target_(std::move(target)), policy_(policy) {}

ReflectorRequest Reflector::begin(std::int64_t now_ms, double jitter) {
    ReflectorRequest r;
    if (now_ms < wait_until_ms_) {
        r.kind = ReflectorRequest::Kind::Wait;
        r.at_ms = wait_until_ms_;
        return r;
    }
    std::string q;
    if (!target_.label_selector.empty()) q += "&labelSelector=" + query_escape(target_.label_selector);
    if (!target_.field_selector.empty()) q += "&fieldSelector=" + query_escape(target_.field_selector);
    if (phase_ == Phase::List) {
        r.kind = ReflectorRequest::Kind::List;
        // resourceVersion unset: a consistent read, so that a complete list
        // is the truth deletions can follow from.
        // page_size 0: no limit (one object by name: a limit would make the
        // server page over the namespace's other keys, a second request).
        if (target_.page_size > 0)
            r.target = target_.path + "?limit=" + std::to_string(target_.page_size) + q;
        else
            r.target = target_.path + (q.empty() ? std::string() : "?" + q.substr(1));
        if (!continue_.empty()) r.target += "&continue=" + query_escape(continue_);
        return r;
    }
    r.kind = ReflectorRequest::Kind::Watch;
    r.timeout_s = static_cast<std::int64_t>(static_cast<double>(policy_.min_watch_timeout_s) *
                                            (1.0 + std::clamp(jitter, 0.0, 0.999)));
    r.target = target_.path + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + query_escape(rv_) +
               "&timeoutSeconds=" + std::to_string(r.timeout_s) + q;
    watch_started_ms_ = now_ms;
    watch_events_ = 0;
    return r;
}

Result<ReflectorChanges> Reflector::on_list_page(const Json& list) {
    if (!list.is_object()) return Error{ErrorCode::Invalid, "list: expected an object"};
    auto items = list.find("items");
    if (items == list.end() || !(items->is_array() || items->is_null()))
        return Error{ErrorCode::Invalid, "list: items: expected a list"};
    const std::string rv = string_at(list, "metadata", "resourceVersion");
    if (rv.empty()) return Error{ErrorCode::Invalid, "list: metadata.resourceVersion: missing"};
    if (items->is_array()) {
        for (const auto& item : *items) {
            if (!item.is_object()) return Error{ErrorCode::Invalid, "list: items: expected objects"};
            Json o = item;
            if (!target_.api_version.empty() && !o.contains("apiVersion"))
                o["apiVersion"] = target_.api_version;
            if (!target_.kind.empty() && !o.contains("kind")) o["kind"] = target_.kind;
            pages_.push_back(std::move(o));
        }
    }
    ReflectorChanges ch;
    continue_ = string_at(list, "metadata", "continue");
    if (!continue_.empty()) return ch;  // more pages: nothing applies until the last
    ch.replace = true;
    ch.objects = std::move(pages_);
    pages_.clear();
    ch.resource_version = rv;
    rv_ = rv;
    synced_ = true;
    phase_ = Phase::Watch;
    succeeded();
    return ch;
}

ReflectorChanges Reflector::on_watch_event(const WatchEvent& ev, std::int64_t now_ms, double jitter) {
    ReflectorChanges ch;
    if (ev.type == WatchEventType::Error) {
        // A Status object: 410 Gone (the resourceVersion is too old) lists
        // again at once; anything else backs off first.
        const Json& code = ev.object.contains("code") ? ev.object["code"] : Json();
        if (code.is_number_integer() && code.get<int>() == 410) {
            phase_ = Phase::List;
            continue_.clear();
            pages_.clear();
            return ch;
        }
        on_failure(code.is_number_integer() ? code.get<int>() : 500, false, 0, now_ms, jitter);
        phase_ = Phase::List;
        return ch;
    }
    ++watch_events_;
    const std::string rv = string_at(ev.object, "metadata", "resourceVersion");
    if (ev.type == WatchEventType::Added || ev.type == WatchEventType::Modified)
        ch.objects.push_back(ev.object);
    if (ev.type == WatchEventType::Deleted) ch.deleted.push_back(ev.object);
    if (!rv.empty()) rv_ = rv;
    ch.resource_version = rv_;
    succeeded();
    return ch;
}

void Reflector::on_watch_end(std::int64_t now_ms, double jitter) {
    if (phase_ != Phase::Watch) return;
    if (watch_events_ == 0 && now_ms - watch_started_ms_ < 1000) {
        // client-go: "very short watch ... watch lasted less than a second
        // and no items received": a failure, listed again after a back-off.
        back_off(now_ms, jitter, 0);
        phase_ = Phase::List;
    }
}

void Reflector::on_failure(int status, bool refused, std::int64_t retry_after_ms, std::int64_t now_ms,
                           double jitter) {
    const bool had_continue = !continue_.empty();
    if (status == 410 && (phase_ == Phase::Watch || had_continue)) {
        // An expired resourceVersion or continue token: list from scratch now.
        phase_ = Phase::List;
        continue_.clear();
        pages_.clear();
        return;
    }
    back_off(now_ms, jitter, retry_after_ms);
    // A watch refused or throttled resumes where it was; anything else lists
    // again (client-go's ListAndWatch returns and starts over).
    if (phase_ == Phase::Watch && (refused || status == 429)) return;
    phase_ = Phase::List;
    continue_.clear();
    pages_.clear();
}

void Reflector::back_off(std::int64_t now_ms, double jitter, std::int64_t at_least_ms) {
    // wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0).
    if (backoff_ms_ != 0 && now_ms - last_failure_ms_ > policy_.backoff_reset_ms) backoff_ms_ = 0;
    backoff_ms_ =
        backoff_ms_ == 0 ? policy_.backoff_initial_ms : std::min(backoff_ms_ * 2, policy_.backoff_max_ms);
    auto delay =
        static_cast<std::int64_t>(static_cast<double>(backoff_ms_) * (1.0 + std::clamp(jitter, 0.0, 1.0)));
    wait_until_ms_ = now_ms + std::max(delay, at_least_ms);
    last_failure_ms_ = now_ms;
    ++failures_;
}

void Reflector::succeeded() { failures_ = 0; }

ListWatchTarget object_watch_target(const std::string& path, const std::string& kind,
                                    const std::string& name) {
    // One object: listed without a limit. With limit=1 kube-apiserver stops
    // at the match and answers a continue token when the namespace has
    // later keys, which costs a second request scanning the rest.
    return ListWatchTarget{path, "v1", kind, "", "metadata.name=" + name, 0};
}

ObjectWatchOutcome object_watch_outcome(ReflectorChanges&& changes, const std::string& name) {
    auto named = [&](const Json& o) {
        return o.is_object() && o.contains("metadata") && o["metadata"].is_object() &&
               o["metadata"].value("name", "") == name;
    };
    ObjectWatchOutcome out;
    if (changes.replace) out.kind = ObjectWatchOutcome::Kind::Gone;  // unless listed
    for (auto& o : changes.objects)
        if (named(o)) out = {ObjectWatchOutcome::Kind::Present, std::move(o)};
    // One watch event at a time: an event is either an upsert or a delete.
    for (const auto& o : changes.deleted)
        if (named(o)) out = {ObjectWatchOutcome::Kind::Gone, Json()};
    return out;
}

}  // namespace daemonlet
