// NodeAddresses (agent/daemon/node_ips.h): the real component over a real store
// file, its interface reader faked. Pins what the kubelet's
// nodestatus.NodeAddress does with them: nodeIP wins over the interfaces,
// a change is published (and stored) once, an unreadable interface list
// keeps the addresses known.
#include <memory>
#include <string>
#include <vector>

#include "agent/daemon/node_ips.h"
#include "tests/store/store_fixture.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;
using daemonlet::agent::NodeAddresses;

namespace {

HostNetworkState host_with(const std::string& ip) {
    HostNetworkState h;
    h.interfaces.push_back({"lo", true, true, false, {"127.0.0.1"}});
    h.interfaces.push_back({"eth0", true, false, false, {ip}});
    h.ipv4_default_routes = {"eth0"};
    return h;
}

}  // namespace

TEST_GROUP(NodeAddresses) {
    testing::TempDir dir;
    std::unique_ptr<store::Store> store;
    Result<HostNetworkState> host = host_with("192.168.1.10");
    int changes = 0;
    std::unique_ptr<NodeAddresses> node;

    void setup() override {
        store::OpenReport report;
        store = MUST(store::Store::open(dir.file("daemonlet.db"), 1000, &report));
        node = std::make_unique<NodeAddresses>(
            *store, [this] { return host; }, [this] { ++changes; });
    }
    void teardown() override {
        node.reset();
        store.reset();
    }
    std::string stored() {
        std::string out;
        for (const auto& ip : agent::stored_node_ips(*store)) out += (out.empty() ? "" : ",") + ip;
        return out;
    }
};

// nodeutil.GetNodeHostIPs without --node-ip: the default route's interface.
TEST(NodeAddresses, TheDefaultRoutesInterfaceWithoutNodeIp) {
    node->refresh({});
    CHECK_EQUAL(1, changes);
    CHECK_EQUAL(1u, node->ips().size());
    STRCMP_EQUAL("192.168.1.10", node->ips().front().c_str());
    STRCMP_EQUAL("192.168.1.10", stored().c_str());
}

// --node-ip given: it is the node's IP, the interfaces are not read.
TEST(NodeAddresses, NodeIpWinsOverTheInterfaces) {
    host = Error{ErrorCode::Io, "getifaddrs: must not be read"};
    node->refresh({"10.0.0.5"});
    CHECK_EQUAL(1, changes);
    STRCMP_EQUAL("10.0.0.5", stored().c_str());
}

// The minute's re-check of an unchanged node writes nothing and tells nobody.
TEST(NodeAddresses, AnUnchangedAddressIsPublishedOnce) {
    node->refresh({});
    node->refresh({});
    CHECK_EQUAL(1, changes);
}

// A DHCP lease that changes the address: the new one is published and stored.
TEST(NodeAddresses, ANewLeaseIsPublished) {
    node->refresh({});
    host = host_with("192.168.1.20");
    node->refresh({});
    CHECK_EQUAL(2, changes);
    STRCMP_EQUAL("192.168.1.20", node->ips().front().c_str());
    STRCMP_EQUAL("192.168.1.20", stored().c_str());
}

// getifaddrs failing keeps what is known rather than dropping hostIP.
TEST(NodeAddresses, AnUnreadableInterfaceListKeepsTheKnownAddress) {
    node->refresh({});
    host = Error{ErrorCode::Io, "getifaddrs: Cannot allocate memory"};
    node->refresh({});
    CHECK_EQUAL(1, changes);
    STRCMP_EQUAL("192.168.1.10", node->ips().front().c_str());
    STRCMP_EQUAL("192.168.1.10", stored().c_str());
}

// A board with only lo: no address, said (and stored) as none.
TEST(NodeAddresses, OnlyLoopbackIsNoAddress) {
    HostNetworkState lo;
    lo.interfaces.push_back({"lo", true, true, false, {"127.0.0.1"}});
    host = lo;
    node->refresh({});
    CHECK_EQUAL(1, changes);
    CHECK_TRUE(node->ips().empty());
    STRCMP_EQUAL("", stored().c_str());
}
