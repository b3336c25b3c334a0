// dl_load (platform/dl_library.h), the loader behind libcurl, mbed TLS,
// nghttp2 and libcrypto, on zlib (libz.so.1, on every Debian system): a
// library that loads gives a table that works and stays loaded; a missing
// library or function is an error naming it, and a library without all its
// functions is closed again.
#include <dlfcn.h>

#include <string>

#include "platform/dl_library.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using namespace daemonlet::platform;

namespace {

struct Zlib {
    const char* (*version)();
    unsigned long (*crc32)(unsigned long, const unsigned char*, unsigned);
    const char* (*absent)();
};

bool zlib_loaded() {
    void* h = ::dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h) ::dlclose(h);
    return h != nullptr;
}

}  // namespace

TEST_GROUP(DlLibrary){};

TEST(DlLibrary, LoadsTheTableNamesTheFirstMissingFunctionOrTheMissingLibrary) {
    // Two functions missing: the first is named; the handle is closed (not
    // unloaded: RTLD_NODELETE, its dependencies' constructors having run).
    auto wrong = dl_load_table<Zlib>({"libz.so.1", "install zlib1g", "zlib 1.2 is needed"},
                                     [](DlSymbols& sym, Zlib& z) {
                                         sym(z.version, "zlibVersion");
                                         sym(z.absent, "daemonlet_no_such_function");
                                         sym(z.crc32, "daemonlet_nor_this_one");
                                     });
    CHECK_FALSE(wrong.ok());
    STRCMP_EQUAL("unavailable", wrong.error().code_name());
    STRCMP_EQUAL("libz.so.1: no daemonlet_no_such_function: zlib 1.2 is needed",
                 wrong.error().message.c_str());
    CHECK_TEXT(zlib_loaded(), "a library missing a function stays mapped");

    // Without a version hint, the name alone.
    auto bare = dl_load_table<Zlib>({"libz.so.1", "install zlib1g", nullptr},
                                    [](DlSymbols& sym, Zlib& z) { sym(z.absent, "daemonlet_absent"); });
    CHECK_FALSE(bare.ok());
    STRCMP_EQUAL("libz.so.1: no daemonlet_absent", bare.error().message.c_str());

    // No such library: dlerror's text (naming it), then what to install.
    CHECK(::dlerror() == nullptr);  // dlsym's failures leave nothing pending
    auto absent = dl_load_table<Zlib>({"libdaemonlet-absent.so.9", "install daemonlet-absent9", nullptr},
                                      [](DlSymbols& sym, Zlib& z) { sym(z.version, "zlibVersion"); });
    CHECK_FALSE(absent.ok());
    STRCMP_EQUAL("unavailable", absent.error().code_name());
    const std::string& why = absent.error().message;
    CHECK_TEXT(why.find("libdaemonlet-absent.so.9: cannot open shared object file") == 0, why.c_str());
    CHECK_TEXT(why.size() > 27 && why.compare(why.size() - 27, 27, ": install daemonlet-absent9") == 0,
               why.c_str());

    // Every function found: the table works and the library stays loaded.
    auto zlib = dl_load_table<Zlib>({"libz.so.1", "install zlib1g", nullptr}, [](DlSymbols& sym, Zlib& z) {
        sym(z.version, "zlibVersion");
        sym(z.crc32, "crc32");
    });
    CHECK_TEXT(zlib.ok(), zlib.ok() ? "" : zlib.error().message.c_str());
    CHECK(zlib.value().absent == nullptr);
    CHECK(zlib.value().version()[0] == '1');
    const unsigned char check[] = "123456789";  // CRC-32's check value
    UNSIGNED_LONGS_EQUAL(0xCBF43926UL, zlib.value().crc32(0, check, 9));
    CHECK(zlib_loaded());
}
