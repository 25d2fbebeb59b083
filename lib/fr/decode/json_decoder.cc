#include "fr/decode/json_decoder.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/status_macros.h"

namespace fr {
namespace {

namespace ondemand = simdjson::ondemand;

absl::Status OutOfMemory(uint64_t size);

constexpr std::string_view kUtf8Bom("\xef\xbb\xbf", 3);

bool IsWhitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// How a character reads in an error message.
std::string Describe(char c) {
  auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", byte);
}

// Finds the first error in a document simdjson rejected, with its offset. simdjson's DOM API says
// what is wrong but not where, and its On Demand API is lenient on some malformed input, so the
// error path re-reads the input with this small strict scalar checker (RFC 8259, as Python's
// json.loads with the limits of this decoder). It only runs on input already known to be bad.
class ErrorLocator {
 public:
  ErrorLocator(std::string_view input, uint64_t base_offset, uint32_t max_depth)
      : in_(input), base_(base_offset), max_depth_(max_depth) {}

  // The error, or OK when the checker finds none (then simdjson and the checker disagree).
  absl::Status Locate() {
    SkipWhitespace();
    if (pos_ == in_.size()) {
      return Fail(absl::StatusCode::kInvalidArgument, "empty document (no JSON value)");
    }
    // Expectation states; the stack holds '[' or '{' per open container.
    enum class Expect { kValue, kKeyOrClose, kKey, kColon, kCommaOrClose, kValueOrClose };
    std::vector<char> stack;
    Expect expect = Expect::kValue;
    while (true) {
      SkipWhitespace();
      if (pos_ == in_.size()) {
        if (stack.empty() && expect == Expect::kCommaOrClose) return absl::OkStatus();
        return Truncated(stack.empty() ? "the document ends before its value"
                                       : fmt::format("the document ends inside {} open "
                                                     "containers",
                                                     stack.size()));
      }
      char c = in_[pos_];
      switch (expect) {
        case Expect::kKeyOrClose:
        case Expect::kValueOrClose:
          if (c == (expect == Expect::kKeyOrClose ? '}' : ']')) {
            ++pos_;
            stack.pop_back();
            expect = Expect::kCommaOrClose;
            break;
          }
          expect = expect == Expect::kKeyOrClose ? Expect::kKey : Expect::kValue;
          continue;
        case Expect::kKey:
          if (c != '"') return Unexpected("expected a string key");
          if (absl::Status s = String(); !s.ok()) return s;
          expect = Expect::kColon;
          break;
        case Expect::kColon:
          if (c != ':') return Unexpected("expected ':' after an object key");
          ++pos_;
          expect = Expect::kValue;
          break;
        case Expect::kCommaOrClose: {
          if (stack.empty()) {
            return Fail(absl::StatusCode::kInvalidArgument,
                        fmt::format("trailing content after the top-level value: {}", Describe(c)));
          }
          char close = stack.back() == '{' ? '}' : ']';
          if (c == close) {
            ++pos_;
            stack.pop_back();
          } else if (c == ',') {
            ++pos_;
            expect = stack.back() == '{' ? Expect::kKey : Expect::kValue;
          } else {
            return Unexpected(fmt::format("expected ',' or '{}'", close));
          }
          break;
        }
        case Expect::kValue:
          if (c == '{' || c == '[') {
            if (stack.size() >= max_depth_) {
              return Fail(
                  absl::StatusCode::kInvalidArgument,
                  fmt::format("nesting deeper than {} (JsonLimits::max_depth)", max_depth_));
            }
            stack.push_back(c);
            ++pos_;
            expect = c == '{' ? Expect::kKeyOrClose : Expect::kValueOrClose;
            break;
          }
          if (absl::Status s = Scalar(); !s.ok()) return s;
          expect = Expect::kCommaOrClose;
          break;
      }
    }
  }

 private:
  absl::Status Fail(absl::StatusCode code, std::string_view what) {
    return absl::Status(code, fmt::format("byte {}: {}", base_ + pos_, what));
  }
  absl::Status Truncated(std::string_view what) {
    pos_ = in_.size();
    return Fail(absl::StatusCode::kDataLoss, fmt::format("truncated JSON: {}", what));
  }
  absl::Status Unexpected(std::string_view expected) {
    return Fail(absl::StatusCode::kInvalidArgument,
                fmt::format("{}, found {}", expected, Describe(in_[pos_])));
  }

  void SkipWhitespace() {
    while (pos_ < in_.size() && IsWhitespace(in_[pos_])) ++pos_;
  }

  absl::Status Scalar() {
    char c = in_[pos_];
    if (c == '"') return String();
    if (c == '-' || (c >= '0' && c <= '9')) return Number();
    for (std::string_view literal : {"true", "false", "null"}) {
      if (c != literal[0]) continue;
      std::string_view rest = in_.substr(pos_);
      if (rest.size() < literal.size() && literal.substr(0, rest.size()) == rest) {
        return Truncated(fmt::format("the document ends inside '{}'", literal));
      }
      if (rest.substr(0, literal.size()) != literal ||
          (rest.size() > literal.size() && !IsDelimiter(rest[literal.size()]))) {
        return Fail(absl::StatusCode::kInvalidArgument,
                    fmt::format("invalid literal (expected '{}')", literal));
      }
      pos_ += literal.size();
      return absl::OkStatus();
    }
    return Unexpected("expected a JSON value");
  }

  static bool IsDelimiter(char c) {
    return IsWhitespace(c) || c == ',' || c == ']' || c == '}' || c == ':';
  }

  absl::Status Number() {
    size_t start = pos_;
    auto digits = [&] {
      size_t first = pos_;
      while (pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9') ++pos_;
      return pos_ - first;
    };
    auto bad = [&](std::string_view what) -> absl::Status {
      if (pos_ == in_.size()) return Truncated("the document ends inside a number");
      absl::Status status =
          Fail(absl::StatusCode::kInvalidArgument, fmt::format("invalid number: {}", what));
      return status;
    };
    if (in_[pos_] == '-') ++pos_;
    if (pos_ < in_.size() && in_[pos_] == '0') {
      ++pos_;
    } else if (digits() == 0) {
      return bad("expected a digit");
    }
    bool integer = true;
    if (pos_ < in_.size() && in_[pos_] == '.') {
      ++pos_;
      integer = false;
      if (digits() == 0) return bad("expected a digit after '.'");
    }
    if (pos_ < in_.size() && (in_[pos_] == 'e' || in_[pos_] == 'E')) {
      ++pos_;
      integer = false;
      if (pos_ < in_.size() && (in_[pos_] == '+' || in_[pos_] == '-')) ++pos_;
      if (digits() == 0) return bad("expected a digit in the exponent");
    }
    if (pos_ < in_.size() && !IsDelimiter(in_[pos_])) {
      return bad(fmt::format("unexpected {} after the number", Describe(in_[pos_])));
    }
    std::string_view token = in_.substr(start, pos_ - start);
    if (integer) {
      int64_t signed_value;
      uint64_t unsigned_value;
      const char* end = token.data() + token.size();
      if (std::from_chars(token.data(), end, signed_value).ec == std::errc() ||
          (token[0] != '-' &&
           std::from_chars(token.data(), end, unsigned_value).ec == std::errc())) {
        return absl::OkStatus();
      }
      pos_ = start;
      return Fail(absl::StatusCode::kInvalidArgument,
                  fmt::format("integer {} does not fit in 64 bits", Shorten(token)));
    }
    double value;
    auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
    // Underflow to zero is accepted (as by simdjson and Python); overflow to infinity is not.
    if (error == std::errc::result_out_of_range && token.find("e-") == std::string_view::npos &&
        token.find("E-") == std::string_view::npos) {
      pos_ = start;
      return Fail(absl::StatusCode::kInvalidArgument,
                  fmt::format("number {} is out of the range of a double", Shorten(token)));
    }
    return absl::OkStatus();
  }

  static std::string Shorten(std::string_view token) {
    if (token.size() <= 40) return std::string(token);
    return fmt::format("{}... ({} digits)", token.substr(0, 30), token.size());
  }

  int HexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Reads \uXXXX at pos_ (pointing at the backslash); -1 when malformed, -2 when truncated.
  int32_t UnicodeEscape() {
    if (pos_ + 6 > in_.size()) {
      for (size_t i = pos_ + 2; i < in_.size(); ++i) {
        if (HexDigit(in_[i]) < 0) return -1;
      }
      return -2;
    }
    int32_t code = 0;
    for (size_t i = pos_ + 2; i < pos_ + 6; ++i) {
      int digit = HexDigit(in_[i]);
      if (digit < 0) return -1;
      code = code * 16 + digit;
    }
    return code;
  }

  absl::Status String() {
    size_t start = pos_;
    ++pos_;
    while (true) {
      if (pos_ >= in_.size()) {
        pos_ = start;
        return Truncated(
            fmt::format("the string starting at byte {} is not closed", base_ + start));
      }
      auto c = static_cast<unsigned char>(in_[pos_]);
      if (c == '"') {
        ++pos_;
        return absl::OkStatus();
      }
      if (c < 0x20) {
        return Fail(absl::StatusCode::kInvalidArgument,
                    fmt::format("unescaped control character 0x{:02x} in a string", c));
      }
      if (c == '\\') {
        if (pos_ + 1 >= in_.size()) return Truncated("the document ends inside an escape");
        char kind = in_[pos_ + 1];
        if (kind != 'u') {
          if (std::string_view("\"\\/bfnrt").find(kind) == std::string_view::npos) {
            return Fail(absl::StatusCode::kInvalidArgument,
                        fmt::format("invalid escape '\\{}'", kind));
          }
          pos_ += 2;
          continue;
        }
        int32_t code = UnicodeEscape();
        if (code == -2) return Truncated("the document ends inside a \\u escape");
        if (code == -1) {
          return Fail(absl::StatusCode::kInvalidArgument,
                      "invalid \\u escape (needs 4 hex digits)");
        }
        if (code >= 0xdc00 && code <= 0xdfff) {
          return Fail(absl::StatusCode::kInvalidArgument, "lone low surrogate in a \\u escape");
        }
        if (code >= 0xd800 && code <= 0xdbff) {
          size_t high = pos_;
          pos_ += 6;
          if (pos_ + 1 >= in_.size()) return Truncated("the document ends inside a surrogate pair");
          if (in_[pos_] != '\\' || in_[pos_ + 1] != 'u') {
            pos_ = high;
            return Fail(absl::StatusCode::kInvalidArgument,
                        "high surrogate not followed by a low surrogate");
          }
          int32_t low = UnicodeEscape();
          if (low == -2) return Truncated("the document ends inside a surrogate pair");
          if (low < 0xdc00 || low > 0xdfff) {
            pos_ = high;
            return Fail(absl::StatusCode::kInvalidArgument,
                        "high surrogate not followed by a low surrogate");
          }
        }
        pos_ += 6;
        continue;
      }
      if (c < 0x80) {
        ++pos_;
        continue;
      }
      // UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF.
      size_t length = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
      uint32_t code = c & (length == 4 ? 0x07 : length == 3 ? 0x0f : 0x1f);
      bool valid = length != 0 && c >= 0xc2 && c <= 0xf4;
      for (size_t i = 1; valid && i < length; ++i) {
        if (pos_ + i >= in_.size()) return Truncated("the document ends inside a UTF-8 character");
        auto next = static_cast<unsigned char>(in_[pos_ + i]);
        valid = (next & 0xc0) == 0x80;
        code = (code << 6) | (next & 0x3f);
      }
      if (valid) {
        valid = !(length == 3 && code < 0x800) && !(length == 4 && code < 0x10000) &&
                !(code >= 0xd800 && code <= 0xdfff) && code <= 0x10ffff;
      }
      if (!valid) return Fail(absl::StatusCode::kInvalidArgument, "invalid UTF-8 in a string");
      pos_ += length;
    }
  }

  std::string_view in_;
  uint64_t base_;
  uint32_t max_depth_;
  size_t pos_ = 0;
};

// Per-thread decoding state, reused across documents: the loader decodes files in parallel, and
// simdjson's parsers and the padded copy keep their allocations between inputs.
struct DecoderState {
  simdjson::dom::parser dom_parser;
  ondemand::parser ondemand_parser;
  std::unique_ptr<char[]> padded;
  size_t padded_capacity = 0;
  DocumentBuilder builder;

  struct Frame {
    ValueId id;
    uint32_t first_child;  // index into children
    bool is_object;
    bool started;
    ondemand::array_iterator array_it, array_end;
    ondemand::object_iterator object_it, object_end;
  };
  std::vector<Frame> stack;
  // Children of every open container, innermost last.
  std::vector<ValueId> children;
};

// Walks a document that simdjson's DOM parser already accepted, so every error here is an
// internal inconsistency or a value outside the Document model (an integer above int64).
class DocumentWalker {
 public:
  DocumentWalker(DecoderState& state, std::string_view padded, uint64_t base_offset,
                 uint32_t max_depth)
      : max_depth_(max_depth),
        state_(state),
        builder_(state.builder),
        padded_(padded.data()),
        padded_end_(padded.data() + padded.size()),
        base_(base_offset) {}

  absl::StatusOr<ValueId> Walk(ondemand::document& doc) {
    state_.stack.clear();
    state_.children.clear();
    ondemand::json_type type;
    if (auto error = doc.type().get(type)) return SimdjsonError(error, doc);
    ValueId root;
    if (type != ondemand::json_type::array && type != ondemand::json_type::object) {
      // A scalar document: simdjson reads it through the document, not as a value.
      std::string_view token;
      if (auto error = doc.raw_json_token().get(token)) return SimdjsonError(error, doc);
      return AddScalar(doc, type, Offset(token.data()));
    }
    ondemand::value value;
    if (auto error = doc.get_value().get(value)) return SimdjsonError(error, doc);
    absl::StatusOr<ValueId> added = AddValue(value);
    if (!added.ok()) return added.status();
    root = *added;
    while (!state_.stack.empty()) {
      DecoderState::Frame& frame = state_.stack.back();
      if (frame.is_object) {
        if (frame.started) ++frame.object_it;
        frame.started = true;
        if (!(frame.object_it != frame.object_end)) {
          Close();
          continue;
        }
        ondemand::field field;
        if (auto error = (*frame.object_it).get(field)) return SimdjsonError(error, doc);
        FR_RETURN_IF_ERROR(AddKey(field));
        absl::StatusOr<ValueId> child = AddValue(field.value());
        if (!child.ok()) return child.status();
      } else {
        if (frame.started) ++frame.array_it;
        frame.started = true;
        if (!(frame.array_it != frame.array_end)) {
          Close();
          continue;
        }
        ondemand::value item;
        if (auto error = (*frame.array_it).get(item)) return SimdjsonError(error, doc);
        absl::StatusOr<ValueId> child = AddValue(item);
        if (!child.ok()) return child.status();
      }
    }
    return root;
  }

 private:
  uint32_t Offset(const char* position) const {
    return static_cast<uint32_t>(base_ + (position - padded_));
  }

  template <typename Source>
  absl::Status SimdjsonError(simdjson::error_code error, Source& source) {
    if (error == simdjson::MEMALLOC) return OutOfMemory(padded_end_ - padded_);
    uint64_t offset = base_;
    const char* location;
    if (!source.current_location().get(location)) offset = Offset(location);
    return absl::InvalidArgumentError(
        fmt::format("byte {}: {}", offset, simdjson::error_message(error)));
  }

  // Adds `value` to the open container (if any); opens a frame for arrays and objects.
  absl::StatusOr<ValueId> AddValue(ondemand::value value) {
    // The token's first byte says its type (the input is valid): cheaper than value.type().
    const char* token = value.raw_json_token().data();
    uint32_t offset = Offset(token);
    ondemand::json_type type;
    switch (*token) {
      case '[':
        type = ondemand::json_type::array;
        break;
      case '{':
        type = ondemand::json_type::object;
        break;
      case '"':
        type = ondemand::json_type::string;
        break;
      case 't':
      case 'f':
        type = ondemand::json_type::boolean;
        break;
      case 'n':
        type = ondemand::json_type::null;
        break;
      default:
        type = ondemand::json_type::number;
        break;
    }
    ValueId id;
    if (type == ondemand::json_type::array || type == ondemand::json_type::object) {
      if (state_.stack.size() >= max_depth_) {
        return absl::InvalidArgumentError(fmt::format(
            "byte {}: nesting deeper than {} (JsonLimits::max_depth)", offset, max_depth_));
      }
      bool is_object = type == ondemand::json_type::object;
      id = builder_.AddContainer(is_object ? ValueKind::kDict : ValueKind::kList, offset);
      state_.children.push_back(id);
      DecoderState::Frame frame{};
      frame.id = id;
      frame.first_child = static_cast<uint32_t>(state_.children.size());
      frame.is_object = is_object;
      if (is_object) {
        ondemand::object object;
        if (auto error = value.get_object().get(object)) return SimdjsonError(error, value);
        if (auto error = object.begin().get(frame.object_it)) return SimdjsonError(error, value);
        if (auto error = object.end().get(frame.object_end)) return SimdjsonError(error, value);
      } else {
        ondemand::array array;
        if (auto error = value.get_array().get(array)) return SimdjsonError(error, value);
        if (auto error = array.begin().get(frame.array_it)) return SimdjsonError(error, value);
        if (auto error = array.end().get(frame.array_end)) return SimdjsonError(error, value);
      }
      state_.stack.push_back(frame);
      return id;
    }
    absl::StatusOr<ValueId> scalar = AddScalar(value, type, offset);
    if (scalar.ok()) state_.children.push_back(*scalar);
    return scalar;
  }

  // Strings without escapes (nearly all of them in a dump) point into the input, as pickle strings
  // do; only escaped ones are unescaped into the document's arena.
  template <typename Source>
  absl::StatusOr<ValueId> AddScalar(Source& source, ondemand::json_type type, uint32_t offset) {
    switch (type) {
      case ondemand::json_type::string: {
        std::string_view token = source.raw_json_token();
        while (!token.empty() && IsWhitespace(token.back())) token.remove_suffix(1);
        std::string_view content = token.substr(1, token.size() - 2);
        if (std::memchr(content.data(), '\\', content.size()) == nullptr) {
          return builder_.AddInputString(offset + 1, static_cast<uint32_t>(content.size()), offset);
        }
        std::string_view unescaped;
        if (auto error = source.get_string().get(unescaped)) return SimdjsonError(error, source);
        return builder_.AddOwnedString(unescaped, offset);
      }
      case ondemand::json_type::number: {
        // Not get_number(): in simdjson 3.0.1 it returns 0 for some long decimals
        // (123456789012345678901234567890.0); get_double() is exact.
        ondemand::number_type number_type;
        if (auto error = source.get_number_type().get(number_type)) {
          return SimdjsonError(error, source);
        }
        if (number_type == ondemand::number_type::signed_integer) {
          int64_t value;
          if (auto error = source.get_int64().get(value)) return SimdjsonError(error, source);
          return builder_.AddInt(value, offset);
        }
        if (number_type == ondemand::number_type::unsigned_integer) {
          uint64_t value;
          if (auto error = source.get_uint64().get(value)) return SimdjsonError(error, source);
          return absl::InvalidArgumentError(
              fmt::format("byte {}: integer {} does not fit in int64 (not a flight-recorder value)",
                          offset, value));
        }
        double value;
        if (auto error = source.get_double().get(value)) return SimdjsonError(error, source);
        return builder_.AddFloat(value, offset);
      }
      case ondemand::json_type::boolean: {
        bool value;
        if (auto error = source.get_bool().get(value)) return SimdjsonError(error, source);
        return builder_.AddBool(value, offset);
      }
      case ondemand::json_type::null:
        return builder_.AddNone(offset);
      default:
        return absl::InternalError(fmt::format("byte {}: unexpected JSON value type", offset));
    }
  }

  absl::Status AddKey(ondemand::field& field) {
    const char* raw = field.key().raw();  // just after the opening quote
    uint32_t offset = Offset(raw - 1);
    const char* quote = static_cast<const char*>(std::memchr(raw, '"', padded_end_ - raw));
    if (quote != nullptr && std::memchr(raw, '\\', quote - raw) == nullptr) {
      state_.children.push_back(
          builder_.AddInputString(offset + 1, static_cast<uint32_t>(quote - raw), offset));
      return absl::OkStatus();
    }
    std::string_view unescaped;
    if (auto error = field.unescaped_key().get(unescaped)) {
      return absl::InvalidArgumentError(
          fmt::format("byte {}: {}", offset, simdjson::error_message(error)));
    }
    state_.children.push_back(builder_.AddOwnedString(unescaped, offset));
    return absl::OkStatus();
  }

  void Close() {
    DecoderState::Frame& frame = state_.stack.back();
    std::span<const ValueId> items(state_.children.data() + frame.first_child,
                                   state_.children.size() - frame.first_child);
    builder_.Append(frame.id, items);
    state_.children.resize(frame.first_child);
    state_.stack.pop_back();
  }

 private:
  uint32_t max_depth_;
  DecoderState& state_;
  DocumentBuilder& builder_;
  const char* padded_;
  const char* padded_end_;  // end of the input in the padded copy
  uint64_t base_;
};

DecoderState& ThreadState() {
  thread_local DecoderState state;
  return state;
}

absl::Status OutOfMemory(uint64_t size) {
  uint64_t per_byte =
      size > kJsonFreeValidatorAboveBytes ? kLargeJsonBytesPerInputByte : kJsonBytesPerInputByte;
  return absl::ResourceExhaustedError(fmt::format(
      "byte 0: ran out of memory decoding {} bytes of JSON (decoding needs about {} bytes: {} "
      "per input byte)",
      size, size * per_byte, per_byte));
}

// Parsers sized for an unusually large input would hold that memory for the thread's life.
void TrimState(DecoderState& state) {
  constexpr size_t kKeepBytes = size_t{64} << 20;
  if (state.padded_capacity > kKeepBytes) {
    state.padded.reset();
    state.padded_capacity = 0;
    state.dom_parser = simdjson::dom::parser();
    state.ondemand_parser = ondemand::parser();
  }
  if (state.children.capacity() * sizeof(ValueId) > kKeepBytes) state.children = {};
}

absl::StatusOr<Document> Decode(const std::shared_ptr<const Buffer>& input,
                                const JsonLimits& limits, DecoderState& state) {
  std::string_view bytes = input->bytes();
  // A UTF-8 byte order mark (Windows editors) is not JSON; skip it and keep offsets in the file.
  uint64_t base = 0;
  if (bytes.substr(0, kUtf8Bom.size()) == kUtf8Bom) {
    base = kUtf8Bom.size();
    bytes.remove_prefix(kUtf8Bom.size());
  }
  uint32_t max_depth = std::max<uint32_t>(limits.max_depth, 1);

  // simdjson reads up to SIMDJSON_PADDING bytes past the end: parse a padded copy (a memcpy, far
  // cheaper than the parse) rather than the mapping, whose end may be the end of a page.
  size_t needed = bytes.size() + simdjson::SIMDJSON_PADDING;
  if (state.padded_capacity < needed) {
    state.padded.reset(new char[needed]);
    state.padded_capacity = needed;
  }
  std::memcpy(state.padded.get(), bytes.data(), bytes.size());
  std::memset(state.padded.get() + bytes.size(), 0, simdjson::SIMDJSON_PADDING);

  // The DOM parser validates everything strictly and fast; the On Demand pass then builds the
  // document with source offsets, which only On Demand exposes, over input known to be valid.
  // simdjson's DOM counts one level more than JsonLimits (the walker enforces the exact limit).
  if (state.dom_parser.max_depth() != max_depth + 1 || state.dom_parser.capacity() < bytes.size()) {
    if (auto error = state.dom_parser.allocate(std::max(bytes.size(), state.dom_parser.capacity()),
                                               max_depth + 1)) {
      if (error == simdjson::MEMALLOC) return OutOfMemory(bytes.size());
      return absl::ResourceExhaustedError(fmt::format("byte 0: cannot allocate the JSON parser: {}",
                                                      simdjson::error_message(error)));
    }
  }
  simdjson::dom::element element;
  if (auto error = state.dom_parser.parse(state.padded.get(), bytes.size(), false).get(element)) {
    // The document's tape is allocated inside parse.
    if (error == simdjson::MEMALLOC) return OutOfMemory(bytes.size());
    absl::Status located = ErrorLocator(bytes, base, max_depth).Locate();
    if (!located.ok()) return located;
    return absl::InvalidArgumentError(
        fmt::format("byte {}: {}", base, simdjson::error_message(error)));
  }

  // The DOM parser (its tape, strings and structural indexes: about 14 bytes per input byte) is
  // done once the input is known valid. For a large input, free it before the On Demand parser
  // and the document are allocated, so that the two never add up: a 52 MB dump needed 1.33 GB
  // of address space with both alive.
  if (bytes.size() > kJsonFreeValidatorAboveBytes) state.dom_parser = simdjson::dom::parser();
  if (state.ondemand_parser.max_depth() < max_depth + 1) {
    if (auto error = state.ondemand_parser.allocate(
            std::max(bytes.size(), state.ondemand_parser.capacity()), max_depth + 1)) {
      if (error == simdjson::MEMALLOC) return OutOfMemory(bytes.size());
      return absl::ResourceExhaustedError(fmt::format("byte 0: cannot allocate the JSON parser: {}",
                                                      simdjson::error_message(error)));
    }
  }
  ondemand::document doc;
  if (auto error = state.ondemand_parser
                       .iterate(simdjson::padded_string_view(state.padded.get(), bytes.size(),
                                                             state.padded_capacity))
                       .get(doc)) {
    // On Demand allocates its indexes here: under a memory limit this is where decoding stops.
    if (error == simdjson::MEMALLOC) return OutOfMemory(bytes.size());
    return absl::InvalidArgumentError(
        fmt::format("byte {}: {}", base, simdjson::error_message(error)));
  }
  state.builder.Reset(input);
  DocumentWalker walker(state, std::string_view(state.padded.get(), bytes.size()), base, max_depth);
  absl::StatusOr<ValueId> root = walker.Walk(doc);
  if (!root.ok()) {
    state.builder = DocumentBuilder();
    return root.status();
  }
  return state.builder.Finish(*root);
}

}  // namespace

absl::StatusOr<Document> DecodeJson(std::shared_ptr<const Buffer> input, const JsonLimits& limits) {
  uint64_t size = input->bytes().size();
  uint64_t limit = std::min<uint64_t>(limits.max_input_bytes, DocumentBuilder::kMaxInputSize);
  if (size > limit) {
    return absl::ResourceExhaustedError(fmt::format(
        "byte 0: JSON input of {} bytes is larger than the limit of {} bytes "
        "(JsonLimits::max_input_bytes; decoding takes about {} bytes of memory per input byte)",
        size, limit, kJsonBytesPerInputByte));
  }
  DecoderState& state = ThreadState();
  absl::StatusOr<Document> result = absl::UnknownError("");
  try {
    result = Decode(input, limits, state);
  } catch (const std::bad_alloc&) {
    result = OutOfMemory(size);
    state.stack = {};
    state.children = {};
    state.builder = DocumentBuilder();
  }
  TrimState(state);
  return result;
}

}  // namespace fr
