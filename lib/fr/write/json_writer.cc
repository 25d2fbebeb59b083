#include "fr/write/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace fr {
namespace {

// The shortest round-trip digits of |value| and its decimal point position: value = 0.DIGITS *
// 10^point.
struct ShortestDigits {
  char digits[24];
  int length = 0;
  int point = 0;
  bool negative = false;
};

ShortestDigits Shortest(double value) {
  char buffer[40];
  // std::to_chars without a precision gives the shortest representation that reads back exactly.
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  ShortestDigits result;
  const char* p = buffer;
  if (*p == '-') {
    result.negative = true;
    ++p;
  }
  while (p < end && *p != 'e') {
    if (*p != '.') result.digits[result.length++] = *p;
    ++p;
  }
  int exponent = 0;
  if (p < end) {
    ++p;  // 'e'
    if (*p == '+') ++p;
    std::from_chars(p, end, exponent);
  }
  result.point = exponent + 1;
  return result;
}

// Lays out the digits in fixed notation when min_point < point <= max_point, otherwise as
// d.ddde+XX with at least two exponent digits (both Python and nlohmann do this).
void AppendFloat(double value, int min_point, int max_point, std::string& out) {
  ShortestDigits d = Shortest(value);
  if (d.negative) out.push_back('-');
  std::string_view digits(d.digits, d.length);
  int n = d.point;
  if (min_point < n && n <= max_point) {
    if (n <= 0) {
      out.append("0.");
      out.append(static_cast<size_t>(-n), '0');
      out.append(digits);
    } else if (n < d.length) {
      out.append(digits.substr(0, n));
      out.push_back('.');
      out.append(digits.substr(n));
    } else {
      out.append(digits);
      out.append(static_cast<size_t>(n - d.length), '0');
      out.append(".0");
    }
    return;
  }
  out.push_back(digits[0]);
  if (d.length > 1) {
    out.push_back('.');
    out.append(digits.substr(1));
  }
  int e = n - 1;
  out.push_back('e');
  out.push_back(e < 0 ? '-' : '+');
  if (e < 0) e = -e;
  if (e < 10) out.push_back('0');
  char exp_digits[8];
  auto [end, ec] = std::to_chars(exp_digits, exp_digits + sizeof(exp_digits), e);
  out.append(exp_digits, end);
}

void AppendPythonFloat(double value, bool json, std::string& out) {
  if (std::isnan(value)) {
    out.append(json ? "NaN" : "nan");
  } else if (std::isinf(value)) {
    out.append(value < 0 ? (json ? "-Infinity" : "-inf") : (json ? "Infinity" : "inf"));
  } else {
    AppendFloat(value, -4, 16, out);
  }
}

void AppendNlohmannFloat(double value, std::string& out) {
  if (!std::isfinite(value)) {
    out.append("null");
  } else {
    AppendFloat(value, -4, 15, out);
  }
}

void AppendInt(int64_t value, std::string& out) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, end);
}

// Length of the valid UTF-8 sequence at s[i] (1-4), 0 when invalid. Sets *surrogate to the code
// point when the sequence is a UTF-8-encoded surrogate (invalid UTF-8 but what Python's
// surrogatepass writes).
int Utf8Length(std::string_view s, size_t i, uint32_t* surrogate) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto cont = [&](size_t k) { return k < s.size() && (byte(k) & 0xc0) == 0x80; };
  unsigned char b = byte(i);
  *surrogate = 0;
  if (b >= 0xc2 && b <= 0xdf) return cont(i + 1) ? 2 : 0;
  if (b >= 0xe0 && b <= 0xef) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    uint32_t cp = ((b & 0x0fu) << 12) | ((byte(i + 1) & 0x3fu) << 6) | (byte(i + 2) & 0x3fu);
    if (cp < 0x800) return 0;
    if (cp >= 0xd800 && cp <= 0xdfff) {
      *surrogate = cp;
      return 0;
    }
    return 3;
  }
  if (b >= 0xf0 && b <= 0xf4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    uint32_t cp = ((b & 0x07u) << 18) | ((byte(i + 1) & 0x3fu) << 12) |
                  ((byte(i + 2) & 0x3fu) << 6) | (byte(i + 3) & 0x3fu);
    return cp >= 0x10000 && cp <= 0x10ffff ? 4 : 0;
  }
  return 0;
}

void AppendEscapedString(std::string_view s, bool python, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run = 0;  // start of the pending run of bytes copied verbatim
  size_t i = 0;
  auto flush = [&](size_t end) { out.append(s.substr(run, end - run)); };
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      uint32_t surrogate = 0;
      int length = Utf8Length(s, i, &surrogate);
      if (length > 0) {
        i += length;
        continue;
      }
      flush(i);
      if (python && surrogate != 0) {
        out.append("\\u");
        for (int shift = 12; shift >= 0; shift -= 4)
          out.push_back(kHex[(surrogate >> shift) & 0xf]);
        i += 3;
      } else {
        out.append(python ? "\\ufffd" : "\xef\xbf\xbd");
        i += surrogate != 0 ? 3 : 1;
      }
      run = i;
      continue;
    }
    flush(i);
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        out.append("\\u00");
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xf]);
        break;
    }
    ++i;
    run = i;
  }
  flush(s.size());
  out.push_back('"');
}

// A dict key as Python's dict sees it: 1, 1.0 and True are the same key; "1" is another.
struct PyKey {
  enum Tag : uint8_t { kStr, kNum, kFloat, kNone, kIdentity } tag;
  int64_t number = 0;  // kNum: value; kFloat: bits; kIdentity: value id
  std::string_view text;

  friend bool operator==(const PyKey& a, const PyKey& b) {
    return a.tag == b.tag && a.number == b.number && a.text == b.text;
  }
  template <typename H>
  friend H AbslHashValue(H h, const PyKey& k) {
    return H::combine(std::move(h), k.tag, k.number, k.text);
  }
};

PyKey MakePyKey(const Document& doc, ValueId id) {
  switch (doc.kind(id)) {
    case ValueKind::kString:
      return {PyKey::kStr, 0, doc.string_value(id)};
    case ValueKind::kBool:
      return {PyKey::kNum, doc.bool_value(id) ? 1 : 0, {}};
    case ValueKind::kInt:
      return {PyKey::kNum, doc.int_value(id), {}};
    case ValueKind::kNone:
      return {PyKey::kNone, 0, {}};
    case ValueKind::kFloat: {
      double f = doc.float_value(id);
      if (std::isnan(f)) break;  // nan != nan: every NaN key is its own key
      if (f == std::trunc(f) && f >= -9223372036854775808.0 && f < 9223372036854775808.0) {
        return {PyKey::kNum, static_cast<int64_t>(f), {}};
      }
      int64_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      return {PyKey::kFloat, bits, {}};
    }
    default:
      break;
  }
  return {PyKey::kIdentity, static_cast<int64_t>(id), {}};
}

class JsonPrinter {
 public:
  JsonPrinter(const Document& doc, bool python, std::string& out)
      : doc_(doc), python_(python), out_(out), on_path_(doc.value_count(), false) {}

  void Print(ValueId root) {
    if (root == kNoValue) {
      out_.append("null");
      return;
    }
    if (!Open(root)) return;
    while (!stack_.empty()) {
      Frame& frame = stack_.back();
      size_t depth = stack_.size() - 1;
      if (frame.dict) {
        const auto& pairs = pair_pool_[depth];
        if (frame.next == pairs.size()) {
          Close(frame, '}');
          continue;
        }
        auto [key, value] = pairs[frame.next++];
        if (frame.next > 1) out_.append(python_ ? ", " : ",");
        AppendKey(key);
        out_.append(python_ ? ": " : ":");
        Open(value);
      } else {
        std::span<const ValueId> items = doc_.items(frame.id);
        if (frame.next == items.size()) {
          Close(frame, ']');
          continue;
        }
        ValueId item = items[frame.next++];
        if (frame.next > 1) out_.append(python_ ? ", " : ",");
        Open(item);
      }
    }
  }

 private:
  struct Frame {
    ValueId id;
    size_t next;
    bool dict;
  };

  void Close(const Frame& frame, char bracket) {
    out_.push_back(bracket);
    on_path_[frame.id] = false;
    stack_.pop_back();
  }

  // Prints a scalar, or starts a container and pushes its frame. Returns false for scalars.
  bool Open(ValueId id) {
    switch (doc_.kind(id)) {
      case ValueKind::kNone:
        out_.append("null");
        return false;
      case ValueKind::kBool:
        out_.append(doc_.bool_value(id) ? "true" : "false");
        return false;
      case ValueKind::kInt:
        AppendInt(doc_.int_value(id), out_);
        return false;
      case ValueKind::kFloat:
        if (python_) {
          AppendPythonFloat(doc_.float_value(id), true, out_);
        } else {
          AppendNlohmannFloat(doc_.float_value(id), out_);
        }
        return false;
      case ValueKind::kString:
        AppendEscapedString(doc_.string_value(id), python_, out_);
        return false;
      default:
        break;
    }
    if (on_path_[id]) {
      out_.append("null");
      return false;
    }
    on_path_[id] = true;
    bool dict = doc_.kind(id) == ValueKind::kDict;
    size_t depth = stack_.size();
    stack_.push_back(Frame{id, 0, dict});
    if (dict) {
      if (pair_pool_.size() <= depth) pair_pool_.resize(depth + 1);
      CollectPairs(id, pair_pool_[depth]);
      out_.push_back('{');
    } else {
      out_.push_back('[');
    }
    return true;
  }

  // The dict's effective pairs: Python's dict keeps the first position (and key object) of a key
  // and the last value stored under it. nlohmann output comes from documents without duplicates.
  void CollectPairs(ValueId dict, std::vector<std::pair<ValueId, ValueId>>& pairs) {
    pairs.clear();
    std::span<const ValueId> items = doc_.items(dict);
    size_t count = items.size() / 2;
    if (!python_) {
      for (size_t i = 0; i < count; ++i) pairs.emplace_back(items[2 * i], items[2 * i + 1]);
      return;
    }
    keys_.clear();
    bool use_index = count > 32;
    if (use_index) index_.clear();
    for (size_t i = 0; i < count; ++i) {
      PyKey key = MakePyKey(doc_, items[2 * i]);
      size_t found = pairs.size();
      if (use_index) {
        auto [it, inserted] = index_.try_emplace(key, pairs.size());
        if (!inserted) found = it->second;
      } else {
        for (size_t k = 0; k < keys_.size(); ++k) {
          if (keys_[k] == key) {
            found = k;
            break;
          }
        }
      }
      if (found < pairs.size()) {
        pairs[found].second = items[2 * i + 1];
      } else {
        pairs.emplace_back(items[2 * i], items[2 * i + 1]);
        keys_.push_back(key);
      }
    }
  }

  void AppendKey(ValueId key) {
    std::string text;
    switch (doc_.kind(key)) {
      case ValueKind::kString:
        AppendEscapedString(doc_.string_value(key), python_, out_);
        return;
      case ValueKind::kBool:
        text = doc_.bool_value(key) ? "true" : "false";
        break;
      case ValueKind::kNone:
        text = "null";
        break;
      case ValueKind::kInt:
        AppendInt(doc_.int_value(key), text);
        break;
      case ValueKind::kFloat:
        // json.dumps turns float keys into float.__repr__ with its own names for non-finite ones.
        AppendPythonFloat(doc_.float_value(key), true, text);
        break;
      default:
        text = "<" + std::string(ValueKindName(doc_.kind(key))) + ">";
        break;
    }
    out_.push_back('"');
    out_.append(text);
    out_.push_back('"');
  }

  const Document& doc_;
  bool python_;
  std::string& out_;
  std::vector<bool> on_path_;
  std::vector<Frame> stack_;
  // One pair buffer per nesting depth, reused across dicts.
  std::vector<std::vector<std::pair<ValueId, ValueId>>> pair_pool_;
  std::vector<PyKey> keys_;
  absl::flat_hash_map<PyKey, size_t> index_;
};

}  // namespace

std::string WriteNlohmannJson(const Document& document) {
  std::string out;
  out.reserve(document.value_count() * 12 + 16);
  JsonPrinter(document, false, out).Print(document.root());
  return out;
}

std::string WritePythonJson(const Document& document) {
  std::string out;
  out.reserve(document.value_count() * 14 + 16);
  JsonPrinter(document, true, out).Print(document.root());
  return out;
}

std::string FormatPythonFloat(double value) {
  std::string out;
  AppendPythonFloat(value, false, out);
  return out;
}

std::string FormatNlohmannFloat(double value) {
  std::string out;
  AppendNlohmannFloat(value, out);
  return out;
}

}  // namespace fr
