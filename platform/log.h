// Logging: under systemd (stderr connected to the journal, per
// $JOURNAL_STREAM) entries go to journald with structured fields; otherwise
// to stderr with sd-daemon priority prefixes ("<4>..."), which journald and
// syslog both understand. The agent logs where it decides; core never logs.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace daemonlet::platform {

enum class Level { Err = 3, Warning = 4, Notice = 5, Info = 6, Debug = 7 };

using LogField = std::pair<const char*, std::string>;  // {"DAEMONLET_POD", "default/x"}; name upper case

void log(Level level, std::string_view message, std::initializer_list<LogField> fields = {});

// Entries above this level are dropped (default Info).
void set_log_level(Level max);

}  // namespace daemonlet::platform
