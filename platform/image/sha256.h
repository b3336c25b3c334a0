// SHA-256 for verifying image blobs, from OpenSSL's libcrypto loaded on
// first use (platform/dl_library.h, as libcurl is), so that linking the
// image store costs a process nothing until it hashes.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/result.h"

namespace daemonlet::platform {

class Sha256 {
  public:
    // Fails when libcrypto.so.3 cannot be loaded.
    static Result<Sha256> create();
    void update(const void* data, std::size_t size);
    // "sha256:<64 lowercase hex>"; the hasher is spent afterwards.
    std::string finish();

  private:
    struct Ctx;
    explicit Sha256(std::shared_ptr<Ctx> ctx) : ctx_(std::move(ctx)) {}
    std::shared_ptr<Ctx> ctx_;
};

// The hex part of a digest ("sha256:<hex>"): a blob's or layer's file name.
inline std::string hex_of(const std::string& digest) { return digest.substr(digest.find(':') + 1); }

}  // namespace daemonlet::platform
