#include "tests/platform/runtime_fixture.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "platform/exec/shim_state.h"
#include "platform/proc_stat.h"

#include <CppUTest/TestHarness.h>

namespace daemonlet::testing {

namespace fs = std::filesystem;

bool run_until(uv_loop_t* loop, const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    auto* tick = new uv_timer_t;
    uv_timer_init(loop, tick);
    uv_timer_start(
        tick, [](uv_timer_t*) {}, 5, 5);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    bool ok = done();
    while (!ok && std::chrono::steady_clock::now() < deadline) {
        uv_run(loop, UV_RUN_ONCE);
        ok = done();
    }
    uv_close(reinterpret_cast<uv_handle_t*>(tick),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    return ok;
}

bool under_emulator() {
#if defined(__x86_64__)
    const unsigned machine = 62;  // EM_X86_64
#elif defined(__aarch64__)
    const unsigned machine = 183;  // EM_AARCH64
#elif defined(__arm__)
    const unsigned machine = 40;  // EM_ARM
#else
    const unsigned machine = 0;
#endif
    std::string elf = read_text("/bin/sh").substr(0, 20);
    if (machine == 0 || elf.size() < 20 ||
        elf.compare(0, 4,
                    "\x7f"
                    "ELF") != 0)
        return false;
    unsigned e_machine = static_cast<unsigned char>(elf[18]) | static_cast<unsigned char>(elf[19]) << 8;
    return e_machine != machine;
}

platform::ContainerLaunch launch(std::vector<std::string> argv) {
    platform::ContainerLaunch l;
    l.pod_uid = "uid-1";
    l.pod_name = "pod";
    l.pod_namespace = "ns";
    l.container_name = "c";
    l.argv = std::move(argv);
    l.grace_seconds = 5;
    return l;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

namespace {

// "2006-01-02T15:04:05.123456789Z": digits where the layout has '9'.
bool is_cri_timestamp(const std::string& s) {
    static const char layout[] = "9999-99-99T99:99:99.999999999Z";
    if (s.size() != sizeof layout - 1) return false;
    for (std::size_t i = 0; i < s.size(); ++i)
        if (layout[i] == '9' ? !std::isdigit(static_cast<unsigned char>(s[i])) : s[i] != layout[i])
            return false;
    return true;
}

}  // namespace

std::vector<CriRecord> read_cri_log(const std::string& path) {
    // <timestamp> <stdout|stderr> <F|P> <text>
    std::vector<CriRecord> out;
    std::istringstream in(read_text(path));
    for (std::string line; std::getline(in, line);) {
        CriRecord r;
        auto sp1 = line.find(' ');
        auto sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
        bool ok = sp2 != std::string::npos && line.size() >= sp2 + 3 && line[sp2 + 2] == ' ' &&
                  is_cri_timestamp(line.substr(0, sp1));
        if (ok) {
            r.stream = line.substr(sp1 + 1, sp2 - sp1 - 1);
            r.tag = line[sp2 + 1];
            r.text = line.substr(sp2 + 3);
            ok = (r.stream == "stdout" || r.stream == "stderr") && (r.tag == 'F' || r.tag == 'P');
        }
        CHECK_TEXT(ok, ("not a CRI log record in " + path + ": " + line).c_str());
        out.push_back(r);
    }
    return out;
}

Child::Child(uv_loop_t* loop, std::vector<std::string> argv) : loop_(loop) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    uv_process_options_t opts{};
    opts.file = args[0];
    opts.args = args.data();
    opts.exit_cb = [](uv_process_t* p, std::int64_t, int) {
        *static_cast<bool*>(p->data) = true;
        uv_close(reinterpret_cast<uv_handle_t*>(p),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_process_t*>(h); });
    };
    process_ = new uv_process_t;
    process_->data = &exited_;
    int r = uv_spawn(loop_, process_, &opts);
    if (r != 0) {
        uv_close(reinterpret_cast<uv_handle_t*>(process_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_process_t*>(h); });
        exited_ = true;
        FAIL(("cannot spawn " + argv[0] + ": " + uv_strerror(r)).c_str());
    }
    pid_ = process_->pid;
}

void Child::kill_and_reap() {
    if (exited_) return;
    uv_process_kill(process_, SIGKILL);
    CHECK(run_until(loop_, [this] { return exited_; }));
}

Child::~Child() { kill_and_reap(); }

void RuntimeFixture::setup() {
    if (under_emulator()) {
        UT_PRINT("skipped: processes cannot be started under this user-mode emulator");
        TEST_EXIT;
    }
    set_up = true;
    CHECK_EQUAL(0, uv_loop_init(&loop));
    char tmpl[] = "/tmp/daemonlet-platform-XXXXXX";
    CHECK(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    runtime = make_runtime();
}

void RuntimeFixture::teardown() {
    if (!set_up) return;
    // A failed test may leave containers running: they go first.
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir + "/containers", ec)) {
        auto record = platform::exec::read_record(dir, entry.path().filename().string());
        if (!record || record.value().has_exit || !record.value().has_state) continue;
        const auto& r = record.value();
        if (proc::is_same_process(r.pid, r.pid_start_time)) ::kill(-r.pid, SIGKILL);
        if (proc::is_same_process(r.shim_pid, r.shim_start_time)) ::kill(r.shim_pid, SIGKILL);
    }
    runtime.reset();
    // Only close callbacks are left: this returns once they have run.
    uv_run(&loop, UV_RUN_DEFAULT);
    LONGS_EQUAL(0, uv_loop_close(&loop));
    fs::remove_all(dir, ec);
}

std::unique_ptr<platform::ExecRuntime> RuntimeFixture::make_runtime() {
    auto rt = std::make_unique<platform::ExecRuntime>(&loop, dir, DAEMONLET_SHIM_PATH);
    rt->set_exit_handler([this](const std::string& id) { exited.push_back(id); });
    return rt;
}

std::string RuntimeFixture::start(const platform::ContainerLaunch& l) {
    auto id = runtime->start(l);
    CHECK_TEXT(id.ok(), id.ok() ? "" : id.error().message.c_str());
    return id.value();
}

platform::ContainerInfo RuntimeFixture::wait_exit(const std::string& id, const std::string& shim_says) {
    bool seen = run_until([&] {
        for (const auto& e : exited)
            if (e == id) return true;
        return false;
    });
    CHECK_TEXT(seen, ("no exit reported for container " + id).c_str());
    auto info = runtime->inspect(id);
    CHECK_TEXT(info.ok(), info.ok() ? "" : info.error().message.c_str());
    CHECK(!info.value().running);
    CHECK(info.value().exit_code.has_value());
    // The shim wrote nothing on its stderr (no diagnostics, no sanitizer
    // report), or what it was expected to say, once.
    std::string shim_log = platform::exec::container_dir(dir, id) + "/shim.log";
    const std::string said = read_text(shim_log);
    if (shim_says.empty())
        STRCMP_EQUAL_TEXT("", said.c_str(), shim_log.c_str());
    else
        CHECK_TEXT(said.find(shim_says) != std::string::npos && said.find('\n') == said.size() - 1,
                   said.c_str());
    return info.value();
}

std::int64_t RuntimeFixture::state_field(const std::string& id, const char* key) {
    auto doc = nlohmann::json::parse(read_text(platform::exec::container_dir(dir, id) + "/state.json"),
                                     nullptr, false);
    CHECK(doc.is_object() && doc.contains(key) && doc[key].is_number_integer());
    return doc[key].get<std::int64_t>();
}

}  // namespace daemonlet::testing
