// read_file on real files: the bound it enforces, and that a file costs one
// buffer of its size (a 3 MiB manifest read by growing the buffer past its
// size took 6 MiB plus the 3 MiB copied: issue 15 §5, bench/memory.sh).
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "platform/file.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

TEST_GROUP(ReadFile) {
    std::string dir;
    void setup() override {
        char tmpl[] = "/tmp/daemonlet-read-file.XXXXXX";
        const char* made = mkdtemp(tmpl);
        CHECK(made != nullptr);
        dir = made;
    }
    void teardown() override { std::filesystem::remove_all(dir); }
    std::string write(const std::string& name, const std::string& content) const {
        const std::string path = dir + "/" + name;
        std::ofstream(path, std::ios::binary) << content;
        return path;
    }
};

TEST(ReadFile, AFileAtTheLimitIsReadWholeIntoOneBufferOfItsSize) {
    const std::string content(300 * 1024, 'x');
    auto r = platform::read_file(write("at.yaml", content), content.size());
    CHECK_TEXT(r.ok(), r.ok() ? "" : r.error().message.c_str());
    CHECK(r.value() == content);
    // Its size and the one byte that shows EOF: not a doubled capacity.
    CHECK_TEXT(r.value().capacity() <= content.size() + 1, std::to_string(r.value().capacity()).c_str());
}

TEST(ReadFile, AFileOverTheLimitIsRefusedNamingItsPathSizeAndTheLimit) {
    const std::string path = write("over.yaml", std::string(1025, 'x'));
    auto r = platform::read_file(path, 1024);
    CHECK(!r.ok());
    STRCMP_EQUAL((path + ": file is 1025 bytes, over the limit of 1024 bytes").c_str(),
                 r.error().message.c_str());
}

// /proc and /sys files say they are empty, and a sysctl's file answers a
// single read: read with a buffer of its own, not of the stated size.
TEST(ReadFile, AProcFileThatSaysItIsEmptyIsReadWhole) {
    auto r = platform::read_file("/proc/sys/kernel/pid_max", 64);
    CHECK(r.ok());
    const long pid_max = std::stol(r.value());
    CHECK_TEXT(pid_max >= 301, r.value().c_str());  // the kernel's minimum (RESERVED_PIDS + 1)
}
