// Following a collection as client-go's Reflector (tools/cache/reflector.go
// ListAndWatch), its pager (tools/pager: pages with limit/continue, a full
// list again when a continue token expires) and its back-off manager
// (wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)).
#include <string>

#include "core/reflector.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using Kind = ReflectorRequest::Kind;

namespace {

Json ds(const std::string& name, const std::string& rv) {
    return Json::parse(R"({"metadata": {"name": ")" + name +
                       R"(", "namespace": "edge", "resourceVersion": ")" + rv + R"("}})");
}
Json page(std::vector<Json> items, const std::string& rv, const std::string& cont = "") {
    Json l = Json::object();
    l["kind"] = "DaemonSetList";
    l["metadata"] = Json::object();
    l["metadata"]["resourceVersion"] = rv;
    if (!cont.empty()) l["metadata"]["continue"] = cont;
    l["items"] = Json::array();
    for (auto& i : items) l["items"].push_back(i);
    return l;
}
WatchEvent event(WatchEventType t, Json o) { return WatchEvent{t, std::move(o)}; }
Json status(int code) { return Json::parse(R"({"kind": "Status", "code": )" + std::to_string(code) + "}"); }

Reflector daemonsets() {
    return Reflector({"/apis/apps/v1/daemonsets", "apps/v1", "DaemonSet", "edge=true", "", 2});
}

// Lists to completion with one page and returns the reflector watching.
Reflector synced_at(const std::string& rv) {
    Reflector r = daemonsets();
    (void)r.begin(0, 0);
    auto ch = r.on_list_page(page({ds("a", "5")}, rv));
    CHECK(ch.ok() && ch.value().replace);
    return r;
}

}  // namespace

TEST_GROUP(Reflector){};

TEST(Reflector, ListsInPagesAndAppliesNothingBeforeTheLastOne) {
    Reflector r = daemonsets();
    auto first = r.begin(0, 0);
    CHECK(first.kind == Kind::List);
    // A consistent list (no resourceVersion), the selector escaped.
    STRCMP_EQUAL("/apis/apps/v1/daemonsets?limit=2&labelSelector=edge%3Dtrue", first.target.c_str());

    auto p1 = r.on_list_page(page({ds("a", "5"), ds("b", "6")}, "9", "tok/1"));
    CHECK(p1.ok());
    CHECK_FALSE(p1.value().replace);
    LONGS_EQUAL(0, p1.value().objects.size());
    CHECK_FALSE(r.synced());
    STRCMP_EQUAL("/apis/apps/v1/daemonsets?limit=2&labelSelector=edge%3Dtrue&continue=tok%2F1",
                 r.begin(1, 0).target.c_str());

    auto p2 = r.on_list_page(page({ds("c", "7")}, "9"));
    CHECK(p2.ok());
    CHECK(p2.value().replace);
    LONGS_EQUAL(3, p2.value().objects.size());
    // A list's items get their kind, to read as a watch event's objects do.
    STRCMP_EQUAL("DaemonSet", p2.value().objects[0]["kind"].get<std::string>().c_str());
    STRCMP_EQUAL("apps/v1", p2.value().objects[2]["apiVersion"].get<std::string>().c_str());
    STRCMP_EQUAL("9", p2.value().resource_version.c_str());
    CHECK(r.synced());

    // Then a watch from the list's resourceVersion, with bookmarks and a
    // timeout in [300, 600) s as minWatchTimeout * (1 + rand).
    auto w = r.begin(3, 0.5);
    CHECK(w.kind == Kind::Watch);
    LONGS_EQUAL(450, w.timeout_s);
    STRCMP_EQUAL(
        "/apis/apps/v1/daemonsets?watch=1&allowWatchBookmarks=true&resourceVersion=9&timeoutSeconds=450"
        "&labelSelector=edge%3Dtrue",
        w.target.c_str());
}

TEST(Reflector, AFailedPageDropsTheListAndBacksOff) {
    Reflector r = daemonsets();
    (void)r.begin(0, 0);
    CHECK(r.on_list_page(page({ds("a", "5"), ds("b", "6")}, "9", "tok")).ok());
    r.on_failure(500, false, 0, 1000, 0.5);
    // 800 ms jittered by up to 100%: 1200 ms here. Nothing was applied.
    auto wait = r.begin(1000, 0);
    CHECK(wait.kind == Kind::Wait);
    LONGS_EQUAL(2200, wait.at_ms);
    // Then the list starts over, without the continue token.
    auto again = r.begin(2200, 0);
    CHECK(again.kind == Kind::List);
    CHECK(again.target.find("continue") == std::string::npos);
    auto done = r.on_list_page(page({ds("c", "7")}, "10"));
    LONGS_EQUAL(1, done.value().objects.size());  // page 1's items are not kept
}

// A page over the client's byte bound (large objects): the list starts
// over with pages half as large, down to one object a page.
TEST(Reflector, APageTooLargeListsAgainWithSmallerPages) {
    Reflector r = Reflector({"/apis/apps/v1/daemonsets", "apps/v1", "DaemonSet", "", "", 100});
    CHECK(r.begin(0, 0).target.find("?limit=100") != std::string::npos);
    CHECK_TRUE(r.shrink_page());
    r.on_failure(0, false, 0, 0, 0);
    auto again = r.begin(10'000, 0);
    CHECK(again.kind == Kind::List);
    CHECK_TEXT(again.target.find("?limit=50") != std::string::npos, again.target.c_str());
    LONGS_EQUAL(50, r.page_size());
    for (int k = 0; k < 5; ++k) CHECK_TRUE(r.shrink_page());  // 25 12 6 3 1
    LONGS_EQUAL(1, r.page_size());
    CHECK_FALSE(r.shrink_page());
}

TEST(Reflector, AnExpiredContinueTokenListsAgainAtOnce) {
    // tools/pager: a 410 on a continuation page falls back to a full list.
    Reflector r = daemonsets();
    (void)r.begin(0, 0);
    CHECK(r.on_list_page(page({ds("a", "5")}, "9", "tok")).ok());
    r.on_failure(410, false, 0, 10, 0);
    auto again = r.begin(10, 0);
    CHECK(again.kind == Kind::List);
    CHECK(again.target.find("continue") == std::string::npos);
}

TEST(Reflector, WatchEventsUpsertDeleteAndMoveTheResourceVersion) {
    Reflector r = synced_at("9");
    (void)r.begin(0, 0);
    auto add = r.on_watch_event(event(WatchEventType::Added, ds("b", "10")), 1, 0);
    LONGS_EQUAL(1, add.objects.size());
    CHECK_FALSE(add.replace);
    auto mod = r.on_watch_event(event(WatchEventType::Modified, ds("b", "11")), 2, 0);
    LONGS_EQUAL(1, mod.objects.size());
    auto del = r.on_watch_event(event(WatchEventType::Deleted, ds("a", "12")), 3, 0);
    LONGS_EQUAL(0, del.objects.size());
    LONGS_EQUAL(1, del.deleted.size());
    // A bookmark changes nothing but the resourceVersion.
    auto bm = r.on_watch_event(
        event(WatchEventType::Bookmark, Json::parse(R"({"metadata": {"resourceVersion": "20"}})")), 4, 0);
    LONGS_EQUAL(0, bm.objects.size() + bm.deleted.size());
    STRCMP_EQUAL("20", bm.resource_version.c_str());
    // The server ends the watch after its timeout: watch again from there.
    r.on_watch_end(400'000, 0);
    auto next = r.begin(400'000, 0);
    CHECK(next.kind == Kind::Watch);
    CHECK(next.target.find("resourceVersion=20&") != std::string::npos);
}

TEST(Reflector, GoneInTheWatchListsAgainWithoutWaiting) {
    Reflector r = synced_at("9");
    (void)r.begin(0, 0);
    auto ch = r.on_watch_event(event(WatchEventType::Error, status(410)), 5, 0);
    LONGS_EQUAL(0, ch.objects.size() + ch.deleted.size());
    CHECK(r.begin(5, 0).kind == Kind::List);
    // The same for a 410 answer to the watch request itself.
    Reflector s = synced_at("9");
    (void)s.begin(0, 0);
    s.on_failure(410, false, 0, 5, 0);
    CHECK(s.begin(5, 0).kind == Kind::List);
}

TEST(Reflector, ARefusedOrThrottledWatchBacksOffAndWatchesAgain) {
    // reflector.go: connection refused and 429 resume the watch (no relist).
    Reflector r = synced_at("9");
    (void)r.begin(0, 0);
    r.on_failure(0, true, 0, 100, 0);
    CHECK(r.begin(100, 0).kind == Kind::Wait);
    auto w = r.begin(900, 0);
    CHECK(w.kind == Kind::Watch);
    CHECK(w.target.find("resourceVersion=9&") != std::string::npos);
    // 429 with Retry-After: 5 s, longer than the back-off, is honoured.
    r.on_failure(429, false, 5000, 1000, 0);
    LONGS_EQUAL(6000, r.begin(1000, 0).at_ms);
    CHECK(r.begin(6000, 0).kind == Kind::Watch);
    // Any other failure of a watch lists again after the back-off.
    r.on_failure(500, false, 0, 7000, 0);
    CHECK(r.begin(7000 + 30'000, 0).kind == Kind::List);
}

TEST(Reflector, BackOffDoublesToThirtySecondsAndResetsAfterTwoQuietMinutes) {
    Reflector r = daemonsets();
    const std::int64_t expected[] = {800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
    std::int64_t now = 0;
    for (std::int64_t d : expected) {
        (void)r.begin(now, 0);
        r.on_failure(503, false, 0, now, 0);
        auto w = r.begin(now, 0);
        LONGS_EQUAL(now + d, w.at_ms);
        now = w.at_ms;
    }
    LONGS_EQUAL(8, r.consecutive_failures());
    // More than 2 minutes after the last failure, the back-off starts over.
    now += 120'001;
    r.on_failure(503, false, 0, now, 0);
    LONGS_EQUAL(now + 800, r.begin(now, 0).at_ms);
}

TEST(Reflector, AVeryShortEmptyWatchIsAFailure) {
    Reflector r = synced_at("9");
    (void)r.begin(1000, 0);
    r.on_watch_end(1500, 0);  // ended within a second, no event
    auto w = r.begin(1500, 0);
    CHECK(w.kind == Kind::Wait);
    CHECK(r.begin(w.at_ms, 0).kind == Kind::List);
}

TEST(Reflector, AMalformedListIsAnError) {
    Reflector r = daemonsets();
    (void)r.begin(0, 0);
    CHECK_FALSE(r.on_list_page(Json::parse("[1]")).ok());
    CHECK_FALSE(r.on_list_page(Json::parse(R"({"items": []})")).ok());  // no resourceVersion
    CHECK_FALSE(r.on_list_page(Json::parse(R"({"metadata": {"resourceVersion": "1"}, "items": [1]})")).ok());
    CHECK_FALSE(r.synced());
}

TEST_GROUP(WatchDecoder){};

TEST(WatchDecoder, EventsSplitAcrossChunksAndBlankLines) {
    WatchDecoder d;
    auto a = d.feed(R"({"type":"ADDED","object":{"metadata":{"name":"x"}}})"
                    "\n"
                    R"({"type":"MODI)");
    CHECK(a.ok());
    LONGS_EQUAL(1, a.value().size());
    CHECK(a.value()[0].type == WatchEventType::Added);
    CHECK(d.mid_line());
    auto b =
        d.feed(std::string(R"(FIED","object":{}})") + "\r\n\n" + R"({"type":"BOOKMARK","object":{}})" + "\n");
    CHECK(b.ok());
    LONGS_EQUAL(2, b.value().size());
    CHECK(b.value()[0].type == WatchEventType::Modified);
    CHECK(b.value()[1].type == WatchEventType::Bookmark);
    CHECK_FALSE(d.mid_line());
}

TEST(WatchDecoder, BadStreamsAreErrors) {
    struct Row {
        const char* name;
        std::string data;
        const char* expected;
    };
    const Row rows[] = {
        {"not json", "{nope\n", "not JSON"},
        {"no type",
         R"({"object":{}})"
         "\n",
         "type: expected a string"},
        {"no object",
         R"({"type":"ADDED"})"
         "\n",
         "object: expected an object"},
        {"unknown type",
         R"({"type":"EXPLODED","object":{}})"
         "\n",
         "unknown \"EXPLODED\""},
        {"too long", std::string(100, 'x'), "longer than 64 bytes"},
    };
    for (const auto& row : rows) {
        WatchDecoder d(64);
        auto r = d.feed(row.data);
        CHECK_TEXT(!r.ok(), row.name);
        if (!r.ok())
            CHECK_TEXT(r.error().message.find(row.expected) != std::string::npos, r.error().message.c_str());
    }
}

// The kubelet's watch-based manager (pkg/kubelet/util/manager/
// watch_based_manager.go): one reflector per ConfigMap or Secret, listing
// and watching its namespace with fieldSelector metadata.name=NAME.
TEST_GROUP(ObjectWatch){};

TEST(ObjectWatch, ListsAndWatchesOneObjectByItsName) {
    // NewWatchBasedManager's listObject / watchObject:
    // fields.OneTermEqualSelector("metadata.name", name).
    Reflector r(object_watch_target("/api/v1/namespaces/it/configmaps", "ConfigMap", "cm"));
    auto list = r.begin(0, 0);
    CHECK(list.kind == Kind::List);
    STRCMP_EQUAL("/api/v1/namespaces/it/configmaps?fieldSelector=metadata.name%3Dcm", list.target.c_str());
    CHECK(r.on_list_page(page({}, "7")).ok());
    // reflector.go watchList: from the list's resourceVersion, with bookmarks.
    auto w = r.begin(0, 0);
    CHECK(w.kind == Kind::Watch);
    CHECK(w.target.rfind(
              "/api/v1/namespaces/it/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=7", 0) == 0);
    CHECK(w.target.find("fieldSelector=metadata.name%3Dcm") != std::string::npos);
}

TEST(ObjectWatch, WhatTheChangesSayOfTheObject) {
    using K = ObjectWatchOutcome::Kind;
    Json cm = ds("cm", "8");
    Json other = ds("other", "9");
    struct Row {
        const char* name;  // the rule it pins
        ReflectorChanges changes;
        K expected;
    };
    const Row rows[] = {
        // objectCacheItem's store after Replace: the object listed.
        {"a complete list with it: present", {true, {cm}, {}, "8"}, K::Present},
        // A list without it: absent, as the manager's Get answers NotFound.
        {"a complete list without it: gone", {true, {}, {}, "8"}, K::Gone},
        {"a list of another name only: gone", {true, {other}, {}, "9"}, K::Gone},
        // watch ADDED / MODIFIED update the store, DELETED removes it.
        {"an ADDED or MODIFIED event: present", {false, {cm}, {}, "8"}, K::Present},
        {"a DELETED event: gone", {false, {}, {cm}, "8"}, K::Gone},
        // A bookmark moves the resourceVersion only.
        {"a bookmark: nothing", {false, {}, {}, "10"}, K::Nothing},
        {"an event of another name: nothing", {false, {other}, {}, "9"}, K::Nothing},
    };
    for (const Row& row : rows) {
        ReflectorChanges ch = row.changes;
        ObjectWatchOutcome o = object_watch_outcome(std::move(ch), "cm");
        if (o.kind != row.expected) FAIL(row.name);
        if (o.kind == K::Present && o.object != cm) FAIL(row.name);
    }
}
