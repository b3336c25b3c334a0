// The ControlServer component (agent/daemon/control_server.h) on a real socket and
// a real libuv loop, driven by the CLI's own client (LineJsonClient), the
// agent's side faked by its Handlers. Pins what `daemonlet delete pod
// --wait` and `daemonlet rollout status --watch` see: kubectl's wait for
// the pod to go, and the watch that prints each new status until done.
#include <csignal>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agent/daemon/control_server.h"
#include "tests/store/store_fixture.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using daemonlet::agent::ControlServer;
using platform::LineJsonClient;

TEST_GROUP(ControlServer) {
    testing::TempDir dir;
    uv_loop_t loop{};
    std::unique_ptr<ControlServer> control;
    bool stopping = false;
    std::map<std::string, RolloutStatus> statuses;  // the fake agent's DaemonSets, by "ns/name"
    std::map<std::string, bool> pods;               // uid -> exists
    LineJsonClient client;
    ControlServer::Handlers::UndoReply held_reply;

    void setup() override {
        std::signal(SIGPIPE, SIG_IGN);  // as the agent does
        uv_loop_init(&loop);
        ControlServer::Handlers h;
        h.status = [] { return Json{{"running", true}}; };
        h.stopping = [this] { return stopping; };
        h.delete_pod = [this](const std::string& ns, const std::string& name) -> std::optional<std::string> {
            if (ns == "kube-system" && name == "agent-x") {
                pods["uid-1"] = true;
                return std::string("uid-1");
            }
            return std::nullopt;
        };
        h.undo = [this](const std::string&, const std::string& name, std::int64_t to,
                        ControlServer::Handlers::UndoReply reply) {
            if (name == "later") {  // answered once the test says the flush is done
                held_reply = std::move(reply);
                return;
            }
            if (to == 9)
                return reply(Error{ErrorCode::K8sNotFound, "unable to find specified revision 9 in history"});
            reply(std::string("rolled back"));
        };
        h.rollout_status = [this](const std::string& ns,
                                  const std::string& name) -> std::optional<RolloutStatus> {
            auto it = statuses.find(ns + "/" + name);
            if (it == statuses.end()) return std::nullopt;
            return it->second;
        };
        control = std::make_unique<ControlServer>(&loop, dir.file("daemonlet.sock"), std::move(h));
        auto s = control->start();
        CHECK_TEXT(s.ok(), s.ok() ? "" : s.error().message.c_str());
        CHECK(client.connect(dir.file("daemonlet.sock")).ok());
    }
    void teardown() override {
        control->close();
        control.reset();
        uv_run(&loop, UV_RUN_DEFAULT);  // the close callbacks
        LONGS_EQUAL(0, uv_loop_close(&loop));
    }
    // Sends `req`, then the first answer line.
    Json ask(const Json& req) {
        CHECK(client.send(req).ok());
        return next();
    }
    // The loop turns until the client reads a line or the connection ends;
    // a deadline of 5 s (the client's poll paces the turns).
    Result<Json> read() {
        Result<Json> r = Error{ErrorCode::Timeout, "nothing within 5 s"};
        for (int i = 0; i < 5000; ++i) {
            uv_run(&loop, UV_RUN_NOWAIT);
            r = client.receive(1);
            if (r.ok() || r.error().code != ErrorCode::Timeout) break;
        }
        return r;
    }
    Json next() {
        auto r = read();
        CHECK_TEXT(r.ok(), r.ok() ? "" : r.error().message.c_str());
        return r.ok() ? r.value() : Json();
    }
    // Nothing more was sent, and the server keeps the connection open.
    void nothing_sent() {
        uv_run(&loop, UV_RUN_NOWAIT);
        auto r = client.receive(0);
        CHECK_FALSE(r.ok());
        STRCMP_EQUAL("timeout", r.error().code_name());
    }
    void closed() {
        auto r = read();
        CHECK_FALSE(r.ok());
        STRCMP_EQUAL("closed", r.error().code_name());
    }
    void reconciled() {
        control->after_reconcile([this](const std::string& uid) { return pods.count(uid) > 0; }, statuses);
    }
};

// kubectl delete --wait: the answer names the pod, then "gone" once the
// reconcile no longer sees it.
TEST(ControlServer, ADeleteWaitedOnIsAnsweredWhenThePodIsGone) {
    Json r = ask({{"op", "delete_pod"}, {"namespace", "kube-system"}, {"name", "agent-x"}, {"wait", true}});
    CHECK_TRUE(r.value("deleted", false));
    STRCMP_EQUAL("uid-1", r.value("uid", "").c_str());
    reconciled();
    nothing_sent();
    pods.erase("uid-1");
    reconciled();
    CHECK_TRUE(next().value("gone", false));
    closed();
}

TEST(ControlServer, DeletingAPodThatDoesNotRunIsNotFound) {
    Json r = ask({{"op", "delete_pod"}, {"namespace", "kube-system"}, {"name", "nope"}});
    STRCMP_EQUAL("NotFound", r.value("error", "").c_str());
    STRCMP_EQUAL("pods \"nope\" not found", r.value("message", "").c_str());
    closed();
}

// kubectl rollout status --watch: each new message once, then done closes.
TEST(ControlServer, AWatchGetsEachNewStatusUntilDone) {
    statuses["kube-system/agent"] = {
        "Waiting for daemon set \"agent\" rollout to finish: 0 of 1 updated pods are available...", false,
        ""};
    Json r =
        ask({{"op", "rollout_status"}, {"namespace", "kube-system"}, {"name", "agent"}, {"watch", true}});
    CHECK_FALSE(r["status"].value("done", true));
    reconciled();
    nothing_sent();
    statuses["kube-system/agent"] = {"daemon set \"agent\" successfully rolled out", true, ""};
    reconciled();
    r = next();
    CHECK_TRUE(r["status"].value("done", false));
    STRCMP_EQUAL("daemon set \"agent\" successfully rolled out", r["status"].value("message", "").c_str());
    closed();
}

TEST(ControlServer, AWatchedDaemonSetThatGoesIsNotFound) {
    statuses["kube-system/agent"] = {"Waiting...", false, ""};
    ask({{"op", "rollout_status"}, {"namespace", "kube-system"}, {"name", "agent"}, {"watch", true}});
    statuses.clear();
    reconciled();
    STRCMP_EQUAL("NotFound", next().value("error", "").c_str());
    closed();
}

TEST(ControlServer, UndoAnswersTheAgentsResult) {
    Json r = ask({{"op", "undo"}, {"namespace", "kube-system"}, {"name", "agent"}});
    STRCMP_EQUAL("rolled back", r.value("result", "").c_str());
    closed();
}

// The agent answers an undo once its rollback is on the disk (the store's
// worker flushes it): meanwhile the client waits and the loop serves others.
TEST(ControlServer, AnUndoIsAnsweredWhenTheAgentReplies) {
    CHECK(client.send(Json{{"op", "undo"}, {"namespace", "kube-system"}, {"name", "later"}}).ok());
    for (int i = 0; i < 5000 && !held_reply; ++i) uv_run(&loop, UV_RUN_NOWAIT);
    CHECK_TRUE(static_cast<bool>(held_reply));
    nothing_sent();
    LineJsonClient other;
    CHECK(other.connect(dir.file("daemonlet.sock")).ok());
    CHECK(other.send(Json{{"op", "status"}}).ok());
    Result<Json> st = Error{ErrorCode::Timeout, ""};
    for (int i = 0; i < 5000; ++i) {
        uv_run(&loop, UV_RUN_NOWAIT);
        st = other.receive(1);
        if (st.ok() || st.error().code != ErrorCode::Timeout) break;
    }
    CHECK_TRUE(st.ok() && st.value().value("running", false));
    held_reply(std::string("rolled back"));
    STRCMP_EQUAL("rolled back", next().value("result", "").c_str());
    closed();
}

// An undo answered just as the agent stops (its flush done, storage.h
// finish_flushes, then the socket closes): the answer is written whole
// before the connection closes, even one the socket's buffer cannot take at
// once (a client that has not read yet).
TEST(ControlServer, AnAnswerSentBeforeCloseIsWrittenBeforeTheConnectionCloses) {
    CHECK(client.send(Json{{"op", "undo"}, {"namespace", "kube-system"}, {"name", "later"}}).ok());
    for (int i = 0; i < 5000 && !held_reply; ++i) uv_run(&loop, UV_RUN_NOWAIT);
    CHECK_TRUE(static_cast<bool>(held_reply));
    const std::string big(600 * 1024, 'x');  // more than a unix socket's buffer
    held_reply(big);
    control->close();
    CHECK_TRUE(next().value("result", "") == big);
    closed();
}

// kubectl rollout undo --to-revision of a revision not in the history.
TEST(ControlServer, UndoAnswersTheAgentsError) {
    Json r = ask({{"op", "undo"}, {"namespace", "kube-system"}, {"name", "agent"}, {"to_revision", 9}});
    STRCMP_EQUAL("NotFound", r.value("error", "").c_str());
    STRCMP_EQUAL("unable to find specified revision 9 in history", r.value("message", "").c_str());
    closed();
}

TEST(ControlServer, StatusAnswersTheAgentsState) {
    CHECK_TRUE(ask({{"op", "status"}}).value("running", false));
    closed();
}

TEST(ControlServer, RequestsAreRefusedWhileTheAgentStops) {
    stopping = true;
    Json r = ask({{"op", "undo"}, {"namespace", "kube-system"}, {"name", "agent"}});
    STRCMP_EQUAL("Unavailable", r.value("error", "").c_str());
    closed();
}

TEST(ControlServer, ARequestWithoutANameIsABadRequest) {
    Json r = ask({{"op", "delete_pod"}, {"namespace", "kube-system"}});
    STRCMP_EQUAL("BadRequest", r.value("error", "").c_str());
    closed();
}
