// The text form of segment_descriptor (docs/descriptors.md): written with
// yaml-cpp's emitter, read with its parser, then checked field by field.
// Every rejection is an invalid_argument naming the line and the field path
// (`registrations[1].id`); nothing thrown by yaml-cpp escapes.
#include "faultlane/core/descriptor_text.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <utility>
#include <vector>

#include "faultlane/core/limits.hpp"
#include "faultlane/core/registry.hpp"
#include "faultlane/core/yaml_reader.hpp"

namespace faultlane {
namespace {

constexpr std::string_view version_key = "faultlane_descriptor";
constexpr std::array<std::string_view, 5> descriptor_keys{
    version_key, "incarnation", "max_transfer_bytes", "endpoints", "registrations"};
constexpr std::array<std::string_view, 2> endpoint_keys{"address", "port"};
constexpr std::array<std::string_view, 4> registration_keys{"id", "length", "permission", "name"};

// Ids and the incarnation are hex strings, written with exactly this many
// digits (fewer are read): tools that hold YAML integers as doubles would
// round a 64-bit integer.
constexpr std::size_t hex_digits_max = 16;

std::string hex(std::uint64_t value) { return fmt::format("0x{:016x}", value); }

// --- writing -------------------------------------------------------------------

void write_endpoints(YAML::Emitter& out, const std::vector<endpoint>& endpoints) {
  out << YAML::Key << "endpoints" << YAML::Value;
  if (endpoints.empty()) out << YAML::Flow;
  out << YAML::BeginSeq;
  for (const auto& e : endpoints) {
    out << YAML::BeginMap;
    out << YAML::Key << "address" << YAML::Value << e.address;
    out << YAML::Key << "port" << YAML::Value << e.port;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void write_registrations(YAML::Emitter& out, const std::vector<advertised_registration>& regs) {
  out << YAML::Key << "registrations" << YAML::Value;
  if (regs.empty()) out << YAML::Flow;
  out << YAML::BeginSeq;
  for (const auto& r : regs) {
    out << YAML::BeginMap;
    out << YAML::Key << "id" << YAML::Value << YAML::DoubleQuoted << hex(r.id);
    out << YAML::Key << "length" << YAML::Value << r.length;
    out << YAML::Key << "permission" << YAML::Value << std::string(to_string(r.perm));
    out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << r.name;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

// --- reading: one field at a time ------------------------------------------------

// Errors in the shared reader's form (faultlane/core/yaml_reader.hpp):
// "<descriptor>:LINE:COLUMN: FIELD: what", the place as data.
const yaml::reader& text_reader() {
  static const yaml::reader rd("<descriptor>");
  return rd;
}

// The top of the text, where an error with no node of its own points.
const source_mark text_start{"<descriptor>", 1, 1};

// A value found under a key, with where it was found for error messages.
struct field {
  std::string path;  // `incarnation`, `endpoints[0].port`
  source_mark at;    // the key's
  YAML::Node value;
};

source_mark mark_of(const YAML::Node& node, const source_mark& fallback) {
  return node.Mark().is_null() ? fallback : text_reader().mark(node);
}

error text_error(const source_mark& at, std::string_view path, std::string_view what) {
  return text_reader().fail_at(at, path, what);
}

error field_error(const field& f, std::string_view what) { return text_error(f.at, f.path, what); }

std::string join(std::string_view where, std::string_view key) {
  return where.empty() ? std::string(key) : fmt::format("{}.{}", where, key);
}

// Text from the document as an error shows it: quoted, escaped, and cut
// short, so a control character or a megabyte value stays readable.
std::string quoted(std::string_view text) {
  constexpr std::size_t shown_bytes_max = 64;
  if (text.size() <= shown_bytes_max) return fmt::format("{:?}", text);
  return fmt::format("{:?}...", text.substr(0, shown_bytes_max));
}

// A key as part of a field path: as it is when it is a plain name.
std::string key_text(std::string_view key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  return plain ? std::string(key) : quoted(key);
}

std::string kind_of(const YAML::Node& node) {
  if (node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return quoted(node.Scalar());
}

// The fields of one mapping: each of the expected keys exactly once, no
// other key.
class field_set {
 public:
  static result<field_set> read(const YAML::Node& map, std::string_view where,
                                const source_mark& at, std::span<const std::string_view> keys);

  const field& operator[](std::string_view key) const {
    const field* f = find(key);
    FL_ASSERT(f != nullptr);  // read() made sure every expected key is there
    return *f;
  }

 private:
  const field* find(std::string_view key) const {
    for (const auto& [k, f] : fields_) {
      if (k == key) return &f;
    }
    return nullptr;
  }

  std::vector<std::pair<std::string, field>> fields_;
};

result<field_set> field_set::read(const YAML::Node& map, std::string_view where,
                                  const source_mark& at, std::span<const std::string_view> keys) {
  if (!map.IsMap()) {
    return text_error(mark_of(map, at), where,
                      fmt::format("expected a mapping, got {}", kind_of(map)));
  }
  field_set set;
  for (const auto& kv : map) {
    const source_mark key_at = mark_of(kv.first, at);
    if (!kv.first.IsScalar()) return text_error(key_at, where, "a key is not a plain name");
    std::string key = kv.first.Scalar();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      return text_error(key_at, join(where, key_text(key)),
                        fmt::format("unknown key; expected {}", fmt::join(keys, ", ")));
    }
    if (const field* first = set.find(key)) {
      return text_error(key_at, first->path,
                        fmt::format("appears twice (first on line {})", first->at.line));
    }
    field f{join(where, key), key_at, kv.second};
    set.fields_.emplace_back(std::move(key), std::move(f));
  }
  for (auto key : keys) {
    if (!set.find(key)) return text_error(mark_of(map, at), join(where, key), "missing");
  }
  return set;
}

result<std::string> read_scalar(const field& f, std::string_view expected) {
  if (!f.value.IsScalar()) {
    return field_error(f, fmt::format("expected {}, got {}", expected, kind_of(f.value)));
  }
  return f.value.Scalar();
}

// A plain (unquoted) decimal integer without sign or leading zeros: the one
// spelling every YAML reader takes for the same unsigned value.
result<std::uint64_t> read_decimal(const field& f, std::uint64_t low, std::uint64_t high) {
  auto text = read_scalar(f, "a decimal integer");
  if (!text) return text.error();
  const std::string& s = text.value();
  if (s.starts_with('-')) return field_error(f, "must not be negative, got " + quoted(s));
  if (f.value.Tag() != "?") {
    return field_error(f,
                       "expected a plain decimal integer, got " + quoted(s) + " quoted or tagged");
  }
  const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || (s.size() > 1 && s[0] == '0')) {
    return field_error(
        f, "expected a decimal integer without sign or leading zeros, got " + quoted(s));
  }
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) {
    return field_error(f, quoted(s) + " does not fit in 64 bits");
  }
  FL_ASSERT(ec == std::errc() && end == s.data() + s.size());
  if (value < low || value > high) {
    return field_error(f, fmt::format("must be in [{}, {}], got {}", low, high, value));
  }
  return value;
}

// `0x` and 1 to 16 hex digits; zero is never a valid id or incarnation.
result<std::uint64_t> read_hex_id(const field& f) {
  auto text = read_scalar(f, "a hex string like \"0x00000000000000ff\"");
  if (!text) return text.error();
  const std::string& s = text.value();
  if (s.starts_with('-')) return field_error(f, "must not be negative, got " + quoted(s));
  const auto digits = std::string_view(s).substr(std::min<std::size_t>(2, s.size()));
  if (!s.starts_with("0x") || digits.empty() ||
      digits.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) {
    return field_error(f, "expected a hex string like \"0x00000000000000ff\", got " + quoted(s));
  }
  if (digits.size() > hex_digits_max) {
    return field_error(f, fmt::format("{} does not fit in 64 bits (at most {} hex digits)",
                                      quoted(s), hex_digits_max));
  }
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
  FL_ASSERT(ec == std::errc() && end == digits.data() + digits.size());
  if (value == 0) return field_error(f, "must not be zero");
  return value;
}

result<endpoint> read_endpoint(const YAML::Node& node, std::string_view where,
                               const source_mark& at) {
  auto fields = field_set::read(node, where, at, endpoint_keys);
  if (!fields) return fields.error();
  const auto& address = fields.value()["address"];
  auto text = read_scalar(address, "a numeric IPv4 address");
  if (!text) return text.error();
  in_addr parsed{};
  if (inet_pton(AF_INET, text.value().c_str(), &parsed) != 1 || parsed.s_addr == INADDR_ANY) {
    return field_error(address, quoted(text.value()) + " is not a specific numeric IPv4 address");
  }
  auto port = read_decimal(fields.value()["port"], 1, std::numeric_limits<std::uint16_t>::max());
  if (!port) return port.error();
  return endpoint{text.value(), static_cast<std::uint16_t>(port.value())};
}

result<permission> read_permission(const field& f) {
  auto text = read_scalar(f, "remote_read or remote_read_write");
  if (!text) return text.error();
  auto perm = parse_permission(text.value());
  if (perm == permission::local_only) {
    return field_error(f, "local_only registrations are never advertised");
  }
  if (!perm) {
    return field_error(f, "unknown permission " + quoted(text.value()) +
                              "; expected remote_read or remote_read_write");
  }
  return *perm;
}

result<advertised_registration> read_registration(const YAML::Node& node, std::string_view where,
                                                  const source_mark& at) {
  auto fields = field_set::read(node, where, at, registration_keys);
  if (!fields) return fields.error();
  const auto& set = fields.value();
  advertised_registration r;
  auto id = read_hex_id(set["id"]);
  if (!id) return id.error();
  r.id = id.value();
  auto length = read_decimal(set["length"], 1, std::numeric_limits<std::uint64_t>::max());
  if (!length) return length.error();
  r.length = length.value();
  auto perm = read_permission(set["permission"]);
  if (!perm) return perm.error();
  r.perm = perm.value();
  auto name = read_scalar(set["name"], "a string (\"\" for no name)");
  if (!name) return name.error();
  if (!valid_registration_name(name.value())) {
    return field_error(set["name"],
                       "not valid UTF-8 text (or holds a surrogate or noncharacter, or is over "
                       "registration_name_bytes_max)");
  }
  r.name = std::move(name).value();
  return r;
}

result<void> check_list(const field& f, std::size_t count_min, std::size_t count_max) {
  if (!f.value.IsSequence()) {
    return field_error(f, fmt::format("expected a list{}, got {}",
                                      count_min == 0 ? " ([] for none)" : "", kind_of(f.value)));
  }
  if (f.value.size() < count_min || f.value.size() > count_max) {
    return field_error(
        f, fmt::format("must hold {} to {} entries, got {}", count_min, count_max, f.value.size()));
  }
  return {};
}

result<std::vector<endpoint>> read_endpoints(const field& f) {
  if (auto list = check_list(f, 1, limits::rail_count_max); !list) return list.error();
  std::vector<endpoint> endpoints;
  for (const auto& node : f.value) {
    auto e = read_endpoint(node, fmt::format("endpoints[{}]", endpoints.size()), f.at);
    if (!e) return e.error();
    endpoints.push_back(std::move(e).value());
  }
  return endpoints;
}

result<std::vector<advertised_registration>> read_registrations(const field& f) {
  if (auto list = check_list(f, 0, std::numeric_limits<std::size_t>::max()); !list) {
    return list.error();
  }
  std::vector<advertised_registration> regs;
  std::map<registration_id, std::size_t> index_of;  // a list may be long: no quadratic scan
  for (const auto& node : f.value) {
    const auto where = fmt::format("registrations[{}]", regs.size());
    auto r = read_registration(node, where, f.at);
    if (!r) return r.error();
    auto [seen, added] = index_of.emplace(r.value().id, regs.size());
    if (!added) {
      return text_error(
          mark_of(node, f.at), where + ".id",
          fmt::format("{} is also the id of registrations[{}]", hex(r.value().id), seen->second));
    }
    regs.push_back(std::move(r).value());
  }
  return regs;
}

// The version key comes first, and is read before anything else, so a
// document of a later version is refused for its version, not its keys.
result<void> read_version(const YAML::Node& root) {
  if (!root.IsMap()) {
    return text_error(mark_of(root, text_start), "",
                      fmt::format("expected a mapping, got {}", kind_of(root)));
  }
  bool first = true;
  for (const auto& kv : root) {
    if (kv.first.IsScalar() && kv.first.Scalar() == version_key) {
      const field f{std::string(version_key), mark_of(kv.first, text_start), kv.second};
      if (!first) return field_error(f, "must be the first key");
      auto version = read_decimal(f, 0, std::numeric_limits<std::uint64_t>::max());
      if (!version) return version.error();
      if (version.value() != descriptor_text_version) {
        return field_error(f, fmt::format("unsupported version {}; this build reads version {}",
                                          version.value(), descriptor_text_version));
      }
      return {};
    }
    first = false;
  }
  return text_error(mark_of(root, text_start), version_key, "missing: not a faultlane descriptor");
}

result<segment_descriptor> read_document(const YAML::Node& root) {
  if (auto version = read_version(root); !version) return version.error();
  auto fields = field_set::read(root, "", text_start, descriptor_keys);
  if (!fields) return fields.error();
  const auto& set = fields.value();
  segment_descriptor d;
  auto incarnation = read_hex_id(set["incarnation"]);
  if (!incarnation) return incarnation.error();
  d.incarnation = incarnation.value();
  auto max_transfer = read_decimal(set["max_transfer_bytes"], 1, limits::transfer_bytes_max);
  if (!max_transfer) return max_transfer.error();
  d.max_transfer_bytes = max_transfer.value();
  auto endpoints = read_endpoints(set["endpoints"]);
  if (!endpoints) return endpoints.error();
  d.endpoints = std::move(endpoints).value();
  auto regs = read_registrations(set["registrations"]);
  if (!regs) return regs.error();
  d.registrations = std::move(regs).value();
  return d;
}

// Sees where each YAML document starts, and nothing else.
class document_starts final : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;

  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

struct document_count {
  int count = 0;       // 0, 1, or 2 for "two or more"
  source_mark second;  // where the second starts, when there is one
};

source_mark mark_at(const YAML::Mark& mark) {
  if (mark.is_null()) return text_start;
  return source_mark{text_start.file, mark.line + 1, mark.column + 1};
}

// How many YAML documents the text holds, counted by the parser itself.
// YAML::LoadAll() cannot be used: in yaml-cpp 0.7 a ',' outside a flow
// collection at the top level (",", "- a\n,") is never consumed, and the
// parser reports an empty document at the same place for ever, so LoadAll
// allocates until the process dies. Here a document that starts where the
// previous one did is that stray token, and an error.
result<document_count> count_documents(std::string_view text) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  document_starts starts;
  constexpr std::size_t documents_read_max = 3;  // a stuck parser shows by the third
  while (starts.marks.size() < documents_read_max && parser.HandleNextDocument(starts)) {
    const auto n = starts.marks.size();
    if (n < 2 || starts.marks[n - 1].pos != starts.marks[n - 2].pos) continue;
    const auto at = static_cast<std::size_t>(std::max(starts.marks[n - 1].pos, 0));
    return text_reader().syntax_at(
        mark_at(starts.marks[n - 1]),
        fmt::format("unexpected {} outside [ ] or {{ }}",
                    at < text.size() ? quoted(text.substr(at, 1)) : "end"));
  }
  document_count out;
  out.count = static_cast<int>(std::min<std::size_t>(starts.marks.size(), 2));
  if (out.count > 1) out.second = mark_at(starts.marks[1]);
  return out;
}

}  // namespace

std::string to_text(const segment_descriptor& d) {
  YAML::Emitter out;
  out << YAML::EscapeNonAscii;
  out << YAML::BeginMap;
  out << YAML::Key << std::string(version_key) << YAML::Value << descriptor_text_version;
  out << YAML::Key << "incarnation" << YAML::Value << YAML::DoubleQuoted << hex(d.incarnation);
  out << YAML::Key << "max_transfer_bytes" << YAML::Value << d.max_transfer_bytes;
  write_endpoints(out, d.endpoints);
  write_registrations(out, d.registrations);
  out << YAML::EndMap;
  FL_ASSERT(out.good());
  return std::string(out.c_str()) + "\n";
}

result<segment_descriptor> parse_descriptor(std::string_view text) {
  try {
    auto documents = count_documents(text);
    if (!documents) return documents.error();
    if (documents.value().count == 0) {
      return text_error(text_start, version_key, "missing: the text is empty");
    }
    if (documents.value().count > 1) {
      return text_error(documents.value().second, "", "more than one YAML document");
    }
    return read_document(YAML::Load(std::string(text)));
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own message for this is "bad file".
    return text_reader().syntax_at(mark_at(e.mark), "nested too deeply");
  } catch (const YAML::Exception& e) {
    return text_reader().syntax_error(e);
  } catch (const std::exception& e) {
    return text_reader().syntax_at(text_start, e.what());
  }
}

}  // namespace faultlane
