// Credential files for the API server: refused when anyone else could have
// written them, warned about when anyone else can read a secret; kubeconfig
// -data fields decoded as standard base64.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "platform/http/credentials.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet::platform;

TEST_GROUP(Credentials) {
    std::string dir;
    void setup() override {
        char tmpl[] = "/tmp/daemonlet-cred.XXXXXX";
        dir = ::mkdtemp(tmpl);
    }
    void teardown() override { std::system(("rm -rf " + dir).c_str()); }
    std::string file(const std::string& name, mode_t mode) {
        std::string p = dir + "/" + name;
        std::ofstream(p) << "s3cret-token";
        ::chmod(p.c_str(), mode);
        return p;
    }
};

TEST(Credentials, APrivateTokenIsReadWithoutAWarning) {
    auto c = read_credential(file("token", 0600), true);
    CHECK(c.ok());
    STRCMP_EQUAL("s3cret-token", c.value().data.c_str());
    STRCMP_EQUAL("", c.value().warning.c_str());
}

TEST(Credentials, AWorldReadableSecretIsReadWithAWarning) {
    auto c = read_credential(file("token", 0644), true);
    CHECK(c.ok());
    CHECK(c.value().warning.find("readable by group or others (mode 644)") != std::string::npos);
    // A CA certificate is public: no warning.
    auto ca = read_credential(file("ca.crt", 0644), false);
    CHECK(ca.ok());
    STRCMP_EQUAL("", ca.value().warning.c_str());
}

TEST(Credentials, AFileOthersCanWriteIsRefused) {
    for (mode_t m : {0620, 0602, 0666}) {
        auto c = read_credential(file("token", m), true);
        CHECK_FALSE(c.ok());
        CHECK_TEXT(c.error().message.find("writable by group or others") != std::string::npos,
                   c.error().message.c_str());
        CHECK(c.error().message.find("s3cret") == std::string::npos);  // never the content
    }
}

TEST(Credentials, MissingFilesAndDirectoriesAreErrorsNamingThePath) {
    auto none = read_credential(dir + "/absent", true);
    CHECK_FALSE(none.ok());
    CHECK(none.error().message.find(dir + "/absent: No such file") == 0);
    auto d = read_credential(dir, false);
    CHECK_FALSE(d.ok());
    CHECK(d.error().message.find("not a regular file") != std::string::npos);
}

TEST(Credentials, Base64AsKubeconfigDataFields) {
    struct Row {
        const char* in;
        const char* out;
    };
    const Row rows[] = {{"", ""}, {"Zg==", "f"}, {"Zm8=", "fo"}, {"Zm9v", "foo"}, {"LS0t\nLS0=\n", "-----"}};
    for (const auto& r : rows) {
        auto d = base64_decode(r.in);
        CHECK_TEXT(d.ok(), r.in);
        STRCMP_EQUAL(r.out, d.value().c_str());
    }
    CHECK_FALSE(base64_decode("Zm9").ok());
    CHECK_FALSE(base64_decode("Zm9v!!!=").ok());
}

// mbed TLS is loaded on first use, not linked; a board without it gets an
// error naming the library and why, never a crash.
TEST(Credentials, Base64LibraryMissingOrWrongIsAnErrorNamingIt) {
    CHECK(probe_base64_library("libmbedtls.so.14").ok());
    auto absent = probe_base64_library("libdaemonlet-absent.so.9");
    CHECK_FALSE(absent.ok());
    STRCMP_EQUAL("unavailable", absent.error().code_name());
    CHECK_TEXT(absent.error().message.find("base64: libdaemonlet-absent.so.9 not available: ") == 0,
               absent.error().message.c_str());
    CHECK(absent.error().message.find("cannot open shared object file") != std::string::npos);
    auto wrong = probe_base64_library("libc.so.6");
    CHECK_FALSE(wrong.ok());
    STRCMP_EQUAL(
        "base64: libc.so.6 not available: libc.so.6: no mbedtls_base64_decode: mbed TLS 2.28 (libmbedtls14) "
        "is needed",
        wrong.error().message.c_str());
}
