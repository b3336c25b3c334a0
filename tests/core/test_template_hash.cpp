// The template hash is a pure function of the template's content.

#include <string>

#include "core/template_hash.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

TEST_GROUP(TemplateHash){};

TEST(TemplateHash, IgnoresKeyOrder) {
    Json a = Json::parse(
        R"({"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"containers":[{"name":"c","image":"i"}]}})");
    Json b = Json::parse(
        R"({"spec":{"containers":[{"image":"i","name":"c"}]},"metadata":{"labels":{"b":"2","a":"1"}}})");
    STRCMP_EQUAL(template_hash(a).c_str(), template_hash(b).c_str());
}

TEST(TemplateHash, ChangesWithContentAndCollisionCount) {
    Json a = Json::parse(R"({"spec":{"containers":[{"name":"c","image":"i:1"}]}})");
    Json b = Json::parse(R"({"spec":{"containers":[{"name":"c","image":"i:2"}]}})");
    CHECK(template_hash(a) != template_hash(b));
    CHECK(template_hash(a) != template_hash(a, 1));
    CHECK(template_hash(a, 1) != template_hash(a, 2));
    // Array order is content: containers in another order are another template.
    Json c = Json::parse(R"({"spec":{"containers":[{"name":"x"},{"name":"y"}]}})");
    Json d = Json::parse(R"({"spec":{"containers":[{"name":"y"},{"name":"x"}]}})");
    CHECK(template_hash(c) != template_hash(d));
}

// Pinned values: the same on every architecture, compiler and run. The
// aarch64 and armhf suites run this same test under qemu.
TEST(TemplateHash, IsStableAcrossArchitectures) {
    Json t = Json::parse(
        R"({"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"busybox:1.36","args":["sleep","1.5e3"]}],"terminationGracePeriodSeconds":30}})");
    STRCMP_EQUAL(
        R"({"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"args":["sleep","1.5e3"],"image":"busybox:1.36","name":"c"}],"terminationGracePeriodSeconds":30}})",
        canonical_json(t).c_str());
    CHECK_EQUAL(0xcbf29ce484222325ULL, fnv1a64(""));
    CHECK_EQUAL(0xaf63dc4c8601ec8cULL, fnv1a64("a"));
    STRCMP_EQUAL("9d4c6c67bfcfdc77447", template_hash(t).c_str());
}

// hex64: the 16 hex digits a static pod's uid and a manifest's file hash
// are made of, zero-padded.
TEST(TemplateHash, Hex64IsSixteenLowerCaseDigits) {
    STRCMP_EQUAL("000000000000001f", hex64(0x1f).c_str());
    STRCMP_EQUAL("ffffffffffffffff", hex64(~std::uint64_t{0}).c_str());
    STRCMP_EQUAL("cbf29ce484222325", hex64(fnv1a64("")).c_str());  // FNV-1a's offset basis
}
