// Small scanning helpers shared by the log stage's tokenizer and recognizers: they read numbers
// and words out of a std::string_view without allocating and without a regex engine, because a
// log is mostly lines that match nothing and each line must cost a few comparisons.
//
//   std::string_view rest = "SeqNum=12, OpType=ALLREDUCE";
//   int64_t seq = IntAfter(rest, "SeqNum=");  // 12, or -1 when absent
#ifndef FR_LOGS_TEXT_SCAN_H_
#define FR_LOGS_TEXT_SCAN_H_

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace fr::logs_internal {

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsSpace(char c) { return c == ' ' || c == '\t'; }
inline bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
inline bool IsIdentChar(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}
inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
inline bool Contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

inline std::string_view TrimLeft(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && IsSpace(s[i])) ++i;
  return s.substr(i);
}
inline std::string_view Trim(std::string_view s) {
  s = TrimLeft(s);
  while (!s.empty() && (IsSpace(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Reads an optionally signed decimal integer at the start of `*s` and advances past it. At most
// 18 digits are read so that the value cannot overflow; longer runs fail.
inline bool ConsumeInt(std::string_view* s, int64_t* value) {
  size_t i = 0;
  bool negative = false;
  if (i < s->size() && ((*s)[i] == '-' || (*s)[i] == '+')) {
    negative = (*s)[i] == '-';
    ++i;
  }
  size_t first_digit = i;
  int64_t v = 0;
  while (i < s->size() && IsDigit((*s)[i])) {
    if (i - first_digit >= 18) return false;
    v = v * 10 + ((*s)[i] - '0');
    ++i;
  }
  if (i == first_digit) return false;
  *value = negative ? -v : v;
  s->remove_prefix(i);
  return true;
}

// Exactly `count` digits at the start of `*s`.
inline bool ConsumeDigits(std::string_view* s, size_t count, int* value) {
  if (s->size() < count) return false;
  int v = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!IsDigit((*s)[i])) return false;
    v = v * 10 + ((*s)[i] - '0');
  }
  *value = v;
  s->remove_prefix(count);
  return true;
}

inline bool ConsumeLiteral(std::string_view* s, std::string_view literal) {
  if (!StartsWith(*s, literal)) return false;
  s->remove_prefix(literal.size());
  return true;
}

inline void SkipSpaces(std::string_view* s) { *s = TrimLeft(*s); }

// The integer right after the first `key` in `s` (spaces after the key skipped), or `fallback`.
inline int64_t IntAfter(std::string_view s, std::string_view key, int64_t fallback = -1) {
  size_t at = s.find(key);
  if (at == std::string_view::npos) return fallback;
  std::string_view rest = TrimLeft(s.substr(at + key.size()));
  int64_t value;
  return ConsumeInt(&rest, &value) ? value : fallback;
}

// The run of characters after `key` up to (not including) the first of `stops`, or empty.
inline std::string_view WordAfter(std::string_view s, std::string_view key,
                                  std::string_view stops = " ,)]") {
  size_t at = s.find(key);
  if (at == std::string_view::npos) return {};
  std::string_view rest = s.substr(at + key.size());
  size_t end = rest.find_first_of(stops);
  return rest.substr(0, end);
}

// Whether the text at `at` in `body` is quoted: inside double quotes, backticks or typographic
// double quotes opened before it. A producer writes its message bare (NCCL's single quotes around
// CUDA's words are its own wording, and apostrophes are English, so single quotes do not count);
// a line that quotes a message is about it (a tip, advice, a report of an earlier run). A
// structured log line ("{...}" JSON) quotes every value and is not judged by this.
inline bool Quoted(std::string_view body, size_t at) {
  std::string_view before = TrimLeft(body.substr(0, std::min(at, body.size())));
  if (StartsWith(before, "{")) return false;
  int straight = 0, backticks = 0, opened = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    char c = before[i];
    if (c == '"') ++straight;
    if (c == '`') ++backticks;
    // U+201C and U+201D: E2 80 9C / E2 80 9D.
    if (c == '\xe2' && i + 2 < before.size() && before[i + 1] == '\x80') {
      if (before[i + 2] == '\x9c') ++opened;
      if (before[i + 2] == '\x9d' && opened > 0) --opened;
    }
  }
  return straight % 2 == 1 || backticks % 2 == 1 || opened > 0;
}

// Whether some occurrence of one of `phrases` in `body` is bare (not Quoted).
inline bool AnyBare(std::string_view body, std::initializer_list<std::string_view> phrases) {
  for (std::string_view phrase : phrases) {
    for (size_t at = body.find(phrase); at != std::string_view::npos;
         at = body.find(phrase, at + 1)) {
      if (!Quoted(body, at)) return true;
    }
  }
  return false;
}

}  // namespace fr::logs_internal

#endif  // FR_LOGS_TEXT_SCAN_H_
