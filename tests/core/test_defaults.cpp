// API server defaults (pkg/apis/apps/v1/defaults_test.go, pkg/apis/core/v1/defaults_test.go).

#include <string>

#include "core/defaults.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {
struct PullRow {
    const char* image;
    const char* policy;
};
// core/v1 defaults_test.go TestSetDefaultImagePullPolicy and ParseImageName cases.
const PullRow kPullRows[] = {
    {"nginx", "Always"},
    {"nginx:latest", "Always"},
    {"docker.io/library/nginx", "Always"},
    {"nginx:1.27", "IfNotPresent"},
    {"registry.local:5000/nginx", "Always"},  // the port is not a tag
    {"registry.local:5000/nginx:2", "IfNotPresent"},
    {"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "IfNotPresent"},
    {"nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "Always"},
};

Json minimal_ds() {
    return Json::parse(R"({
      "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x"},
      "spec": {"selector": {"matchLabels": {"a": "b"}},
               "template": {"metadata": {"labels": {"a": "b"}},
                            "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
                                      "ports": [{"containerPort": 80}],
                                      "livenessProbe": {"httpGet": {"port": 80}},
                                      "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}],
                                     "volumes": [{"name": "scratch"}]}}}})");
}
}  // namespace

TEST_GROUP(Defaults){};

TEST(Defaults, ImagePullPolicyFollowsTheTag) {
    for (const auto& row : kPullRows)
        STRCMP_EQUAL_TEXT(row.policy, default_image_pull_policy(row.image), row.image);
}

TEST(Defaults, DaemonSetGetsApiServerDefaults) {
    Json ds = minimal_ds();
    default_daemonset(ds);
    const Json& spec = ds["spec"];
    STRCMP_EQUAL("default", ds["metadata"]["namespace"].get<std::string>().c_str());
    STRCMP_EQUAL("RollingUpdate", spec["updateStrategy"]["type"].get<std::string>().c_str());
    CHECK(spec["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 1);
    CHECK(spec["updateStrategy"]["rollingUpdate"]["maxSurge"] == 0);
    CHECK(spec["revisionHistoryLimit"] == 10);
    const Json& pod = spec["template"]["spec"];
    STRCMP_EQUAL("Always", pod["restartPolicy"].get<std::string>().c_str());
    STRCMP_EQUAL("ClusterFirst", pod["dnsPolicy"].get<std::string>().c_str());
    CHECK(pod["terminationGracePeriodSeconds"] == 30);
    const Json& c = pod["containers"][0];
    STRCMP_EQUAL("IfNotPresent", c["imagePullPolicy"].get<std::string>().c_str());
    STRCMP_EQUAL("TCP", c["ports"][0]["protocol"].get<std::string>().c_str());
    CHECK_FALSE(c["ports"][0].contains("hostPort"));  // not on the host network
    const Json& probe = c["livenessProbe"];
    CHECK(probe["periodSeconds"] == 10);
    CHECK(probe["timeoutSeconds"] == 1);
    CHECK(probe["successThreshold"] == 1);
    CHECK(probe["failureThreshold"] == 3);
    STRCMP_EQUAL("/", probe["httpGet"]["path"].get<std::string>().c_str());
    STRCMP_EQUAL("HTTP", probe["httpGet"]["scheme"].get<std::string>().c_str());
    STRCMP_EQUAL("v1", c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"].get<std::string>().c_str());
    CHECK(pod["volumes"][0]["emptyDir"].is_object());  // SetDefaults_Volume
}

TEST(Defaults, HostNetworkPortsBecomeHostPorts) {
    Json ds = minimal_ds();
    ds["spec"]["template"]["spec"]["hostNetwork"] = true;
    ds["spec"]["template"]["spec"]["containers"][0]["ports"].push_back(
        {{"containerPort", 9100}, {"hostPort", 9200}});
    default_daemonset(ds);
    const Json& ports = ds["spec"]["template"]["spec"]["containers"][0]["ports"];
    CHECK(ports[0]["hostPort"] == 80);
    CHECK(ports[1]["hostPort"] == 9200);  // an explicit host port stays
}

TEST(Defaults, UserValuesAreKept) {
    Json ds = minimal_ds();
    ds["spec"]["updateStrategy"] = {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxSurge", "10%"}}}};
    ds["spec"]["revisionHistoryLimit"] = 0;
    ds["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["periodSeconds"] = 3;
    default_daemonset(ds);
    // maxUnavailable still defaults to 1 beside an explicit maxSurge, as upstream
    // does: such a DaemonSet then fails validation until maxUnavailable is 0.
    CHECK(ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 1);
    CHECK(ds["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"] == "10%");
    CHECK(ds["spec"]["revisionHistoryLimit"] == 0);
    CHECK(ds["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["periodSeconds"] == 3);
}

TEST(Defaults, OnDeleteGetsNoRollingUpdate) {
    Json ds = minimal_ds();
    ds["spec"]["updateStrategy"] = {{"type", "OnDelete"}};
    default_daemonset(ds);
    CHECK_FALSE(ds["spec"]["updateStrategy"].contains("rollingUpdate"));
}

TEST(Defaults, WrongTypesAreLeftForTheDecoder) {
    Json ds = minimal_ds();
    ds["spec"]["updateStrategy"] = "RollingUpdate";
    ds["spec"]["template"]["spec"]["containers"] = "nope";
    default_daemonset(ds);
    CHECK(ds["spec"]["updateStrategy"] == "RollingUpdate");
    CHECK(ds["spec"]["template"]["spec"]["containers"] == "nope");
}

TEST(Defaults, LegacyExtensionsTakeSelectorFromTemplateAndOnDelete) {
    Json ds = minimal_ds();
    ds["spec"].erase("selector");
    default_legacy_daemonset(ds, "extensions/v1beta1");
    CHECK(ds["spec"]["selector"]["matchLabels"]["a"] == "b");
    CHECK(ds["metadata"]["labels"]["a"] == "b");
    CHECK(ds["spec"]["updateStrategy"]["type"] == "OnDelete");
}

TEST(Defaults, DownwardApiAndProjectedVolumesGetModesApiVersionsAndTokenExpiry) {
    // core/v1 defaults_test.go TestSetDefaultDownwardAPIVolumeSource,
    // TestSetDefaultProjectedVolumeSource, SetDefaults_ObjectFieldSelector,
    // SetDefaults_ServiceAccountTokenProjection.
    Json ds = minimal_ds();
    Json item = {{"path", "n"}, {"fieldRef", {{"fieldPath", "metadata.name"}}}};
    ds["spec"]["template"]["spec"]["volumes"] =
        Json::array({{{"name", "d"}, {"downwardAPI", {{"items", Json::array({item})}}}},
                     {{"name", "p"},
                      {"projected",
                       {{"sources", Json::array({{{"downwardAPI", {{"items", Json::array({item})}}}},
                                                 {{"serviceAccountToken", {{"path", "token"}}}}})}}}}});
    default_daemonset(ds);
    const Json& v = ds["spec"]["template"]["spec"]["volumes"];
    CHECK(v[0]["downwardAPI"]["defaultMode"] == 420);
    CHECK(v[0]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1");
    CHECK(v[1]["projected"]["defaultMode"] == 420);
    CHECK(v[1]["projected"]["sources"][0]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1");
    CHECK(v[1]["projected"]["sources"][1]["serviceAccountToken"]["expirationSeconds"] == 3600);
}
