#include "platform/log.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <systemd/sd-journal.h>

namespace daemonlet::platform {
namespace {

Level g_max = Level::Info;

// $JOURNAL_STREAM is "<dev>:<ino>" of the journal stream systemd connected to
// stderr; it is only ours if stderr is still that stream.
bool stderr_is_journal() {
    static const bool value = [] {
        const char* js = std::getenv("JOURNAL_STREAM");
        if (!js) return false;
        unsigned long long dev = 0, ino = 0;
        if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
        struct stat st {};
        if (fstat(2, &st) != 0) return false;
        return st.st_dev == dev && st.st_ino == ino;
    }();
    return value;
}

}  // namespace

void set_log_level(Level max) { g_max = max; }

void log(Level level, std::string_view message, std::initializer_list<LogField> fields) {
    if (static_cast<int>(level) > static_cast<int>(g_max)) return;
    if (stderr_is_journal()) {
        std::vector<std::string> items;
        items.reserve(fields.size() + 3);
        items.push_back("MESSAGE=" + std::string(message));
        items.push_back("PRIORITY=" + std::to_string(static_cast<int>(level)));
        items.emplace_back("SYSLOG_IDENTIFIER=daemonlet");
        for (const auto& f : fields) items.push_back(std::string(f.first) + "=" + f.second);
        std::vector<struct iovec> iov(items.size());
        for (std::size_t i = 0; i < items.size(); ++i) iov[i] = {items[i].data(), items[i].size()};
        if (sd_journal_sendv(iov.data(), static_cast<int>(iov.size())) >= 0) return;
    }
    std::string line = "<" + std::to_string(static_cast<int>(level)) + ">" + std::string(message);
    for (const auto& f : fields) {
        line += ' ';
        line += f.first;
        line += '=';
        line += f.second;
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace daemonlet::platform
