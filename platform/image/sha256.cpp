#include "platform/image/sha256.h"

#include <openssl/evp.h>

#include "platform/dl_library.h"

namespace daemonlet::platform {

namespace {

// The functions' types come from OpenSSL's header, so a changed prototype
// fails the build, not the board.
struct Evp {
    decltype(&EVP_MD_CTX_new) ctx_new;
    decltype(&EVP_MD_CTX_free) ctx_free;
    decltype(&EVP_sha256) sha256;
    decltype(&EVP_DigestInit_ex) init;
    decltype(&EVP_DigestUpdate) update;
    decltype(&EVP_DigestFinal_ex) final;
};

static_assert(sizeof(Evp) == 6 * sizeof(void*), "every Evp member is resolved in load_evp()");

Result<Evp> load_evp() {
    auto lib = dl_load_table<Evp>({"libcrypto.so.3", "install libssl3", "OpenSSL 3 (libssl3) is needed"},
                                  [](DlSymbols& sym, Evp& e) {
                                      sym(e.ctx_new, "EVP_MD_CTX_new");
                                      sym(e.ctx_free, "EVP_MD_CTX_free");
                                      sym(e.sha256, "EVP_sha256");
                                      sym(e.init, "EVP_DigestInit_ex");
                                      sym(e.update, "EVP_DigestUpdate");
                                      sym(e.final, "EVP_DigestFinal_ex");
                                  });
    if (!lib.ok()) return Error{lib.error().code, "sha256: " + lib.error().message};
    return lib;
}

// Once per process: a failure is remembered, not retried.
const Result<Evp>& evp() {
    static const Result<Evp> lib = load_evp();
    return lib;
}

}  // namespace

struct Sha256::Ctx {
    EVP_MD_CTX* ctx = nullptr;
    ~Ctx() {
        if (ctx) evp().value().ctx_free(ctx);
    }
};

Result<Sha256> Sha256::create() {
    const auto& lib = evp();
    if (!lib.ok()) return lib.error();
    auto ctx = std::make_shared<Ctx>();
    ctx->ctx = lib.value().ctx_new();
    // Allocation failure or a broken libcrypto: a broken invariant.
    if (!ctx->ctx || lib.value().init(ctx->ctx, lib.value().sha256(), nullptr) != 1)
        return Error{ErrorCode::Unavailable, "sha256: libcrypto could not start a digest"};
    return Sha256(std::move(ctx));
}

void Sha256::update(const void* data, std::size_t size) {
    if (size > 0) evp().value().update(ctx_->ctx, data, size);
}

std::string Sha256::finish() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    evp().value().final(ctx_->ctx, md, &len);
    static const char kHex[] = "0123456789abcdef";
    std::string out = "sha256:";
    for (unsigned int i = 0; i < len; ++i) {
        out += kHex[md[i] >> 4];
        out += kHex[md[i] & 15];
    }
    return out;
}

}  // namespace daemonlet::platform
