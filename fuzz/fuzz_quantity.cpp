// libFuzzer target: resource quantities.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto q = daemonlet::parse_quantity(std::string_view(reinterpret_cast<const char*>(data), size));
    if (q.ok()) (void)q.value().value();
    return 0;
}
