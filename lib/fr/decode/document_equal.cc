#include "fr/decode/document_equal.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace fr {
namespace {

// Recursion depth beyond anything a decoder accepts (256); hand-built documents deeper than this
// are reported rather than risking the C stack.
constexpr int kMaxDepth = 4096;

bool IsNumber(ValueKind kind) {
  return kind == ValueKind::kBool || kind == ValueKind::kInt || kind == ValueKind::kFloat;
}

bool IsSequence(ValueKind kind) { return kind == ValueKind::kList || kind == ValueKind::kTuple; }

void AppendDouble(double value, std::string& out) {
  if (std::isnan(value)) {
    out += "nan";
    return;
  }
  if (std::isinf(value)) {
    out += value < 0 ? "-inf" : "inf";
    return;
  }
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string_view text(buffer, end - buffer);
  out += text;
  if (text.find_first_of(".en") == std::string_view::npos) out += ".0";
}

void AppendPyString(std::string_view s, std::string& out) {
  out += '\'';
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '\'';
}

// A short Python-like rendering of a value for messages.
std::string Repr(const Document& doc, ValueId id) {
  std::string out;
  switch (doc.kind(id)) {
    case ValueKind::kNone:
      return "None";
    case ValueKind::kBool:
      return doc.bool_value(id) ? "True" : "False";
    case ValueKind::kInt:
      return std::to_string(doc.int_value(id));
    case ValueKind::kFloat:
      AppendDouble(doc.float_value(id), out);
      return out;
    case ValueKind::kString: {
      std::string_view s = doc.string_value(id);
      if (s.size() > 80) {
        AppendPyString(s.substr(0, 77), out);
        out += "...";
      } else {
        AppendPyString(s, out);
      }
      return out;
    }
    default:
      return std::string(ValueKindName(doc.kind(id))) + " of " + std::to_string(doc.size(id));
  }
}

// Python's numeric equality: True == 1 == 1.0, exact between ints and floats. Unlike Python, NaN
// equals a NaN with the same bits, so that round trips of NaN-holding documents compare equal.
bool NumbersEqual(const Document& a, ValueId x, const Document& b, ValueId y) {
  auto as_int = [](const Document& d, ValueId id) {
    return d.kind(id) == ValueKind::kBool ? int64_t{d.bool_value(id)} : d.int_value(id);
  };
  bool xf = a.kind(x) == ValueKind::kFloat;
  bool yf = b.kind(y) == ValueKind::kFloat;
  if (!xf && !yf) return as_int(a, x) == as_int(b, y);
  if (xf && yf) {
    double p = a.float_value(x), q = b.float_value(y);
    if (std::isnan(p) || std::isnan(q)) return std::memcmp(&p, &q, sizeof(p)) == 0;
    return p == q;
  }
  double f = xf ? a.float_value(x) : b.float_value(y);
  int64_t i = xf ? as_int(b, y) : as_int(a, x);
  if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0) || f != std::trunc(f)) {
    return false;
  }
  return static_cast<int64_t>(f) == i;
}

class Differ {
 public:
  Differ(const Document& a, const Document& b) : a_(a), b_(b) {}

  std::string Run(ValueId x, ValueId y) {
    if (x == kNoValue || y == kNoValue) {
      if (x == y) return {};
      return x == kNoValue ? "root: <empty document> != <document>"
                           : "root: <document> != <empty document>";
    }
    path_ = "root";
    Compare(x, y, 0);
    return message_;
  }

 private:
  bool Fail(ValueId x, ValueId y, std::string_view what = {}) {
    message_ = path_ + ": ";
    if (!what.empty()) {
      message_ += what;
    } else {
      message_ += Repr(a_, x) + " != " + Repr(b_, y);
    }
    return false;
  }

  // Effective (key, value) pairs of a Python dict: the first key object, the last value.
  std::vector<std::pair<ValueId, ValueId>> Pairs(const Document& d, ValueId dict) {
    std::vector<std::pair<ValueId, ValueId>> pairs;
    std::span<const ValueId> items = d.items(dict);
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      bool replaced = false;
      for (auto& pair : pairs) {
        if (KeysEqual(d, pair.first, d, items[i])) {
          pair.second = items[i + 1];
          replaced = true;
          break;
        }
      }
      if (!replaced) pairs.emplace_back(items[i], items[i + 1]);
    }
    return pairs;
  }

  // Keys are scalars in every real dump; containers as keys only match themselves.
  static bool KeysEqual(const Document& a, ValueId x, const Document& b, ValueId y) {
    ValueKind p = a.kind(x), q = b.kind(y);
    if (IsNumber(p) && IsNumber(q)) return NumbersEqual(a, x, b, y);
    if (p != q) return false;
    if (p == ValueKind::kString) return a.string_value(x) == b.string_value(y);
    if (p == ValueKind::kNone) return true;
    return &a == &b && x == y;
  }

  bool Compare(ValueId x, ValueId y, int depth) {
    ValueKind p = a_.kind(x), q = b_.kind(y);
    if (IsNumber(p) && IsNumber(q)) return NumbersEqual(a_, x, b_, y) || Fail(x, y);
    if (p != q) {
      return Fail(x, y,
                  std::string(ValueKindName(p)) + " " + Repr(a_, x) +
                      " != " + std::string(ValueKindName(q)) + " " + Repr(b_, y));
    }
    switch (p) {
      case ValueKind::kNone:
        return true;
      case ValueKind::kString:
        return a_.string_value(x) == b_.string_value(y) || Fail(x, y);
      default:
        break;
    }
    // Shared nodes and cycles: a pair already compared equal, or being compared further up, needs
    // no second visit (a cycle is equal as far as it can be observed).
    uint64_t pair = (uint64_t{x} << 32) | y;
    if (!visited_.insert(pair).second) return true;
    if (depth > kMaxDepth) return Fail(x, y, "nested too deeply to compare");
    size_t path_length = path_.size();
    bool equal = IsSequence(p) ? CompareSequences(x, y, depth) : CompareDicts(x, y, depth);
    if (equal) path_.resize(path_length);
    return equal;
  }

  bool CompareSequences(ValueId x, ValueId y, int depth) {
    std::span<const ValueId> xs = a_.items(x), ys = b_.items(y);
    size_t common = std::min(xs.size(), ys.size());
    size_t path_length = path_.size();
    for (size_t i = 0; i < common; ++i) {
      path_.resize(path_length);
      path_ += "[" + std::to_string(i) + "]";
      if (!Compare(xs[i], ys[i], depth + 1)) return false;
    }
    path_.resize(path_length);
    if (xs.size() != ys.size()) {
      return Fail(x, y, "length " + std::to_string(xs.size()) + " != " + std::to_string(ys.size()));
    }
    return true;
  }

  bool CompareDicts(ValueId x, ValueId y, int depth) {
    auto xs = Pairs(a_, x);
    auto ys = Pairs(b_, y);
    size_t path_length = path_.size();
    std::vector<bool> matched(ys.size(), false);
    for (size_t i = 0; i < xs.size(); ++i) {
      const auto& [key, value] = xs[i];
      size_t found = ys.size();
      // Dicts usually hold their keys in the same order: try the same position first.
      if (i < ys.size() && !matched[i] && KeysEqual(a_, key, b_, ys[i].first)) found = i;
      for (size_t k = 0; found == ys.size() && k < ys.size(); ++k) {
        if (!matched[k] && KeysEqual(a_, key, b_, ys[k].first)) {
          found = k;
          break;
        }
      }
      if (found == ys.size()) return Fail(x, y, "key " + Repr(a_, key) + " missing on the right");
      matched[found] = true;
      path_.resize(path_length);
      path_ += "[" + Repr(a_, key) + "]";
      if (!Compare(value, ys[found].second, depth + 1)) return false;
    }
    path_.resize(path_length);
    for (size_t k = 0; k < ys.size(); ++k) {
      if (!matched[k]) return Fail(x, y, "key " + Repr(b_, ys[k].first) + " missing on the left");
    }
    return true;
  }

  const Document& a_;
  const Document& b_;
  std::string path_;
  std::string message_;
  std::unordered_set<uint64_t> visited_;
};

}  // namespace

std::string DescribeDifference(const Document& a, ValueId a_root, const Document& b,
                               ValueId b_root) {
  return Differ(a, b).Run(a_root, b_root);
}

}  // namespace fr
