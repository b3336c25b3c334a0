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

struct MbedTlsApi {
#define DAEMONLET_MBEDTLS_FN(name) decltype(&mbedtls_##name) name
    DAEMONLET_MBEDTLS_FN(base64_decode);
    DAEMONLET_MBEDTLS_FN(strerror);
    DAEMONLET_MBEDTLS_FN(entropy_init);
    DAEMONLET_MBEDTLS_FN(entropy_func);
    DAEMONLET_MBEDTLS_FN(ctr_drbg_init);
    DAEMONLET_MBEDTLS_FN(ctr_drbg_seed);
    DAEMONLET_MBEDTLS_FN(ctr_drbg_random);
    DAEMONLET_MBEDTLS_FN(x509_crt_init);
    DAEMONLET_MBEDTLS_FN(x509_crt_parse);
    DAEMONLET_MBEDTLS_FN(x509_crt_parse_file);
    DAEMONLET_MBEDTLS_FN(x509_crt_free);
    DAEMONLET_MBEDTLS_FN(x509_crt_verify_info);
    DAEMONLET_MBEDTLS_FN(pk_init);
    DAEMONLET_MBEDTLS_FN(pk_parse_key);
    DAEMONLET_MBEDTLS_FN(pk_parse_keyfile);
    DAEMONLET_MBEDTLS_FN(pk_free);
    DAEMONLET_MBEDTLS_FN(ssl_init);
    DAEMONLET_MBEDTLS_FN(ssl_free);
    DAEMONLET_MBEDTLS_FN(ssl_setup);
    DAEMONLET_MBEDTLS_FN(ssl_set_hostname);
    DAEMONLET_MBEDTLS_FN(ssl_set_bio);
    DAEMONLET_MBEDTLS_FN(ssl_handshake);
    DAEMONLET_MBEDTLS_FN(ssl_read);
    DAEMONLET_MBEDTLS_FN(ssl_write);
    DAEMONLET_MBEDTLS_FN(ssl_get_verify_result);
    DAEMONLET_MBEDTLS_FN(ssl_get_peer_cert);
    DAEMONLET_MBEDTLS_FN(ssl_config_init);
    DAEMONLET_MBEDTLS_FN(ssl_config_defaults);
    DAEMONLET_MBEDTLS_FN(ssl_config_free);
    DAEMONLET_MBEDTLS_FN(ssl_conf_authmode);
    DAEMONLET_MBEDTLS_FN(ssl_conf_ca_chain);
    DAEMONLET_MBEDTLS_FN(ssl_conf_own_cert);
    DAEMONLET_MBEDTLS_FN(ssl_conf_rng);
    DAEMONLET_MBEDTLS_FN(ssl_conf_min_version);
    DAEMONLET_MBEDTLS_FN(asn1_get_tag);
    DAEMONLET_MBEDTLS_FN(ssl_conf_alpn_protocols);
    DAEMONLET_MBEDTLS_FN(ssl_get_alpn_protocol);
    DAEMONLET_MBEDTLS_FN(ssl_get_bytes_avail);
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
