// ErrorCode's strings are a contract (-o json, logs, daemonlet-image's
// error line): each is pinned here, and each reads back to its code.

#include <set>
#include <string>

#include "core/error_code.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

TEST_GROUP(ErrorCode){};

TEST(ErrorCode, EveryCodeHasAUniqueStringThatReadsBackToIt) {
    std::set<std::string> seen;
    for (ErrorCode c : kAllErrorCodes) {
        const std::string s = to_string(c);
        CHECK_TEXT(seen.insert(s).second, s.c_str());
        auto back = error_code_from_string(s);
        CHECK_TEXT(back && *back == c, s.c_str());
    }
}

TEST(ErrorCode, TheStringsAreTodaysOnes) {
    STRCMP_EQUAL("invalid", to_string(ErrorCode::Invalid));
    STRCMP_EQUAL("not_found", to_string(ErrorCode::NotFound));
    STRCMP_EQUAL("NotFound", to_string(ErrorCode::K8sNotFound));
    STRCMP_EQUAL("image_not_found", to_string(ErrorCode::ImageNotFound));
    STRCMP_EQUAL("pull_failed", to_string(ErrorCode::PullFailed));
    STRCMP_EQUAL("ctr_failed", to_string(ErrorCode::CtrFailed));
    STRCMP_EQUAL("too_long", to_string(ErrorCode::TooLong));
}

TEST(ErrorCode, AnUnknownStringIsNoCode) {
    CHECK_FALSE(error_code_from_string("").has_value());
    CHECK_FALSE(error_code_from_string("Invalid").has_value());
    CHECK_FALSE(error_code_from_string("unset").has_value());
}
