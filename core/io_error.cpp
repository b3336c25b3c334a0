#include "core/io_error.h"

#include <cstring>

namespace daemonlet {

Error io_error(const std::string& path, std::string_view op, int err) {
    std::string message = path + ": ";
    if (!op.empty()) message.append(op).append(": ");
    return Error{ErrorCode::Io, message + std::strerror(err)};
}

}  // namespace daemonlet
