// OperationQueue: the bound on the agent's parallel runtime operations, and
// the order of one pod's.
#include <functional>
#include <string>
#include <vector>

#include "platform/operation_queue.h"

#include <CppUTest/TestHarness.h>

using daemonlet::platform::OperationQueue;

namespace {

// Operations that record their start and finish only when told.
struct Recorder {
    std::vector<std::string> started;
    std::vector<OperationQueue::Finished> finish;
    OperationQueue::Operation op(const std::string& name) {
        return [this, name](OperationQueue::Finished f) {
            started.push_back(name);
            finish.push_back(std::move(f));
        };
    }
};

}  // namespace

TEST_GROUP(OperationQueue){};

TEST(OperationQueue, AtMostTheLimitRunAtOnce) {
    OperationQueue q(2);
    Recorder r;
    for (const char* pod : {"a", "b", "c", "d"}) q.submit(pod, r.op(pod));
    LONGS_EQUAL(2, q.running());
    LONGS_EQUAL(2, q.queued());
    CHECK((r.started == std::vector<std::string>{"a", "b"}));
    r.finish[1]();  // b ends: c takes its place
    CHECK((r.started == std::vector<std::string>{"a", "b", "c"}));
    LONGS_EQUAL(2, q.running());
    r.finish[1]();  // a second call does nothing
    LONGS_EQUAL(2, q.running());
    r.finish[0]();
    r.finish[2]();
    r.finish[3]();
    LONGS_EQUAL(0, q.running());
    LONGS_EQUAL(0, q.queued());
}

TEST(OperationQueue, OnePodsOperationsRunOneAtATimeInOrder) {
    OperationQueue q(4);
    Recorder r;
    q.submit("pod-1", r.op("start c1"));
    q.submit("pod-1", r.op("stop c1"));
    q.submit("pod-2", r.op("start c2"));
    // pod-2 does not wait behind pod-1's stop; pod-1's stop waits for its start.
    CHECK((r.started == std::vector<std::string>{"start c1", "start c2"}));
    CHECK(q.busy("pod-1"));
    r.finish[0]();
    CHECK((r.started == std::vector<std::string>{"start c1", "start c2", "stop c1"}));
    r.finish[1]();
    r.finish[2]();
    CHECK_FALSE(q.busy("pod-1"));
    CHECK_FALSE(q.busy("pod-2"));
}

TEST(OperationQueue, OperationsThatFinishAtOnceDoNotDeepenTheStack) {
    OperationQueue q(1);
    int ran = 0;
    for (int i = 0; i < 10000; ++i)
        q.submit("p" + std::to_string(i % 7), [&ran](OperationQueue::Finished f) {
            ++ran;
            f();
        });
    LONGS_EQUAL(10000, ran);
    LONGS_EQUAL(0, q.running());
}

TEST(OperationQueue, ARaisedLimitStartsWhatWaitsAndDroppedOnesNeverRun) {
    OperationQueue q(1);
    Recorder r;
    for (const char* pod : {"a", "b", "c", "d"}) q.submit(pod, r.op(pod));
    q.set_limit(3);
    CHECK((r.started == std::vector<std::string>{"a", "b", "c"}));
    q.drop_queued();
    for (auto& f : r.finish) f();
    CHECK((r.started == std::vector<std::string>{"a", "b", "c"}));
    LONGS_EQUAL(0, q.running());
}
