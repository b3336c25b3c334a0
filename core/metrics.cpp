#include "core/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <arpa/inet.h>

namespace daemonlet {

namespace {

// A broken invariant: the agent declared or used a metric wrongly.
[[noreturn]] void broken(const std::string& what) {
    std::fprintf(stderr, "daemonlet: metrics: %s\n", what.c_str());
    std::abort();
}

const char* type_name(MetricType t) {
    switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Histogram: return "histogram";
    }
    return "untyped";
}

// {a="x",b="y"} from names and values, with `extra` (le="...") last; "" when
// there are no labels at all.
std::string label_set(const std::vector<std::string>& names, const std::vector<std::string>& values,
                      const std::string& extra = {}) {
    if (names.empty() && extra.empty()) return {};
    std::string out = "{";
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i) out += ',';
        out += names[i] + "=\"" + escape_label_value(values[i]) + '"';
    }
    if (!extra.empty()) out += (names.empty() ? "" : ",") + extra;
    return out + "}";
}

}  // namespace

namespace {

// expfmt's escaping: backslash and newline always, the double quote in a
// label value only.
std::string escape(std::string_view v, bool quote) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else if (c == '"' && quote)
            out += "\\\"";
        else
            out += c;
    }
    return out;
}

}  // namespace

std::string escape_label_value(std::string_view v) { return escape(v, true); }

std::string escape_help(std::string_view v) { return escape(v, false); }

std::string format_metric_value(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    if (v == 0) return "0";  // expfmt writeFloat, -0 too
    // Go's strconv.FormatFloat(v, 'g', -1, 64), as expfmt writeFloat
    // calls it: the fewest significant digits that read back as the same
    // double (printf rounds correctly: the first precision that reads back
    // is the shortest), then %e when the exponent is below -4 or at least
    // 6 (its "shortest" precision), else %f. (to_chars for double would do the
    // first part, but it brings 125 KiB of libstdc++ into a static link.)
    char buf[40];
    for (int prec = 0; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*e", prec, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    std::string_view text = buf;
    std::string out = text.front() == '-' ? "-" : "";
    if (!out.empty()) text.remove_prefix(1);
    const auto e = text.find('e');
    const int exp = std::atoi(std::string(text.substr(e + 1)).c_str());
    std::string digits;
    for (char c : text.substr(0, e))
        if (c != '.') digits += c;
    if (exp < -4 || exp >= 6) {
        out += digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char tail[16];
        std::snprintf(tail, sizeof tail, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        return out + tail;
    }
    const int dp = exp + 1;  // digits before the point
    const auto nd = static_cast<int>(digits.size());
    if (dp <= 0) return out + "0." + std::string(static_cast<std::size_t>(-dp), '0') + digits;
    if (dp >= nd) return out + digits + std::string(static_cast<std::size_t>(dp - nd), '0');
    return out + digits.substr(0, static_cast<std::size_t>(dp)) + "." +
           digits.substr(static_cast<std::size_t>(dp));
}

MetricRegistry::Family& MetricRegistry::declare(std::string name, std::string help, MetricType type,
                                                std::vector<std::string> labels) {
    if (lookup(name)) broken("metric " + name + " declared twice");
    Family f;
    f.name = std::move(name);
    f.help = std::move(help);
    f.type = type;
    f.labels = std::move(labels);
    families_.push_back(std::move(f));
    return families_.back();
}

void MetricRegistry::counter(std::string name, std::string help, std::vector<std::string> labels) {
    declare(std::move(name), std::move(help), MetricType::Counter, std::move(labels));
}

void MetricRegistry::gauge(std::string name, std::string help, std::vector<std::string> labels) {
    declare(std::move(name), std::move(help), MetricType::Gauge, std::move(labels));
}

void MetricRegistry::histogram(std::string name, std::string help, std::vector<double> bounds,
                               std::vector<std::string> labels) {
    if (!std::is_sorted(bounds.begin(), bounds.end()) ||
        std::adjacent_find(bounds.begin(), bounds.end()) != bounds.end())
        broken("histogram " + name + ": bucket bounds must increase");
    declare(std::move(name), std::move(help), MetricType::Histogram, std::move(labels)).bounds =
        std::move(bounds);
}

const MetricRegistry::Family* MetricRegistry::lookup(std::string_view name) const {
    for (const auto& f : families_)
        if (f.name == name) return &f;
    return nullptr;
}

MetricRegistry::Family& MetricRegistry::find(std::string_view name, MetricType type, std::size_t values) {
    auto* f = const_cast<Family*>(lookup(name));
    if (!f) broken("metric " + std::string(name) + " is not declared");
    if (f->type != type) broken("metric " + std::string(name) + " is a " + type_name(f->type));
    if (values != f->labels.size())
        broken("metric " + std::string(name) + " has " + std::to_string(f->labels.size()) +
               " labels, given " + std::to_string(values));
    return *f;
}

void MetricRegistry::add(std::string_view name, const std::vector<std::string>& values, double delta) {
    const Family* f = lookup(name);
    Family& fam = find(name, f && f->type == MetricType::Gauge ? MetricType::Gauge : MetricType::Counter,
                       values.size());
    fam.values[values] += delta;
}

void MetricRegistry::set(std::string_view name, const std::vector<std::string>& values, double value) {
    // A counter is set only to mirror a count another component keeps.
    const Family* f = lookup(name);
    find(name, f && f->type == MetricType::Counter ? MetricType::Counter : MetricType::Gauge, values.size())
        .values[values] = value;
}

void MetricRegistry::observe(std::string_view name, const std::vector<std::string>& values, double value) {
    Family& f = find(name, MetricType::Histogram, values.size());
    HistogramValue& h = f.histograms[values];
    if (h.counts.empty()) h.counts.assign(f.bounds.size(), 0);
    auto it = std::lower_bound(f.bounds.begin(), f.bounds.end(), value);  // first bound >= value
    if (it != f.bounds.end()) ++h.counts[static_cast<std::size_t>(it - f.bounds.begin())];
    ++h.count;
    h.sum += value;
}

void MetricRegistry::clear(std::string_view name) {
    auto* f = const_cast<Family*>(lookup(name));
    if (!f) broken("metric " + std::string(name) + " is not declared");
    f->values.clear();
    f->histograms.clear();
}

double MetricRegistry::value(std::string_view name, const std::vector<std::string>& values) const {
    const Family* f = lookup(name);
    if (!f) return 0;
    auto it = f->values.find(values);
    return it == f->values.end() ? 0 : it->second;
}

std::string MetricRegistry::render() const {
    std::string out;
    for (const auto& f : families_) {
        out += "# HELP " + f.name + " " + escape_help(f.help) + "\n";
        out += "# TYPE " + f.name + " " + type_name(f.type) + "\n";
        if (f.type != MetricType::Histogram) {
            // A family without labels has its one series from the start (0),
            // as client_golang's unlabelled metrics do.
            if (f.labels.empty() && f.values.empty()) out += f.name + " 0\n";
            for (const auto& [values, v] : f.values)
                out += f.name + label_set(f.labels, values) + " " + format_metric_value(v) + "\n";
            continue;
        }
        std::map<std::vector<std::string>, HistogramValue> empty;
        if (f.labels.empty() && f.histograms.empty()) empty[{}].counts.assign(f.bounds.size(), 0);
        for (const auto& [values, h] : f.histograms.empty() ? empty : f.histograms) {
            std::uint64_t cumulative = 0;
            for (std::size_t i = 0; i < f.bounds.size(); ++i) {
                cumulative += h.counts[i];
                out += f.name + "_bucket" +
                       label_set(f.labels, values, "le=\"" + format_metric_value(f.bounds[i]) + "\"") + " " +
                       std::to_string(cumulative) + "\n";
            }
            out += f.name + "_bucket" + label_set(f.labels, values, "le=\"+Inf\"") + " " +
                   std::to_string(h.count) + "\n";
            out += f.name + "_sum" + label_set(f.labels, values) + " " + format_metric_value(h.sum) + "\n";
            out += f.name + "_count" + label_set(f.labels, values) + " " + std::to_string(h.count) + "\n";
        }
    }
    return out;
}

Result<BindAddress> parse_bind_address(std::string_view address) {
    const std::string a(address);
    auto bad = [&](const std::string& why) {
        return Error{ErrorCode::Invalid,
                     "\"" + a + "\": " + why + " (expected host:port, e.g. 127.0.0.1:10255)"};
    };
    const auto colon = a.rfind(':');
    if (colon == std::string::npos) return bad("no port");
    std::string host = a.substr(0, colon);
    const std::string port = a.substr(colon + 1);
    const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
    if (bracketed) host = host.substr(1, host.size() - 2);
    unsigned char buf[16];
    if (bracketed ? inet_pton(AF_INET6, host.c_str(), buf) != 1 : inet_pton(AF_INET, host.c_str(), buf) != 1)
        return bad(host.find(':') != std::string::npos && !bracketed ? "an IPv6 address goes in brackets"
                                                                     : "the host must be an IP address");
    int p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p < 0 || p > 65535)
        return bad("the port must be a number from 0 to 65535");
    return BindAddress{host, p};
}

}  // namespace daemonlet
