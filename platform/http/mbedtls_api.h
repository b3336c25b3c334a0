// mbed TLS 2.28 (Debian 12's libmbedtls14, libmbedx509-1, libmbedcrypto7),
// loaded when first needed (dlopen of libmbedtls.so.14, which brings the
// other two) rather than linked, as libcurl is (curl_api.h): linked, the
// three libraries cost an idle agent about 400 KiB of VmRSS (x86-64:
// 1708 vs 1308 KiB for a hello world), and an agent that follows no API
// server and reads no kubeconfig never needs them. The API server client
// (api_http_client.h) and kubeconfig's base64 (credentials.cpp) use it.
//
// The functions daemonlet calls, resolved once; their types come from
// libmbedtls-dev's headers, so a changed prototype fails the build.
#pragma once

#include <mbedtls/base64.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "core/result.h"

namespace daemonlet::platform {

// The functions, once: the table below and its loader (mbedtls_api.cpp).
#define DAEMONLET_MBEDTLS_FUNCTIONS(X) \
    X(base64_decode)                   \
    X(strerror)                        \
    X(entropy_init)                    \
    X(entropy_func)                    \
    X(ctr_drbg_init)                   \
    X(ctr_drbg_seed)                   \
    X(ctr_drbg_random)                 \
    X(x509_crt_init)                   \
    X(x509_crt_parse)                  \
    X(x509_crt_parse_file)             \
    X(x509_crt_free)                   \
    X(x509_crt_verify_info)            \
    X(pk_init)                         \
    X(pk_parse_key)                    \
    X(pk_parse_keyfile)                \
    X(pk_free)                         \
    X(ssl_init)                        \
    X(ssl_free)                        \
    X(ssl_setup)                       \
    X(ssl_set_hostname)                \
    X(ssl_set_bio)                     \
    X(ssl_handshake)                   \
    X(ssl_read)                        \
    X(ssl_write)                       \
    X(ssl_get_verify_result)           \
    X(ssl_get_peer_cert)               \
    X(ssl_config_init)                 \
    X(ssl_config_defaults)             \
    X(ssl_config_free)                 \
    X(ssl_conf_authmode)               \
    X(ssl_conf_ca_chain)               \
    X(ssl_conf_own_cert)               \
    X(ssl_conf_rng)                    \
    X(ssl_conf_min_version)            \
    X(asn1_get_tag)                    \
    X(ssl_conf_alpn_protocols)         \
    X(ssl_get_alpn_protocol)           \
    X(ssl_get_bytes_avail)

struct MbedTlsApi {
#define DAEMONLET_MBEDTLS_FN(name) decltype(&mbedtls_##name) name;
    DAEMONLET_MBEDTLS_FUNCTIONS(DAEMONLET_MBEDTLS_FN)
#undef DAEMONLET_MBEDTLS_FN
};

// The loaded library (loaded on the first call), or why it cannot be
// ("libmbedtls.so.14: cannot open shared object file ...: install
// libmbedtls14").
Result<const MbedTlsApi*> mbedtls_api();

// Loads `library` as mbedtls_api() loads libmbedtls.so.14, uncached, and
// says why it cannot serve: the error mbedtls_api() gives, for tests.
Result<Ok> probe_mbedtls_library(const char* library);

// mbed TLS's text for an error code ("X509 - Certificate verification
// failed ...").
std::string mbedtls_error(const MbedTlsApi& api, int code);

}  // namespace daemonlet::platform
