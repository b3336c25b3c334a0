// YAML streams into Json documents through libyaml's event API.
//
// Why events rather than yaml_parser_load: the loader gives no way to tell an
// explicit `!!str` from an untagged plain scalar (it stamps a default tag on
// both), and we need to bound alias expansion while building, not after.
#include "core/yaml_reader.h"

#include <yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "core/json_parse.h"

namespace daemonlet::detail {
namespace {

constexpr const char* kTagStr = "tag:yaml.org,2002:str";
constexpr const char* kTagInt = "tag:yaml.org,2002:int";
constexpr const char* kTagFloat = "tag:yaml.org,2002:float";
constexpr const char* kTagBool = "tag:yaml.org,2002:bool";
constexpr const char* kTagNull = "tag:yaml.org,2002:null";

// Go's strconv.ParseInt(s, 0, 64) / ParseUint: optional sign, then a 0x, 0o,
// 0b or legacy 0 (octal) prefix, then digits of that base.
std::optional<Json> parse_go_int(std::string_view s) {
    bool neg = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        s.remove_prefix(1);
    }
    int base = 10;
    if (s.size() > 1 && s[0] == '0') {
        char p = s[1];
        if (p == 'x' || p == 'X') {
            base = 16;
            s.remove_prefix(2);
        } else if (p == 'o' || p == 'O') {
            base = 8;
            s.remove_prefix(2);
        } else if (p == 'b' || p == 'B') {
            base = 2;
            s.remove_prefix(2);
        } else {
            base = 8;
            s.remove_prefix(1);
        }
    }
    if (s.empty()) return std::nullopt;
    std::uint64_t u = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), u, base);
    if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
    if (!neg) {
        if (u <= static_cast<std::uint64_t>(INT64_MAX)) return Json(static_cast<std::int64_t>(u));
        return Json(u);
    }
    if (u <= static_cast<std::uint64_t>(INT64_MAX)) return Json(-static_cast<std::int64_t>(u));
    if (u == static_cast<std::uint64_t>(INT64_MAX) + 1) return Json(INT64_MIN);
    return std::nullopt;
}

// goyaml.v2's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool is_yaml_style_float(std::string_view s) {
    std::size_t i = 0;
    auto digits = [&] {
        std::size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
        return i > start;
    };
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (i < s.size() && s[i] == '.') {
        ++i;
        if (!digits()) return false;
    } else {
        if (!digits()) return false;
        if (i < s.size() && s[i] == '.') {
            ++i;
            digits();
        }
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        if (!digits()) return false;
    }
    return i == s.size();
}

std::optional<Json> parse_float(std::string_view s) {
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);  // from_chars takes no '+'
    double d = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(d)) return std::nullopt;
    return Json(d);
}

bool one_of(std::string_view s, std::initializer_list<const char*> words) {
    for (const char* w : words)
        if (s == w) return true;
    return false;
}

struct ParserDeleter {
    void operator()(yaml_parser_t* p) const {
        yaml_parser_delete(p);
        delete p;
    }
};

// An event that is always deleted, on every path.
class Event {
  public:
    Event() = default;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() {
        if (owned_) yaml_event_delete(&ev_);
    }
    bool next(yaml_parser_t* p) {
        if (owned_) yaml_event_delete(&ev_);
        owned_ = yaml_parser_parse(p, &ev_) != 0;
        return owned_;
    }
    const yaml_event_t& get() const { return ev_; }

  private:
    yaml_event_t ev_{};
    bool owned_ = false;
};

std::string str(const yaml_char_t* s) { return s ? reinterpret_cast<const char*>(s) : std::string(); }

struct Frame {
    Json value;
    std::string anchor;
    std::string segment;  // how the parent reaches this node: ".key" or "[i]"
    bool have_key = false;
    std::string key;
    bool key_is_merge = false;
    std::vector<Json> merges;  // `<<` sources, applied at the end (explicit keys win)
    // A mapping's keys so far: ordered_json finds a key by a linear search,
    // which made a mapping of n keys take n^2 (8,000 keys: 3.9 s); with
    // an index it is one pass, and the object is appended to as it grows.
    ObjectKeys keys;
};

// Builds one document at a time from parser events.
class Builder {
  public:
    Builder(const std::string& file, const ManifestLimits& limits, const DocumentSink& sink)
        : file_(file), limits_(limits), sink_(sink) {}

    ParsedDocuments run(std::string_view data) {
        std::unique_ptr<yaml_parser_t, ParserDeleter> parser(new yaml_parser_t);
        if (!yaml_parser_initialize(parser.get())) {
            fail(0, "", "out of memory initialising the YAML parser");
            return std::move(out_);
        }
        yaml_parser_set_input_string(parser.get(), reinterpret_cast<const unsigned char*>(data.data()),
                                     data.size());
        Event ev;
        for (;;) {
            if (!ev.next(parser.get())) {
                const yaml_parser_t& p = *parser;
                std::string msg = "line " + std::to_string(p.problem_mark.line + 1) + ", column " +
                                  std::to_string(p.problem_mark.column + 1) + ": " +
                                  (p.problem ? p.problem : "YAML syntax error");
                if (p.context) msg += std::string(" ") + p.context;
                fail(doc_number_ ? doc_number_ : 1, "", msg);
                return std::move(out_);
            }
            const yaml_event_t& e = ev.get();
            if (!handle(e)) return std::move(out_);
            if (e.type == YAML_STREAM_END_EVENT) return std::move(out_);
        }
    }

  private:
    void fail(std::size_t doc, std::string field, std::string message) {
        out_.errors.push_back({file_, doc, std::move(field), std::move(message)});
    }

    std::string path() const {
        std::string p;
        for (std::size_t i = 1; i < stack_.size(); ++i) p += stack_[i].segment;
        if (!stack_.empty() && stack_.back().have_key) p += "." + stack_.back().key;
        if (!p.empty() && p[0] == '.') p.erase(0, 1);
        return p;
    }

    std::string child_segment() const {
        if (stack_.empty()) return {};
        const Frame& top = stack_.back();
        if (top.value.is_array()) return "[" + std::to_string(top.value.size()) + "]";
        return "." + top.key;
    }

    bool count(std::size_t n) {
        nodes_ += n;
        if (nodes_ > limits_.max_nodes) {
            fail(doc_number_, path(),
                 "document expands to more than " + std::to_string(limits_.max_nodes) +
                     " values (alias expansion?)");
            return false;
        }
        return true;
    }

    bool handle(const yaml_event_t& e) {
        switch (e.type) {
        case YAML_DOCUMENT_START_EVENT:
            ++doc_number_;
            if (doc_number_ > limits_.max_documents) {
                fail(doc_number_, "",
                     "more than " + std::to_string(limits_.max_documents) + " documents in one file");
                return false;
            }
            anchors_.clear();
            stack_.clear();
            root_ = Json();
            nodes_ = 0;
            return true;
        case YAML_DOCUMENT_END_EVENT: {
            if (root_.is_null()) return true;
            anchors_.clear();  // the document's anchors hold copies of its values
            Document d{doc_number_, std::move(root_)};
            root_ = Json();
            if (sink_) return sink_(std::move(d));
            out_.docs.push_back(std::move(d));
            return true;
        }
        case YAML_SCALAR_EVENT: return scalar(e);
        case YAML_ALIAS_EVENT: return alias(e);
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().have_key) {
                fail(doc_number_, path(), "mapping keys must be scalars");
                return false;
            }
            if (stack_.size() >= limits_.max_depth) {
                fail(doc_number_, path(),
                     "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
                return false;
            }
            if (!count(1)) return false;
            Frame f;
            f.segment = child_segment();
            bool seq = e.type == YAML_SEQUENCE_START_EVENT;
            f.value = seq ? Json::array() : Json::object();
            f.anchor = str(seq ? e.data.sequence_start.anchor : e.data.mapping_start.anchor);
            stack_.push_back(std::move(f));
            return true;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
            Frame f = std::move(stack_.back());
            stack_.pop_back();
            if (f.value.is_object()) apply_merges(f);
            if (!f.anchor.empty()) anchors_[f.anchor] = {f.value, nodes_in(f.value)};
            return add(std::move(f.value), false);
        }
        default: return true;
        }
    }

    static std::size_t nodes_in(const Json& v) {
        std::size_t n = 1;
        if (v.is_structured())
            for (const auto& c : v) n += nodes_in(c);
        return n;
    }

    void apply_merges(Frame& f) {
        // YAML merge keys: explicit keys win; earlier sources win over later.
        auto& obj = f.value.get_ref<Json::object_t&>();
        for (const Json& src : f.merges)
            for (auto it = src.begin(); it != src.end(); ++it)
                if (f.keys.find(obj, it.key()) == ObjectKeys::npos) obj.emplace_back(it.key(), it.value());
    }

    bool scalar(const yaml_event_t& e) {
        const auto& s = e.data.scalar;
        std::string text(reinterpret_cast<const char*>(s.value), s.length);
        std::string tag = str(s.tag);
        if (tag.rfind("!!", 0) == 0) tag = "tag:yaml.org,2002:" + tag.substr(2);
        const bool plain = s.style == YAML_PLAIN_SCALAR_STYLE;
        const bool merge_key = plain && tag.empty() && text == "<<";
        Json v;
        // A string value moves into the tree: a scalar near the 3 MiB file
        // bound is already held by the file, libyaml's buffer and its event.
        if (tag == kTagStr) {
            v = std::move(text);
        } else if (tag == kTagInt || tag == kTagFloat || tag == kTagBool || tag == kTagNull) {
            auto r = resolve_plain_scalar(text);
            const char* want = tag == kTagInt     ? "int"
                               : tag == kTagFloat ? "float"
                               : tag == kTagBool  ? "bool"
                                                  : "null";
            bool good =
                r && ((tag == kTagInt && r->is_number_integer()) || (tag == kTagFloat && r->is_number()) ||
                      (tag == kTagBool && r->is_boolean()) || (tag == kTagNull && r->is_null()));
            if (!good) {
                fail(doc_number_, path(), "cannot decode " + shown(text) + " as !!" + want);
                return false;
            }
            v = std::move(*r);
        } else if (plain) {
            auto r = resolve_plain_scalar(text);
            if (!r) {
                fail(doc_number_, path(),
                     "unsupported value " + shown(text, false) +
                         ": infinity and NaN cannot be represented in JSON");
                return false;
            }
            v = std::move(*r);
        } else {
            v = std::move(text);  // quoted, literal and folded scalars are strings
        }
        if (!count(1)) return false;
        std::string anchor = str(s.anchor);
        if (!anchor.empty()) anchors_[anchor] = {v, 1};
        return add(std::move(v), merge_key);
    }

    static std::string render(const std::string& s) {
        return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
    }

    // A scalar for an error message: not under a `data` or `stringData`
    // map, where a Secret keeps its values (the kind is not known while
    // parsing, so a ConfigMap's are held back too).
    std::string shown(const std::string& text, bool quoted = true) const {
        const std::string p = "." + path() + ".";
        if (p.find(".data.") != std::string::npos || p.find(".stringData.") != std::string::npos)
            return "a value";
        return quoted ? render(text) : text;
    }

    bool alias(const yaml_event_t& e) {
        std::string name = str(e.data.alias.anchor);
        auto it = anchors_.find(name);
        if (it == anchors_.end()) {
            fail(doc_number_, path(), "unknown anchor '" + name + "' referenced");
            return false;
        }
        if (!count(it->second.nodes)) return false;
        return add(it->second.value, false);
    }

    // Adds a finished value to the enclosing collection (or makes it the root).
    bool add(Json v, bool is_merge_key) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return true;
        }
        Frame& top = stack_.back();
        if (top.value.is_array()) {
            top.value.push_back(std::move(v));
            return true;
        }
        if (!top.have_key) {
            if (v.is_structured()) {
                fail(doc_number_, path(), "mapping keys must be scalars");
                return false;
            }
            // sigs.k8s.io/yaml turns resolved non-string keys into strings.
            top.key = is_merge_key ? std::string("<<") : v.is_string() ? v.get<std::string>() : v.dump();
            top.have_key = true;
            top.key_is_merge = is_merge_key;
            return true;
        }
        top.have_key = false;
        if (top.key_is_merge) {
            top.key_is_merge = false;
            if (v.is_object()) {
                top.merges.push_back(std::move(v));
                return true;
            }
            if (v.is_array() &&
                std::all_of(v.begin(), v.end(), [](const Json& m) { return m.is_object(); })) {
                for (auto& m : v) top.merges.push_back(std::move(m));
                return true;
            }
            fail(doc_number_, path() + ".<<", "map merge requires a map or a sequence of maps as the value");
            return false;
        }
        auto& obj = top.value.get_ref<Json::object_t&>();
        if (top.keys.find(obj, top.key) != ObjectKeys::npos) {
            fail(doc_number_, path() + (path().empty() ? "" : ".") + top.key,
                 "mapping key " + render(top.key) + " already defined");
            return false;
        }
        obj.emplace_back(std::move(top.key), std::move(v));
        return true;
    }

    struct Anchor {
        Json value;
        std::size_t nodes;
    };

    const std::string& file_;
    const ManifestLimits& limits_;
    const DocumentSink& sink_;
    ParsedDocuments out_;
    std::vector<Frame> stack_;
    std::unordered_map<std::string, Anchor> anchors_;
    Json root_;
    std::size_t doc_number_ = 0;
    std::size_t nodes_ = 0;
};

}  // namespace

std::optional<Json> resolve_plain_scalar(std::string_view s) {
    if (s.empty() || one_of(s, {"~", "null", "Null", "NULL"})) return Json(nullptr);
    if (one_of(s, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}))
        return Json(true);
    if (one_of(s, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}))
        return Json(false);
    if (one_of(s, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
                   ".NaN", ".NAN"}))
        return std::nullopt;
    char c = s[0];
    if (!((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.')) return Json(std::string(s));
    std::string plain;
    plain.reserve(s.size());
    for (char ch : s)
        if (ch != '_') plain += ch;
    if (auto i = parse_go_int(plain)) return i;
    if (is_yaml_style_float(plain))
        if (auto f = parse_float(plain)) return f;
    return Json(std::string(s));
}

ParsedDocuments parse_yaml_stream(std::string_view data, const std::string& file,
                                  const ManifestLimits& limits, const DocumentSink& sink) {
    return Builder(file, limits, sink).run(data);
}

}  // namespace daemonlet::detail

namespace daemonlet {
std::string parser_versions() {
    return std::string("libyaml ") + yaml_get_version_string() + ", nlohmann_json " +
           std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." + std::to_string(NLOHMANN_JSON_VERSION_MINOR) +
           "." + std::to_string(NLOHMANN_JSON_VERSION_PATCH);
}
}  // namespace daemonlet
