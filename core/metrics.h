// The agent's metrics as values, and their rendering in the Prometheus text
// exposition format (version 0.0.4, prometheus/docs
// content/docs/instrumenting/exposition_formats.md; the same rules as
// client_golang's expfmt.MetricFamilyToText). Pure: no clock, no I/O. The
// agent keeps a MetricRegistry, counts into it as things happen, sets its
// gauges from its state when scraped, and serves render().
//
// - Each family is declared once with its name, HELP text, TYPE and (for a
//   histogram) bucket bounds; HELP and TYPE lines are printed even when it
//   has no series yet, so a scrape always lists every metric.
// - Series are kept by their label values in declaration order. Label sets
//   stay bounded by what the agent puts in them: operation types, states,
//   DaemonSet names, never pod uids.
// - A family without labels always has its one series (0 until counted), as
//   client_golang's unlabelled metrics do.
// - Label values are escaped (\\, \", \n), HELP text too (\\, \n); values
//   print as Go's strconv.FormatFloat(v, 'g', -1, 64) does, with +Inf, -Inf
//   and NaN spelled as the format says.
// - A histogram prints cumulative _bucket{le=...} lines, the +Inf bucket,
//   then _sum and _count (client_golang's histogram semantics: an
//   observation goes to every bucket whose upper bound is >= it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace daemonlet {

enum class MetricType { Counter, Gauge, Histogram };

struct HistogramValue {
    std::vector<std::uint64_t> counts;  // per bucket (not cumulative), one per bound
    std::uint64_t count = 0;            // all observations (the +Inf bucket)
    double sum = 0;
};

class MetricRegistry {
  public:
    // Declares a family. `labels` are its label names, in the order values
    // are given. A histogram's `bounds` must increase. Declaring a name twice
    // is a broken invariant (the agent's, not the user's): it aborts.
    void counter(std::string name, std::string help, std::vector<std::string> labels = {});
    void gauge(std::string name, std::string help, std::vector<std::string> labels = {});
    void histogram(std::string name, std::string help, std::vector<double> bounds,
                   std::vector<std::string> labels = {});

    // On an undeclared name, or a label count that is not the family's, they
    // abort: both are the agent's bugs.
    void add(std::string_view name, const std::vector<std::string>& values = {}, double delta = 1);
    // A gauge's value, or a counter's when it mirrors a count another
    // component keeps (monotonic there).
    void set(std::string_view name, const std::vector<std::string>& values, double value);
    void set(std::string_view name, double value) { set(name, {}, value); }
    void observe(std::string_view name, const std::vector<std::string>& values, double value);
    void observe(std::string_view name, double value) { observe(name, {}, value); }
    // Forgets a gauge's series (before setting it anew from the state, so
    // that a DaemonSet gone is no longer reported).
    void clear(std::string_view name);

    // The value of a counter or gauge series (0 when absent); for tests.
    double value(std::string_view name, const std::vector<std::string>& values = {}) const;

    // The whole exposition, families in declaration order.
    std::string render() const;

  private:
    struct Family {
        std::string name;
        std::string help;
        MetricType type = MetricType::Counter;
        std::vector<std::string> labels;
        std::vector<double> bounds;
        std::map<std::vector<std::string>, double> values;
        std::map<std::vector<std::string>, HistogramValue> histograms;
    };
    Family& declare(std::string name, std::string help, MetricType type, std::vector<std::string> labels);
    Family& find(std::string_view name, MetricType type, std::size_t values);
    const Family* lookup(std::string_view name) const;

    std::vector<Family> families_;
};

// The exposition format's pieces, for the renderer and its tests.
std::string escape_label_value(std::string_view v);
std::string escape_help(std::string_view v);
std::string format_metric_value(double v);

// metricsBindAddress: "host:port" with an IPv4 literal or a bracketed IPv6
// one ("[::1]:10255"), port 0..65535 (0: any free one). The error says why.
struct BindAddress {
    std::string host;  // without brackets
    int port = 0;
};
Result<BindAddress> parse_bind_address(std::string_view address);

}  // namespace daemonlet
