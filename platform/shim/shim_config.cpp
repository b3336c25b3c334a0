#include "platform/shim/shim_config.h"

#include <cstdlib>
#include <cstring>

#include "platform/shim/shim_protocol.h"

namespace daemonlet::shim {
namespace {

constexpr int kMaxDepth = 32;

struct Reader {
    char* p;
    Text* err;
    bool failed = false;

    bool fail(const char* what) {
        if (!failed) err->str("config.json: ").str(what);
        failed = true;
        return false;
    }
    void ws() {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') ++p;
    }
    bool expect(char c) {
        ws();
        if (*p != c) return fail("malformed JSON");
        ++p;
        return true;
    }
};

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool read_hex4(Reader* r, unsigned* out) {
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
        int h = hex_value(r->p[i]);
        if (h < 0) return r->fail("bad \\u escape");
        v = v * 16 + static_cast<unsigned>(h);
    }
    r->p += 4;
    *out = v;
    return true;
}

char* put_utf8(char* w, unsigned cp) {
    if (cp < 0x80) {
        *w++ = static_cast<char>(cp);
    } else if (cp < 0x800) {
        *w++ = static_cast<char>(0xC0 | (cp >> 6));
        *w++ = static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *w++ = static_cast<char>(0xE0 | (cp >> 12));
        *w++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *w++ = static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        *w++ = static_cast<char>(0xF0 | (cp >> 18));
        *w++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        *w++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *w++ = static_cast<char>(0x80 | (cp & 0x3F));
    }
    return w;
}

// Decodes a string in place; the decoded text is never longer than the
// escaped one, so it is written over it and NUL-terminated.
bool read_string(Reader* r, char** out) {
    r->ws();
    if (*r->p != '"') return r->fail("expected a string");
    char* w = ++r->p;
    *out = w;
    for (;;) {
        char c = *r->p++;
        if (c == '"') break;
        if (c == '\0') return r->fail("unterminated string");
        if (static_cast<unsigned char>(c) < 0x20) return r->fail("control character in a string");
        if (c != '\\') {
            *w++ = c;
            continue;
        }
        c = *r->p++;
        switch (c) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '/': *w++ = '/'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (!read_hex4(r, &cp)) return false;
            if (cp >= 0xD800 && cp < 0xDC00 && r->p[0] == '\\' && r->p[1] == 'u') {
                r->p += 2;
                unsigned lo;
                if (!read_hex4(r, &lo)) return false;
                cp = (lo >= 0xDC00 && lo < 0xE000) ? 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00) : 0xFFFD;
            } else if (cp >= 0xD800 && cp < 0xE000) {
                cp = 0xFFFD;
            }
            if (cp == 0) return r->fail("NUL in a string");
            w = put_utf8(w, cp);
            break;
        }
        default: return r->fail("bad escape in a string");
        }
    }
    *w = '\0';
    return true;
}

bool read_int(Reader* r, std::int64_t* out) {
    r->ws();
    bool neg = *r->p == '-';
    if (neg) ++r->p;
    if (*r->p < '0' || *r->p > '9') return r->fail("expected an integer");
    std::int64_t v = 0;
    while (*r->p >= '0' && *r->p <= '9') {
        if (v > (INT64_MAX - 9) / 10) return r->fail("integer out of range");
        v = v * 10 + (*r->p++ - '0');
    }
    if (*r->p == '.' || *r->p == 'e' || *r->p == 'E') return r->fail("expected an integer");
    *out = neg ? -v : v;
    return true;
}

bool skip_value(Reader* r, int depth);

bool skip_container(Reader* r, char close, bool members, int depth) {
    ++r->p;
    r->ws();
    if (*r->p == close) {
        ++r->p;
        return true;
    }
    for (;;) {
        if (members) {
            char* name;
            if (!read_string(r, &name) || !r->expect(':')) return false;
        }
        if (!skip_value(r, depth + 1)) return false;
        r->ws();
        if (*r->p == close) {
            ++r->p;
            return true;
        }
        if (!r->expect(',')) return false;
    }
}

bool skip_value(Reader* r, int depth) {
    if (depth > kMaxDepth) return r->fail("nested too deeply");
    r->ws();
    char* s;
    std::int64_t n;
    switch (*r->p) {
    case '"': return read_string(r, &s);
    case '{': return skip_container(r, '}', true, depth);
    case '[': return skip_container(r, ']', false, depth);
    case 't': return std::strncmp(r->p, "true", 4) == 0 ? (r->p += 4, true) : r->fail("malformed JSON");
    case 'f': return std::strncmp(r->p, "false", 5) == 0 ? (r->p += 5, true) : r->fail("malformed JSON");
    case 'n': return std::strncmp(r->p, "null", 4) == 0 ? (r->p += 4, true) : r->fail("malformed JSON");
    default:
        if (!read_int(r, &n)) return false;
        // Fractions and exponents are valid JSON, just not in the members we read.
        while (*r->p == '.' || *r->p == 'e' || *r->p == 'E' || *r->p == '+' || *r->p == '-' ||
               (*r->p >= '0' && *r->p <= '9'))
            ++r->p;
        return true;
    }
}

bool read_string_array(Reader* r, char*** out) {
    std::size_t n = 0, cap = 8;
    auto** items = static_cast<char**>(std::malloc(cap * sizeof(char*)));
    if (items == nullptr) return r->fail("out of memory");
    std::free(*out);
    *out = items;
    items[0] = nullptr;
    if (!r->expect('[')) return false;
    r->ws();
    if (*r->p == ']') {
        ++r->p;
        return true;
    }
    for (;;) {
        if (n + 1 == cap) {
            cap *= 2;
            auto** grown = static_cast<char**>(std::realloc(items, cap * sizeof(char*)));
            if (grown == nullptr) return r->fail("out of memory");
            *out = items = grown;
        }
        if (!read_string(r, &items[n])) return false;
        items[++n] = nullptr;
        r->ws();
        if (*r->p == ']') {
            ++r->p;
            return true;
        }
        if (!r->expect(',')) return false;
    }
}

bool read_member(Reader* r, const char* name, ShimConfig* c) {
    std::int64_t n = 0;
    char* s = nullptr;
    if (std::strcmp(name, kArgv) == 0) return read_string_array(r, &c->argv);
    if (std::strcmp(name, kEnv) == 0) return read_string_array(r, &c->env);
    if (std::strcmp(name, kCwd) == 0) return read_string(r, &s) && (c->cwd = s, true);
    if (std::strcmp(name, kLogPath) == 0) return read_string(r, &s) && (c->log_path = s, true);
    if (std::strcmp(name, kGraceSeconds) == 0) {
        if (!read_int(r, &n)) return false;
        c->grace_seconds = n < 0 ? 0 : n;
        return true;
    }
    if (std::strcmp(name, kLogMaxBytes) == 0) {
        if (!read_int(r, &n)) return false;
        c->log_max_bytes = n < 0 ? 0 : static_cast<std::uint64_t>(n);
        return true;
    }
    if (std::strcmp(name, kLogMaxFiles) == 0) {
        if (!read_int(r, &n)) return false;
        c->log_max_files = n < 1 ? 1u : (n > 1000 ? 1000u : static_cast<std::uint32_t>(n));
        return true;
    }
    return skip_value(r, 1);
}

}  // namespace

bool parse_config(char* text, ShimConfig* out, Text* err) {
    Reader r{text, err};
    if (!r.expect('{')) return false;
    r.ws();
    if (*r.p != '}') {
        for (;;) {
            char* name;
            if (!read_string(&r, &name) || !r.expect(':') || !read_member(&r, name, out)) return false;
            r.ws();
            if (*r.p == '}') break;
            if (!r.expect(',')) return false;
        }
    }
    ++r.p;
    r.ws();
    if (*r.p != '\0') return r.fail("trailing data after the object");
    if (out->argv == nullptr || out->argv[0] == nullptr || out->argv[0][0] == '\0')
        return r.fail("\"argv\" must hold the command");
    if (out->log_path == nullptr || out->log_path[0] != '/')
        return r.fail("\"logPath\" must be an absolute path");
    if (out->cwd[0] != '/') return r.fail("\"cwd\" must be an absolute path");
    return true;
}

void free_config(ShimConfig* config) {
    std::free(config->argv);
    std::free(config->env);
    config->argv = nullptr;
    config->env = nullptr;
}

}  // namespace daemonlet::shim
