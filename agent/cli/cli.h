// The command line: one function per verb (crun-style: a thin CLI over the
// engine libraries). Each returns the process exit status.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "core/manifest.h"

namespace daemonlet::agent {

// Exit statuses shared by the commands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalid = 1;  // validate: some document is invalid
inline constexpr int kExitUsage = 2;    // bad arguments, unreadable or invalid input to eval

int cmd_eval(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_version(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_get(const std::vector<std::string>& args);
int cmd_logs(const std::vector<std::string>& args);
int cmd_describe(const std::vector<std::string>& args);
int cmd_delete(const std::vector<std::string>& args);
int cmd_rollout(const std::vector<std::string>& args);
int cmd_status(const std::vector<std::string>& args);

// Reads a manifest file (size-limited) and loads its objects; a read error
// becomes a ManifestError naming the file.
LoadedManifest load_file(const std::string& path);

// True when args hold -h or --help.
bool wants_help(const std::vector<std::string>& args);

// "--name=value" or "--name value": returns true and sets value; advances i.
bool flag_value(const std::vector<std::string>& args, std::size_t& i, const std::string& name,
                std::string& value);

}  // namespace daemonlet::agent
