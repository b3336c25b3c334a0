// The shared helpers: trim (core/strings.h) and io_error (core/io_error.h).
#include <cerrno>
#include <string>

#include "core/io_error.h"
#include "core/strings.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

struct TrimRow {
    const char* name;
    const char* in;
    const char* out;
};

const TrimRow kTrimRows[] = {
    {"nothing to trim", "abc", "abc"},
    {"a command's output ends in a newline", "12345\n", "12345"},
    {"a header value after the colon", "  text/plain \r\n", "text/plain"},
    {"inner spaces stay", " a b\tc ", "a b\tc"},
    {"tabs, form feed and vertical tab are whitespace", "\t\f\vx\v\f\t", "x"},
    {"only whitespace is empty", " \n\t ", ""},
    {"empty is empty", "", ""},
};

}  // namespace

TEST_GROUP(SharedHelpers){};

TEST(SharedHelpers, TrimRemovesAsciiWhitespaceAtBothEnds) {
    for (const auto& row : kTrimRows) STRCMP_EQUAL_TEXT(row.out, trim(row.in).c_str(), row.name);
}

TEST(SharedHelpers, IoErrorNamesThePathTheOperationAndTheReason) {
    const Error e = io_error("/var/lib/daemonlet/state.db", "open: stat", ENOENT);
    STRCMP_EQUAL("io", e.code_name());
    STRCMP_EQUAL("/var/lib/daemonlet/state.db: open: stat: No such file or directory", e.message.c_str());
    STRCMP_EQUAL("/x: Permission denied", io_error("/x", {}, EACCES).message.c_str());
}

TEST(SharedHelpers, IoErrorReadsTheCallersErrnoByDefault) {
    errno = EEXIST;
    STRCMP_EQUAL("/d: mkdir: File exists", io_error("/d", "mkdir").message.c_str());
}
