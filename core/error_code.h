// ErrorCode: the one list of Error::code values. to_string() gives each its
// string, which is a user-facing contract: it appears in `-o json`, in logs,
// in the control socket's {"error": ...} answers and in daemonlet-image's
// "daemonlet-image: <code>: <reason>" lines. Never change a string; add a
// new enumerator (and its string) instead.
#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <string_view>

namespace daemonlet {

enum class ErrorCode {
    Busy,             // busy: a resource is locked or in use (SQLite lock, mount point, socket)
    Canceled,         // canceled: the operation was canceled before it finished
    Certificate,      // certificate: TLS certificate problem talking to a registry
    Closed,           // closed: the object or connection was closed
    ContainerConfig,  // container_config: the container's config cannot be made (CreateContainerConfigError)
    Corrupt,          // corrupt: stored data (database, image store) failed its checks
    Cri,              // cri: a CRI runtime call failed with a gRPC status not mapped otherwise
    CtrFailed,        // ctr_failed: a `ctr` command failed
    Fallback,         // fallback: an image has no overlay form; the caller falls back to a copy
    Http,             // http: an HTTP transfer failed (not timeout, not refused)
    Image,            // image: an image could not be prepared for a container
    ImageNotFound,    // image_not_found: a start whose image is absent
    Interrupted,      // interrupted: work stopped part way (e.g. image GC cut short)
    Invalid,          // invalid: input rejected by validation
    Io,               // io: a system call on a file, directory or socket failed
    K8sNotFound,      // NotFound: Kubernetes' reason for an absent object (control socket)
    NoLayer,          // no_layer: an image layer is absent from the store
    NoSpace,          // no_space: the file system is full (ENOSPC, SQLITE_FULL)
    NotFound,         // not_found: the thing asked for does not exist
    NotRunning,       // not_running: nothing serves the agent's socket
    Parse,            // parse: a manifest or file could not be parsed
    Permissions,      // permissions: a file's permissions are too open (credentials)
    PullFailed,       // pull_failed: an image pull failed for another reason
    ReadOnly,         // read_only: the file system or database is read-only (EROFS, SQLITE_READONLY)
    Refused,          // refused: the connection was refused
    Running,          // running: the container is still running
    Runtime,          // runtime: the container runtime failed
    Schema,           // schema: the database's schema version is not one we know
    Shim,             // shim: daemonlet-shim failed to start a container
    Spawn,            // spawn: a child process could not be started
    Sqlite,           // sqlite: SQLite returned an error
    Stopped,          // stopped: the receiver stopped the transfer
    Timeout,          // timeout: a deadline passed
    TooLarge,         // too_large: a response or object is over its limit
    TooLong,          // too_long: a path or option string is over its limit (overlay mount)
    Unauthorized,     // unauthorized: a registry refused the credentials (or asked for some)
    Unavailable,      // unavailable: a runtime or service cannot be reached
    Unreachable,      // unreachable: a registry cannot be reached
    Unsupported,      // unsupported: not supported by this build or runtime
    VolumeSetup,      // volume_setup: a volume cannot be set up (hostPath type check); the container waits
};

inline constexpr ErrorCode kAllErrorCodes[] = {
    ErrorCode::Busy,
    ErrorCode::Canceled,
    ErrorCode::Certificate,
    ErrorCode::Closed,
    ErrorCode::ContainerConfig,
    ErrorCode::Corrupt,
    ErrorCode::Cri,
    ErrorCode::CtrFailed,
    ErrorCode::Fallback,
    ErrorCode::Http,
    ErrorCode::Image,
    ErrorCode::ImageNotFound,
    ErrorCode::Interrupted,
    ErrorCode::Invalid,
    ErrorCode::Io,
    ErrorCode::K8sNotFound,
    ErrorCode::NoLayer,
    ErrorCode::NoSpace,
    ErrorCode::NotFound,
    ErrorCode::NotRunning,
    ErrorCode::Parse,
    ErrorCode::Permissions,
    ErrorCode::PullFailed,
    ErrorCode::ReadOnly,
    ErrorCode::Refused,
    ErrorCode::Running,
    ErrorCode::Runtime,
    ErrorCode::Schema,
    ErrorCode::Shim,
    ErrorCode::Spawn,
    ErrorCode::Sqlite,
    ErrorCode::Stopped,
    ErrorCode::Timeout,
    ErrorCode::TooLarge,
    ErrorCode::TooLong,
    ErrorCode::Unauthorized,
    ErrorCode::Unavailable,
    ErrorCode::Unreachable,
    ErrorCode::Unsupported,
    ErrorCode::VolumeSetup,
};
static_assert(std::size(kAllErrorCodes) == static_cast<std::size_t>(ErrorCode::VolumeSetup) + 1,
              "kAllErrorCodes lists every ErrorCode");

constexpr const char* to_string(ErrorCode c) {
    switch (c) {
    case ErrorCode::Busy: return "busy";
    case ErrorCode::Canceled: return "canceled";
    case ErrorCode::Certificate: return "certificate";
    case ErrorCode::Closed: return "closed";
    case ErrorCode::ContainerConfig: return "container_config";
    case ErrorCode::Corrupt: return "corrupt";
    case ErrorCode::Cri: return "cri";
    case ErrorCode::CtrFailed: return "ctr_failed";
    case ErrorCode::Fallback: return "fallback";
    case ErrorCode::Http: return "http";
    case ErrorCode::Image: return "image";
    case ErrorCode::ImageNotFound: return "image_not_found";
    case ErrorCode::Interrupted: return "interrupted";
    case ErrorCode::Invalid: return "invalid";
    case ErrorCode::Io: return "io";
    case ErrorCode::K8sNotFound: return "NotFound";
    case ErrorCode::NoLayer: return "no_layer";
    case ErrorCode::NoSpace: return "no_space";
    case ErrorCode::NotFound: return "not_found";
    case ErrorCode::NotRunning: return "not_running";
    case ErrorCode::Parse: return "parse";
    case ErrorCode::Permissions: return "permissions";
    case ErrorCode::PullFailed: return "pull_failed";
    case ErrorCode::ReadOnly: return "read_only";
    case ErrorCode::Refused: return "refused";
    case ErrorCode::Running: return "running";
    case ErrorCode::Runtime: return "runtime";
    case ErrorCode::Schema: return "schema";
    case ErrorCode::Shim: return "shim";
    case ErrorCode::Spawn: return "spawn";
    case ErrorCode::Sqlite: return "sqlite";
    case ErrorCode::Stopped: return "stopped";
    case ErrorCode::Timeout: return "timeout";
    case ErrorCode::TooLarge: return "too_large";
    case ErrorCode::TooLong: return "too_long";
    case ErrorCode::Unauthorized: return "unauthorized";
    case ErrorCode::Unavailable: return "unavailable";
    case ErrorCode::Unreachable: return "unreachable";
    case ErrorCode::Unsupported: return "unsupported";
    case ErrorCode::VolumeSetup: return "volume_setup";
    }
    return "unknown";
}

// The code whose to_string() is s, for strings read back across a process
// boundary (daemonlet-image's error line); nullopt for any other string.
constexpr std::optional<ErrorCode> error_code_from_string(std::string_view s) {
    for (ErrorCode c : kAllErrorCodes)
        if (s == to_string(c)) return c;
    return std::nullopt;
}

}  // namespace daemonlet
