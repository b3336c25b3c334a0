#include "platform/http/mbedtls_api.h"

#include <dlfcn.h>

#include <string>

namespace daemonlet::platform {

namespace {

// Loads `library` and resolves the table; the handle stays open when it
// succeeds. dlsym on the handle also searches the libraries it brought in
// (libmbedx509, libmbedcrypto).
Result<MbedTlsApi> load(const char* library) {
    void* h = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return Error{ErrorCode::Unavailable,
                     std::string(::dlerror()) + ": install libmbedtls14 (the API server client needs it)"};
    MbedTlsApi api{};
    std::string missing;
    auto sym = [&](auto& fn, const char* name) {
        void* p = ::dlsym(h, name);
        if (!p && missing.empty()) missing = name;
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
#define DAEMONLET_MBEDTLS_SYM(name) sym(api.name, "mbedtls_" #name)
    DAEMONLET_MBEDTLS_SYM(base64_decode);
    DAEMONLET_MBEDTLS_SYM(strerror);
    DAEMONLET_MBEDTLS_SYM(entropy_init);
    DAEMONLET_MBEDTLS_SYM(entropy_func);
    DAEMONLET_MBEDTLS_SYM(ctr_drbg_init);
    DAEMONLET_MBEDTLS_SYM(ctr_drbg_seed);
    DAEMONLET_MBEDTLS_SYM(ctr_drbg_random);
    DAEMONLET_MBEDTLS_SYM(x509_crt_init);
    DAEMONLET_MBEDTLS_SYM(x509_crt_parse);
    DAEMONLET_MBEDTLS_SYM(x509_crt_parse_file);
    DAEMONLET_MBEDTLS_SYM(x509_crt_free);
    DAEMONLET_MBEDTLS_SYM(x509_crt_verify_info);
    DAEMONLET_MBEDTLS_SYM(pk_init);
    DAEMONLET_MBEDTLS_SYM(pk_parse_key);
    DAEMONLET_MBEDTLS_SYM(pk_parse_keyfile);
    DAEMONLET_MBEDTLS_SYM(pk_free);
    DAEMONLET_MBEDTLS_SYM(ssl_init);
    DAEMONLET_MBEDTLS_SYM(ssl_free);
    DAEMONLET_MBEDTLS_SYM(ssl_setup);
    DAEMONLET_MBEDTLS_SYM(ssl_set_hostname);
    DAEMONLET_MBEDTLS_SYM(ssl_set_bio);
    DAEMONLET_MBEDTLS_SYM(ssl_handshake);
    DAEMONLET_MBEDTLS_SYM(ssl_read);
    DAEMONLET_MBEDTLS_SYM(ssl_write);
    DAEMONLET_MBEDTLS_SYM(ssl_get_verify_result);
    DAEMONLET_MBEDTLS_SYM(ssl_get_peer_cert);
    DAEMONLET_MBEDTLS_SYM(ssl_config_init);
    DAEMONLET_MBEDTLS_SYM(ssl_config_defaults);
    DAEMONLET_MBEDTLS_SYM(ssl_config_free);
    DAEMONLET_MBEDTLS_SYM(ssl_conf_authmode);
    DAEMONLET_MBEDTLS_SYM(ssl_conf_ca_chain);
    DAEMONLET_MBEDTLS_SYM(ssl_conf_own_cert);
    DAEMONLET_MBEDTLS_SYM(ssl_conf_rng);
    DAEMONLET_MBEDTLS_SYM(ssl_conf_min_version);
    DAEMONLET_MBEDTLS_SYM(asn1_get_tag);
    DAEMONLET_MBEDTLS_SYM(ssl_conf_alpn_protocols);
    DAEMONLET_MBEDTLS_SYM(ssl_get_alpn_protocol);
    DAEMONLET_MBEDTLS_SYM(ssl_get_bytes_avail);
#undef DAEMONLET_MBEDTLS_SYM
    if (!missing.empty()) {
        ::dlclose(h);
        return Error{ErrorCode::Unavailable,
                     std::string(library) + ": no " + missing + ": mbed TLS 2.28 (libmbedtls14) is needed"};
    }
    return api;
}

}  // namespace

Result<const MbedTlsApi*> mbedtls_api() {
    // Once per process: a failure is remembered, not retried.
    static const Result<MbedTlsApi> api = load("libmbedtls.so.14");
    if (!api.ok()) return api.error();
    return &api.value();
}

Result<Ok> probe_mbedtls_library(const char* library) {
    auto api = load(library);
    if (!api.ok()) return api.error();
    return Ok{};
}

std::string mbedtls_error(const MbedTlsApi& api, int code) {
    char buf[160];
    api.strerror(code, buf, sizeof buf);
    return buf;
}

}  // namespace daemonlet::platform
