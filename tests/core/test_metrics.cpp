// The Prometheus text exposition format (core/metrics.h): escaping, value
// formatting, HELP/TYPE lines, histogram buckets, and metricsBindAddress.
// Rows name the rule of prometheus/common expfmt (text_create.go) or the
// exposition format document they pin.
#include <string>

#include "core/metrics.h"

// CppUTest last: its leak-detection macros redefine new.
#include <CppUTest/TestHarness.h>

using namespace daemonlet;

namespace {

struct EscapeRow {
    const char* name;
    const char* in;
    const char* label;  // escape_label_value
    const char* help;   // escape_help
};

const EscapeRow kEscapeRows[] = {
    {"plain text stays", "kube-system", "kube-system", "kube-system"},
    {"expfmt escapeString: backslash doubled in both", "a\\b", "a\\\\b", "a\\\\b"},
    {"expfmt: a label value's double quote is escaped, HELP's is not", "say \"hi\"", "say \\\"hi\\\"",
     "say \"hi\""},
    {"expfmt: newline as \\n in both", "one\ntwo", "one\\ntwo", "one\\ntwo"},
    {"UTF-8 passes through", "caf\xC3\xA9", "caf\xC3\xA9", "caf\xC3\xA9"},
};

struct ValueRow {
    const char* name;
    double in;
    const char* out;
};

const ValueRow kValueRows[] = {
    {"expfmt writeFloat: an integer prints without a point", 3, "3"},
    {"zero", 0, "0"},
    {"shortest round-trip text, as strconv.FormatFloat(v, 'g', -1, 64)", 0.005, "0.005"},
    {"negative", -2.5, "-2.5"},
    {"FormatFloat 'g', -1: %f below an exponent of 6", 123456.5, "123456.5"},
    {"...an integer below 1e6 whole", 100000, "100000"},
    {"...%e from an exponent of 6 (eprec 6 when shortest)", 1234567, "1.234567e+06"},
    {"...one digit: no point", 1e21, "1e+21"},
    {"...%f down to an exponent of -4", 0.0001, "0.0001"},
    {"...%e below it, the exponent of two digits at least", 0.00001234, "1.234e-05"},
    {"...17 digits where the double needs them", 0.1 + 0.2, "0.30000000000000004"},
    {"...negative in %e", -2.5e-7, "-2.5e-07"},
    {"expfmt writeFloat: +Inf", 1.0 / 0.0, "+Inf"},
    {"expfmt writeFloat: -Inf", -1.0 / 0.0, "-Inf"},
};

struct AddressRow {
    const char* name;
    const char* in;
    bool ok;
    const char* host;
    int port;
    const char* error;  // a part of the message
};

const AddressRow kAddressRows[] = {
    {"the default, the kubelet's read-only port on loopback", "127.0.0.1:10255", true, "127.0.0.1", 10255,
     ""},
    {"every interface", "0.0.0.0:9100", true, "0.0.0.0", 9100, ""},
    {"IPv6 in brackets (net.JoinHostPort)", "[::1]:10255", true, "::1", 10255, ""},
    {"port 0: any free one", "127.0.0.1:0", true, "127.0.0.1", 0, ""},
    {"no port", "127.0.0.1", false, "", 0, "no port"},
    {"port out of range", "127.0.0.1:65536", false, "", 0, "from 0 to 65535"},
    {"port not a number", "127.0.0.1:http", false, "", 0, "from 0 to 65535"},
    {"a host name is not an address", "localhost:10255", false, "", 0, "must be an IP address"},
    {"IPv6 without brackets", "::1:10255", false, "", 0, "in brackets"},
};

}  // namespace

TEST_GROUP(MetricsFormat){};

TEST(MetricsFormat, EscapesLabelValuesAndHelpAsExpfmtDoes) {
    for (const auto& row : kEscapeRows) {
        STRCMP_EQUAL_TEXT(row.label, escape_label_value(row.in).c_str(), row.name);
        STRCMP_EQUAL_TEXT(row.help, escape_help(row.in).c_str(), row.name);
    }
}

TEST(MetricsFormat, FormatsValuesAsGoDoes) {
    for (const auto& row : kValueRows)
        STRCMP_EQUAL_TEXT(row.out, format_metric_value(row.in).c_str(), row.name);
    STRCMP_EQUAL("NaN", format_metric_value(0.0 / 0.0).c_str());
}

TEST(MetricsFormat, ParsesMetricsBindAddress) {
    for (const auto& row : kAddressRows) {
        auto r = parse_bind_address(row.in);
        CHECK_EQUAL_TEXT(row.ok, r.ok(), row.name);
        if (r.ok()) {
            STRCMP_EQUAL_TEXT(row.host, r.value().host.c_str(), row.name);
            LONGS_EQUAL_TEXT(row.port, r.value().port, row.name);
        } else {
            CHECK_TEXT(r.error().message.find(row.error) != std::string::npos, row.name);
            CHECK_TEXT(r.error().message.find(row.in) != std::string::npos, row.name);
        }
    }
}

TEST(MetricsFormat, PrintsHelpAndTypeForEveryFamilyAndZeroForUnlabelledOnes) {
    MetricRegistry r;
    r.counter("a_total", "Things that\nhappened \\ counted.");
    r.gauge("b", "A level.", {"kind"});
    STRCMP_EQUAL(
        "# HELP a_total Things that\\nhappened \\\\ counted.\n"
        "# TYPE a_total counter\n"
        "a_total 0\n"
        "# HELP b A level.\n"
        "# TYPE b gauge\n",
        r.render().c_str());
}

TEST(MetricsFormat, PrintsLabelledSeriesInLabelOrderWithEscapedValues) {
    MetricRegistry r;
    r.counter("ops_total", "Ops.", {"namespace", "daemonset"});
    r.add("ops_total", {"kube-system", "say \"x\""}, 2);
    r.add("ops_total", {"default", "b"});
    r.add("ops_total", {"default", "b"});
    STRCMP_EQUAL(
        "# HELP ops_total Ops.\n"
        "# TYPE ops_total counter\n"
        "ops_total{namespace=\"default\",daemonset=\"b\"} 2\n"
        "ops_total{namespace=\"kube-system\",daemonset=\"say \\\"x\\\"\"} 2\n",
        r.render().c_str());
    DOUBLES_EQUAL(2, r.value("ops_total", {"default", "b"}), 0);
}

TEST(MetricsFormat, HistogramBucketsAreCumulativeWithInfSumAndCount) {
    // client_golang histogram.observe: a value goes to the first bucket whose
    // upper bound is >= it (le is inclusive); the exposition is cumulative.
    MetricRegistry r;
    r.histogram("d_seconds", "Durations.", {0.1, 1, 10}, {"op"});
    r.observe("d_seconds", {"start"}, 0.1);  // on a bound: that bucket
    r.observe("d_seconds", {"start"}, 0.5);
    r.observe("d_seconds", {"start"}, 20);  // above every bound: +Inf only
    STRCMP_EQUAL(
        "# HELP d_seconds Durations.\n"
        "# TYPE d_seconds histogram\n"
        "d_seconds_bucket{op=\"start\",le=\"0.1\"} 1\n"
        "d_seconds_bucket{op=\"start\",le=\"1\"} 2\n"
        "d_seconds_bucket{op=\"start\",le=\"10\"} 2\n"
        "d_seconds_bucket{op=\"start\",le=\"+Inf\"} 3\n"
        "d_seconds_sum{op=\"start\"} 20.6\n"
        "d_seconds_count{op=\"start\"} 3\n",
        r.render().c_str());
}

TEST(MetricsFormat, AnUnlabelledHistogramHasZeroBucketsBeforeItsFirstObservation) {
    MetricRegistry r;
    r.histogram("s", "Stalls.", {1});
    STRCMP_EQUAL(
        "# HELP s Stalls.\n"
        "# TYPE s histogram\n"
        "s_bucket{le=\"1\"} 0\n"
        "s_bucket{le=\"+Inf\"} 0\n"
        "s_sum 0\n"
        "s_count 0\n",
        r.render().c_str());
}

TEST(MetricsFormat, ClearForgetsAGaugesSeries) {
    MetricRegistry r;
    r.gauge("g", "G.", {"ds"});
    r.set("g", {"gone"}, 1);
    r.clear("g");
    r.set("g", {"here"}, 2);
    STRCMP_EQUAL("# HELP g G.\n# TYPE g gauge\ng{ds=\"here\"} 2\n", r.render().c_str());
}
