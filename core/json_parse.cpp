#include "core/json_parse.h"

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace daemonlet {

namespace {
// ordered_map's operator[] takes a key: the vector's by position is hidden.
template <class Object>
auto& member_at(Object& obj, std::size_t i) {
    return *(obj.begin() + static_cast<std::ptrdiff_t>(i));
}
}  // namespace

std::size_t ObjectKeys::find(const Json::object_t& obj, std::string_view key) {
    if (obj.size() < kIndexFrom) {
        for (std::size_t i = 0; i < obj.size(); ++i)
            if (member_at(obj, i).first == key) return i;
        return npos;
    }
    const std::hash<std::string_view> hash;
    for (; indexed_ < obj.size(); ++indexed_) index_.emplace(hash(member_at(obj, indexed_).first), indexed_);
    auto [first, last] = index_.equal_range(hash(key));
    for (auto it = first; it != last; ++it)
        if (member_at(obj, it->second).first == key) return it->second;
    return npos;
}

namespace {

// nlohmann's SAX interface (json_sax<basic_json>), building the tree as its
// own json_sax_dom_parser does, but appending a new key rather than looking
// it up linearly.
class TreeBuilder {
  public:
    explicit TreeBuilder(const JsonLimits& limits) : limits_(limits) {}

    bool null() { return value(Json(nullptr)); }
    bool boolean(bool b) { return value(Json(b)); }
    bool number_integer(Json::number_integer_t n) { return value(Json(n)); }
    bool number_unsigned(Json::number_unsigned_t n) { return value(Json(n)); }
    bool number_float(Json::number_float_t f, const Json::string_t& /*text*/) { return value(Json(f)); }
    bool string(Json::string_t& s) { return value(Json(std::move(s))); }
    bool binary(Json::binary_t& b) { return value(Json(std::move(b))); }  // not produced from JSON text
    bool start_object(std::size_t /*unknown*/) { return open(Json::object()); }
    bool start_array(std::size_t /*unknown*/) { return open(Json::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(Json::string_t& k) {
        Open& top = open_.back();
        auto& obj = top.value->get_ref<Json::object_t&>();
        const std::size_t at = top.keys.find(obj, k);
        if (at != ObjectKeys::npos) {
            slot_ = &member_at(obj, at).second;  // given again: its last value wins, in its first place
            return true;
        }
        obj.emplace_back(std::move(k), Json());
        slot_ = &obj.back().second;
        return true;
    }

    bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                     const nlohmann::detail::exception& e) {
        failure_ = JsonFailure::Syntax;
        message_ = e.what();
        return false;
    }

    JsonParsed result() && {
        JsonParsed out;
        out.failure = failure_;
        out.message = std::move(message_);
        if (failure_ == JsonFailure::None)
            out.value = std::move(root_);
        else
            out.value = Json(Json::value_t::discarded);
        return out;
    }

  private:
    struct Open {
        Json* value;
        ObjectKeys keys;  // used when value is an object
    };

    bool count() {
        if (++values_ <= limits_.max_values) return true;
        failure_ = JsonFailure::TooManyValues;
        return false;
    }

    // Where the next value goes: the root, the end of the open array, or
    // the member whose key was just read. Only the innermost open container
    // grows, so the pointers on open_ stay valid.
    Json* place(Json&& v) {
        if (open_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        Json* parent = open_.back().value;
        if (parent->is_array()) {
            auto& arr = parent->get_ref<Json::array_t&>();
            arr.push_back(std::move(v));
            return &arr.back();
        }
        *slot_ = std::move(v);
        return slot_;
    }

    bool value(Json&& v) {
        if (!count()) return false;
        place(std::move(v));
        return true;
    }

    bool open(Json&& container) {
        if (open_.size() >= limits_.max_depth) {
            failure_ = JsonFailure::TooDeep;
            return false;
        }
        if (!count()) return false;
        open_.push_back({place(std::move(container)), {}});
        return true;
    }

    bool close() {
        open_.pop_back();
        return true;
    }

    const JsonLimits& limits_;
    Json root_;
    std::vector<Open> open_;
    Json* slot_ = nullptr;
    std::size_t values_ = 0;
    JsonFailure failure_ = JsonFailure::None;
    std::string message_;
};

}  // namespace

JsonParsed parse_json_text(std::string_view text, const JsonLimits& limits) {
    TreeBuilder builder(limits);
    // strict: nothing but whitespace may follow the value.
    Json::sax_parse(text.begin(), text.end(), &builder, Json::input_format_t::json, /*strict=*/true);
    return std::move(builder).result();
}

Json parse_json(std::string_view text) { return parse_json_text(text).value; }

}  // namespace daemonlet
