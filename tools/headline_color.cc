#include "headline_color.h"

#include <cstdlib>

namespace fr::cli {
namespace {

constexpr std::string_view kBoldRed = "\x1b[1;31m";
constexpr std::string_view kBoldGreen = "\x1b[1;32m";
constexpr std::string_view kReset = "\x1b[0m";

}  // namespace

bool ShouldColor(std::string_view when, bool to_terminal) {
  if (when == "always") return true;
  if (when == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  return to_terminal && (no_color == nullptr || *no_color == '\0');
}

std::string ColorHeadline(std::string_view text, bool failure) {
  std::string out;
  out.reserve(text.size() + 32);
  bool verdict_seen = false;
  bool first_line = true;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    std::string_view rest =
        end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    std::string_view color;
    if (first_line && line.starts_with("root cause: ")) {
      color = kBoldRed;
    } else if (!verdict_seen && line.starts_with("fr-analyze: ")) {
      // Unindented: the report's own lines below it (summary, evidence) are all indented.
      verdict_seen = true;
      color = failure ? kBoldRed : kBoldGreen;
    }
    if (color.empty()) {
      out += line;
    } else {
      out += color;
      out += line;
      out += kReset;
    }
    if (end != std::string_view::npos) out += '\n';
    text = rest;
    first_line = false;
  }
  return out;
}

}  // namespace fr::cli
