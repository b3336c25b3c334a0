// Self-signed EC certificates for the TLS tests of the API server client
// (test_api_http_client.cpp), valid until 2126. Made with
//   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes
//     -days 36500 -subj /CN=... -addext subjectAltName=...
// good, other: CN=daemonlet-test, IP:127.0.0.1 and DNS:localhost (two keys:
// one is the other's wrong CA); dns: CN=127.0.0.1, DNS:localhost only (an IP
// in the common name only does not count, as in Go's crypto/x509).
#pragma once

namespace daemonlet::testing {

inline constexpr const char* kGoodCert = R"(-----BEGIN CERTIFICATE-----
MIIBpDCCAUugAwIBAgIUHVDoVCi4DsRqS6l2r/EBNieAIHowCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOZGFlbW9ubGV0LXRlc3QwIBcNMjYxMTI3MTQ0MDI1WhgPMjEy
NjExMDMxNDQwMjVaMBkxFzAVBgNVBAMMDmRhZW1vbmxldC10ZXN0MFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAE8iwL5IzYip3ZHoFeXJoantw7LkZtkmsxtAqJtfQd
n1dDSz0Fya4w+pPTpq00iH71P4uwYNwgim9YXAVv/EIGh6NvMG0wHQYDVR0OBBYE
FDNZ+3yEHjBQuyf+RGSudf513WwaMB8GA1UdIwQYMBaAFDNZ+3yEHjBQuyf+RGSu
df513WwaMA8GA1UdEwEB/wQFMAMBAf8wGgYDVR0RBBMwEYcEfwAAAYIJbG9jYWxo
b3N0MAoGCCqGSM49BAMCA0cAMEQCIHGZXtV4UwLu0Jvo7Ews48+R+y8ZNqAv3cDs
8AFCGl7CAiAqnNllHdt2ubGHJi3TpED+Rcd4PrIfCwQoOAWsW9tyaw==
-----END CERTIFICATE-----
)";
inline constexpr const char* kGoodKey = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgAobda3dRBesPkECL
ogn9jy/tR9RFgmatCauN4aP8+kyhRANCAATyLAvkjNiKndkegV5cmhqe3DsuRm2S
azG0Com19B2fV0NLPQXJrjD6k9OmrTSIfvU/i7Bg3CCKb1hcBW/8QgaH
-----END PRIVATE KEY-----
)";
inline constexpr const char* kOtherCert = R"(-----BEGIN CERTIFICATE-----
MIIBpTCCAUugAwIBAgIUELG2fu+Pu7Qv3aGF6vQvpdqKcU0wCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOZGFlbW9ubGV0LXRlc3QwIBcNMjYxMTI3MTQ0MDI1WhgPMjEy
NjExMDMxNDQwMjVaMBkxFzAVBgNVBAMMDmRhZW1vbmxldC10ZXN0MFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAEtZZhK9dvVMBCzcgqnaRv+RwVL250DcXr27LTDTFP
yNRWRxVYBJdedADadaoYxyACY6dbE9cXDUgJFdIjM2Gbg6NvMG0wHQYDVR0OBBYE
FE0dHws3GFDCpQbYNP/TNGb7fKCrMB8GA1UdIwQYMBaAFE0dHws3GFDCpQbYNP/T
NGb7fKCrMA8GA1UdEwEB/wQFMAMBAf8wGgYDVR0RBBMwEYcEfwAAAYIJbG9jYWxo
b3N0MAoGCCqGSM49BAMCA0gAMEUCIFlNyfLq7xMcHUxk6FATQokHMXYqC7RjvWKR
AgS9sgrhAiEAxPKJ2BD7lX5tu11l41gEQbQCCCo2tu5B9GeSjBYtQ6Q=
-----END CERTIFICATE-----
)";
inline constexpr const char* kOtherKey = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgPguxzNxopot5Yrpt
0BlHWDaMHkeNZyMsqq6VVMyaRCChRANCAAS1lmEr129UwELNyCqdpG/5HBUvbnQN
xevbstMNMU/I1FZHFVgEl150ANp1qhjHIAJjp1sT1xcNSAkV0iMzYZuD
-----END PRIVATE KEY-----
)";
inline constexpr const char* kDnsCert = R"(-----BEGIN CERTIFICATE-----
MIIBlDCCATugAwIBAgIUVZN4mzoEWZEvocYWBTqG2ptwq7EwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJMTI3LjAuMC4xMCAXDTI2MTEyNzE0NDAyOVoYDzIxMjYxMTAz
MTQ0MDI5WjAUMRIwEAYDVQQDDAkxMjcuMC4wLjEwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAASaD74f5dmN7onm0FymzhBKxCOpZNOVMC5kAxL6um4rExPuShORiKGO
BhVxJheIjZxG9pBRHfWm9rK4dvDTkTMYo2kwZzAdBgNVHQ4EFgQU7s2xBcGqngM/
2yPL3iocdqmBFI0wHwYDVR0jBBgwFoAU7s2xBcGqngM/2yPL3iocdqmBFI0wDwYD
VR0TAQH/BAUwAwEB/zAUBgNVHREEDTALgglsb2NhbGhvc3QwCgYIKoZIzj0EAwID
RwAwRAIgH5YjIyvrUwW04Lw4Rhv76RwOX0UXok6snydRQ2d+7dICIBegcb/g3yQQ
MH3hMd6NZWwYjQr2mBQ8igkdxA3RcnAy
-----END CERTIFICATE-----
)";
inline constexpr const char* kDnsKey = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgIk8YEj6W6TAJmqBv
B9ANVXl+s6WTlEPOUFjHdepk4eShRANCAASaD74f5dmN7onm0FymzhBKxCOpZNOV
MC5kAxL6um4rExPuShORiKGOBhVxJheIjZxG9pBRHfWm9rK4dvDTkTMY
-----END PRIVATE KEY-----
)";

}  // namespace daemonlet::testing
