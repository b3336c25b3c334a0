// daemonlet logs POD [-c CONTAINER] [-f]: a container's output, as kubectl
// logs prints it (the CRI log format's timestamps and stream tags removed,
// partial lines joined). Reads the log files directly, so it works while the
// agent is stopped and for pods that are gone.
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "agent/cli/cli.h"
#include "agent/cli/cli_flags.h"

namespace daemonlet::agent {
namespace {

const char* const kLogsHelp =
    "Usage: daemonlet logs POD [-c CONTAINER] [-n NAMESPACE] [-f] [--config FILE]\n"
    "\n"
    "Prints a container's output (stdout and stderr, oldest rotated file first).\n"
    "\n"
    "  -c, --container NAME  which container, when the pod has several\n"
    "  -f, --follow          keep printing new output until interrupted\n";

// "<time> <stream> <P|F> <text>": the text, and whether the line ends here.
void print_record(const std::string& line) {
    std::size_t a = line.find(' ');
    std::size_t b = a == std::string::npos ? a : line.find(' ', a + 1);
    std::size_t c = b == std::string::npos ? b : line.find(' ', b + 1);
    if (c == std::string::npos) {
        std::printf("%s\n", line.c_str());  // not CRI: print as it is
        return;
    }
    bool partial = line.compare(b + 1, 1, "P") == 0;
    std::fwrite(line.data() + c + 1, 1, line.size() - c - 1, stdout);
    if (!partial) std::fputc('\n', stdout);
}

// Prints from `offset` to the end of `path`; returns the new offset.
std::uint64_t print_from(const std::string& path, std::uint64_t offset) {
    std::FILE* in = std::fopen(path.c_str(), "rb");
    if (!in) return offset;
    std::uint64_t pos = offset;
    if (::fseeko(in, static_cast<off_t>(offset), SEEK_SET) == 0) {
        char* buf = nullptr;
        std::size_t cap = 0;
        for (ssize_t n; (n = ::getline(&buf, &cap, in)) > 0;) {
            if (buf[n - 1] != '\n') break;  // an incomplete last line: wait for the rest
            pos += static_cast<std::uint64_t>(n);
            print_record(std::string(buf, static_cast<std::size_t>(n - 1)));
        }
        std::free(buf);
    }
    std::fclose(in);
    std::fflush(stdout);
    return pos;
}

}  // namespace

int cmd_logs(const std::vector<std::string>& args) {
    if (wants_help(args)) {
        std::fputs(kLogsHelp, stdout);
        std::fputs(kOperatorFlagsHelp, stdout);
        return kExitOk;
    }
    OperatorFlags flags;
    std::string container, pod;
    bool follow = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "-f" || args[i] == "--follow") {
            follow = true;
            continue;
        }
        if (flags.consume(args, i) || flag_value(args, i, "-c", container) ||
            flag_value(args, i, "--container", container))
            continue;
        if (pod.empty() && !args[i].empty() && args[i][0] != '-') {
            pod = args[i];
            continue;
        }
        std::fprintf(stderr, "daemonlet logs: unexpected argument \"%s\"\n\n%s", args[i].c_str(), kLogsHelp);
        return kExitUsage;
    }
    if (pod.empty()) {
        std::fprintf(stderr, "daemonlet logs: which pod?\n\n%s", kLogsHelp);
        return kExitUsage;
    }
    const std::string& ns = flags.ns;
    auto cfg = load_operator_config(flags);
    if (!cfg.ok()) {
        std::fprintf(stderr, "daemonlet logs: %s\n", cfg.error().message.c_str());
        return kExitUsage;
    }
    // The pod's log directory: <ns>_<pod>_<uid> (neither names nor uids
    // hold '_'); the newest if a name was reused. With -A, the pod's name in
    // any namespace.
    namespace fs = std::filesystem;
    const fs::path root = cfg.value().state_dir + "/runtime/logs";
    fs::path dir;
    std::error_code ec;
    fs::file_time_type newest{};
    for (const auto& e : fs::directory_iterator(root, ec)) {
        const std::string name = e.path().filename().string();
        const std::size_t a = name.find('_');
        const std::size_t b = a == std::string::npos ? a : name.find('_', a + 1);
        if (b == std::string::npos || name.find('_', b + 1) != std::string::npos) continue;
        if (name.compare(a + 1, b - a - 1, pod) != 0 || b - a - 1 != pod.size()) continue;
        if (!flags.in_scope(name.substr(0, a))) continue;
        auto t = fs::last_write_time(e.path(), ec);
        if (dir.empty() || t > newest) {
            dir = e.path();
            newest = t;
        }
    }
    if (dir.empty()) {
        if (flags.all_namespaces)
            std::fprintf(stderr, "daemonlet logs: pods \"%s\" not found\n", pod.c_str());
        else
            std::fprintf(stderr, "daemonlet logs: pods \"%s\" not found in namespace \"%s\"\n", pod.c_str(),
                         ns.c_str());
        return 1;
    }
    std::vector<std::string> containers;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_directory()) containers.push_back(e.path().filename().string());
    std::sort(containers.begin(), containers.end());
    if (container.empty()) {
        if (containers.size() != 1) {
            std::string list;
            for (const auto& c : containers) list += (list.empty() ? "" : " ") + c;
            std::fprintf(
                stderr,
                "daemonlet logs: a container name must be specified for pod %s, choose one of: [%s]\n",
                pod.c_str(), list.c_str());
            return kExitUsage;
        }
        container = containers.front();
    } else if (std::find(containers.begin(), containers.end(), container) == containers.end()) {
        std::fprintf(stderr, "daemonlet logs: container %s is not valid for pod %s\n", container.c_str(),
                     pod.c_str());
        return 1;
    }
    const std::string base = (dir / container / "0.log").string();
    // Oldest rotated file first: 0.log.N ... 0.log.1, then 0.log.
    for (int n = 100; n >= 1; --n) {
        const std::string rotated = base + "." + std::to_string(n);
        if (fs::exists(rotated, ec)) print_from(rotated, 0);
    }
    std::uint64_t offset = print_from(base, 0);
    if (!follow) return kExitOk;
    struct stat st {};
    ino_t inode = ::stat(base.c_str(), &st) == 0 ? st.st_ino : 0;
    for (;;) {  // until interrupted, as kubectl logs -f
        struct timespec pause {
            0, 200'000'000
        };
        nanosleep(&pause, nullptr);
        if (::stat(base.c_str(), &st) != 0) continue;
        if (st.st_ino != inode || static_cast<std::uint64_t>(st.st_size) < offset) {
            inode = st.st_ino;  // rotated: the new 0.log from its start
            offset = 0;
        }
        offset = print_from(base, offset);
    }
}

}  // namespace daemonlet::agent
