// The runc runtime's registry pulls: `daemonlet-image pull` as a child on
// the loop (the agent links neither libarchive nor, for this, libcurl), one
// per image at a time, its outcome shared by every caller waiting for it.
#include <uv.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <string_view>

#include "core/image_reference.h"
#include "core/json.h"
#include "platform/run_command.h"
#include "platform/runc/runc_runtime.h"

namespace daemonlet::platform {

namespace {

// What `daemonlet-image pull` printed, as a Status: its error line is
// "daemonlet-image: <code>: <message>" (image_main.cpp). A certificate
// problem is a pull_failed whose message says "TLS certificate".
Status pull_status(const ProbeResult& r, const std::string& image) {
    if (r.outcome == ProbeOutcome::Success) return Ok{};
    constexpr ErrorCode kCodes[] = {ErrorCode::Unauthorized, ErrorCode::NotFound, ErrorCode::Unreachable,
                                    ErrorCode::Certificate,  ErrorCode::Invalid,  ErrorCode::PullFailed};
    const std::string prefix = "daemonlet-image: ";
    std::size_t start = 0;
    while (start < r.output.size()) {
        std::size_t end = r.output.find('\n', start);
        if (end == std::string::npos) end = r.output.size();
        std::string line = r.output.substr(start, end - start);
        start = end + 1;
        if (line.rfind(prefix, 0) != 0) continue;
        line.erase(0, prefix.size());
        auto colon = line.find(": ");
        if (colon == std::string::npos) continue;
        std::optional<ErrorCode> code = error_code_from_string(std::string_view(line).substr(0, colon));
        if (!code || std::find(std::begin(kCodes), std::end(kCodes), *code) == std::end(kCodes)) continue;
        if (*code == ErrorCode::Certificate) code = ErrorCode::PullFailed;
        return Error{*code, line.substr(colon + 2)};
    }
    std::string why = r.output;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return Error{ErrorCode::PullFailed,
                 "image " + image + ": daemonlet-image pull: " + (why.empty() ? "failed" : why)};
}

// Calls `done` from the loop, on its next turn: pull_image() never calls
// back from inside itself.
void defer(uv_loop_s* loop, std::function<void()> done) {
    auto* t = new uv_timer_t;
    uv_timer_init(loop, t);
    t->data = new std::function<void()>(std::move(done));
    uv_timer_start(
        t,
        [](uv_timer_t* timer) {
            auto* fn = static_cast<std::function<void()>*>(timer->data);
            (*fn)();
            delete fn;
            uv_close(reinterpret_cast<uv_handle_t*>(timer),
                     [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
        },
        0, 0);
}

}  // namespace

void RuncRuntime::enable_pulls(uv_loop_s* loop) {
    loop_ = loop;
    pulls_ = std::make_unique<Prober>(loop);
}

void RuncRuntime::close_pulls() {
    // A pull in progress is killed; the next daemonlet-image that imports
    // removes its staging directory.
    if (pulls_) pulls_->close();
    pulling_.clear();
}

void RuncRuntime::pull_image(const std::string& image, std::function<void(Status)> done) {
    auto [it, first] = pulling_.try_emplace(image);
    it->second.push_back(std::move(done));
    if (!first) return;  // shares the pull in progress
    ProbeAction a;
    a.type = ProbeAction::Type::Exec;
    a.command = {images_.binary, "pull", "--store", images_.store};
    a.command.insert(a.command.end(), images_.pull_options.begin(), images_.pull_options.end());
    a.command.push_back(image);
    a.timeout_ms = kImagePullDeadlineMs;
    auto id = pulls_->run(a, [this, image](ProbeResult r) { on_pulled(image, pull_status(r, image)); });
    if (!id) {
        Status failed = Error{ErrorCode::PullFailed, "image " + image + ": cannot run " + images_.binary +
                                                         ": " + id.error().message};
        defer(loop_, [this, image, failed] { on_pulled(image, failed); });
    }
}

void RuncRuntime::on_pulled(const std::string& image, Status result) {
    auto it = pulling_.find(image);
    if (it == pulling_.end()) return;
    auto waiting = std::move(it->second);
    pulling_.erase(it);
    for (auto& done : waiting) done(result);
}

bool RuncRuntime::has_image(const std::string& image) const {
    auto ref = normalize_image_reference(image);
    if (!ref.ok()) return false;
    auto r = run_command({images_.binary, "list", "--store", images_.store}, kImagePrepareDeadlineMs);
    if (!r.ok() || r.value().exit_code != 0) return false;
    Json list = Json::parse(r.value().out, nullptr, false);
    if (!list.is_array()) return false;
    for (const Json& e : list) {
        if (!e.is_object()) continue;
        if (ref.value().digest.empty() ? e.value("name", "") == ref.value().str()
                                       : e.value("digest", "") == ref.value().digest)
            return true;
    }
    return false;
}

}  // namespace daemonlet::platform
