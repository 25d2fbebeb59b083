#include "cli_flags.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "fmt/format.h"

namespace fr::cli {
namespace {

// Where flag help starts in the tables, as in the hand-written usage this replaced.
constexpr size_t kHelpColumn = 39;

absl::string_view ToAbsl(std::string_view text) { return {text.data(), text.size()}; }

// A whole decimal integer: an optional '-' and digits, nothing else. SimpleAtoi alone would also
// take "+5" and surrounding spaces, which a flag value should not have.
bool LooksLikeInteger(std::string_view text) {
  if (!text.empty() && text.front() == '-') text.remove_prefix(1);
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

// Parses `text` as an integer in the flag's range; returns what is wrong, or "".
// Out-of-range numbers fail rather than saturate: "-j 99999999999999999999" is a mistake, not a
// request for the maximum.
std::string ParseInteger(const Flag& flag, std::string_view text, int64_t* value) {
  int64_t parsed = 0;
  if (!LooksLikeInteger(text)) {
    return fmt::format("{} needs a number from {} to {}, not '{}'", flag.Name(), flag.min, flag.max,
                       text);
  }
  if (!absl::SimpleAtoi(ToAbsl(text), &parsed) || parsed < flag.min || parsed > flag.max) {
    return fmt::format("{} {} is out of range: it needs a number from {} to {}", flag.Name(), text,
                       flag.min, flag.max);
  }
  *value = parsed;
  return "";
}

// Stores `value` in the flag's target; returns what is wrong, or "".
std::string Apply(const Command& command, const Flag& flag, std::string_view value) {
  switch (flag.kind) {
    case FlagKind::kSwitch:
      *std::get<bool*>(flag.target) = true;
      return "";
    case FlagKind::kString:
      *std::get<std::string*>(flag.target) = std::string(value);
      return "";
    case FlagKind::kChoice:
      if (std::find(flag.choices.begin(), flag.choices.end(), value) == flag.choices.end()) {
        return fmt::format("unknown {} {} ({} {} takes {})", flag.noun, value, command.name,
                           flag.Name(), fmt::join(flag.choices, ", "));
      }
      *std::get<std::string*>(flag.target) = std::string(value);
      return "";
    case FlagKind::kInt:
      return ParseInteger(flag, value, std::get<int64_t*>(flag.target));
    case FlagKind::kIntList:
      for (absl::string_view item : absl::StrSplit(ToAbsl(value), ',', absl::SkipEmpty())) {
        int64_t number = 0;
        std::string error = ParseInteger(flag, std::string_view(item.data(), item.size()), &number);
        if (!error.empty()) return error;
        std::get<std::vector<int64_t>*>(flag.target)->push_back(number);
      }
      return "";
    case FlagKind::kStringList:
      for (absl::string_view item : absl::StrSplit(ToAbsl(value), ',', absl::SkipEmpty())) {
        std::get<std::vector<std::string>*>(flag.target)->emplace_back(item);
      }
      return "";
  }
  return "";
}

// A word in flag position, split at its first '=' ("--format=json").
struct FlagWord {
  std::string_view name;
  std::string_view value;
  bool has_value = false;
};

FlagWord SplitFlagWord(std::string_view word) {
  size_t equals = word.find('=');
  if (equals == std::string_view::npos) return {word, "", false};
  return {word.substr(0, equals), word.substr(equals + 1), true};
}

bool IsFlagWord(std::string_view word) { return word.size() > 1 && word.front() == '-'; }

// The flag of `command` that `word` names, or nullptr. A short name shared by a switch and a
// number flag means the number flag when a number is attached or follows ("-j 4", "-j=4"), else
// the switch ("-j" alone, "-j DIR").
const Flag* Resolve(const Command& command, const FlagWord& word, const std::string* next) {
  const Flag* with_value = nullptr;
  const Flag* without_value = nullptr;
  for (const Flag& flag : command.flags) {
    if (std::find(flag.names.begin(), flag.names.end(), word.name) == flag.names.end()) continue;
    (flag.TakesValue() ? with_value : without_value) = &flag;
  }
  if (with_value == nullptr || without_value == nullptr) {
    return with_value != nullptr ? with_value : without_value;
  }
  bool number_follows =
      word.has_value ? LooksLikeInteger(word.value) : next != nullptr && LooksLikeInteger(*next);
  return number_follows ? with_value : without_value;
}

std::string FlagNames(const Command& command) {
  std::vector<std::string_view> names;
  for (const Flag& flag : command.flags) names.push_back(flag.Name());
  return fmt::format("{}", fmt::join(names, ", "));
}

// An option `command` does not have: say so, and whose it is when another command has it.
std::string UnknownOption(const Command& command, std::span<const Command* const> all,
                          std::string_view name) {
  std::vector<std::string_view> owners;
  for (const Command* other : all) {
    if (other == &command) continue;
    for (const Flag& flag : other->flags) {
      if (std::find(flag.names.begin(), flag.names.end(), name) != flag.names.end()) {
        owners.push_back(other->name);
        break;
      }
    }
  }
  if (!owners.empty()) {
    // "analyze", "live and example", "analyze, timeline and report".
    std::string whose(owners.back());
    if (owners.size() > 1) {
      whose = fmt::format("{} and {}", fmt::join(owners.begin(), owners.end() - 1, ", "), whose);
    }
    return fmt::format("{} is an option of {}, not of {} (options of {}: {})", name, whose,
                       command.name, command.name, FlagNames(command));
  }
  return fmt::format("unknown option {} (options of {}: {})", name, command.name,
                     FlagNames(command));
}

std::string FlagLabel(const Flag& flag) {
  std::string label = fmt::format("{}", fmt::join(flag.names, ", "));
  if (!flag.value_name.empty()) {
    label += fmt::format(" {}", flag.value_name);
  } else if (flag.kind == FlagKind::kChoice) {
    label += fmt::format(" {}", fmt::join(flag.choices, "|"));
  }
  return label;
}

// "  label   help", the help's later lines under its first, the label alone on its line when it
// reaches the help column.
void AppendTableRow(std::string_view label, std::string_view help, std::string* out) {
  std::string row = fmt::format("  {}", label);
  if (row.size() + 1 > kHelpColumn) {
    *out += row + "\n";
    row.clear();
  }
  row.resize(kHelpColumn, ' ');
  bool first = true;
  for (absl::string_view line : absl::StrSplit(ToAbsl(help), '\n')) {
    if (!first) row.assign(kHelpColumn, ' ');
    first = false;
    *out += row;
    out->append(line.data(), line.size());
    *out += "\n";
  }
}

}  // namespace

std::string_view Flag::Name() const {
  for (std::string_view name : names) {
    if (name.starts_with("--")) return name;
  }
  return names.front();
}

Flag Switch(std::vector<std::string_view> names, std::string_view help, bool* target) {
  Flag flag;
  flag.names = std::move(names);
  flag.kind = FlagKind::kSwitch;
  flag.help = help;
  flag.target = target;
  return flag;
}

Flag String(std::vector<std::string_view> names, std::string_view value_name, std::string_view help,
            std::string* target) {
  Flag flag;
  flag.names = std::move(names);
  flag.kind = FlagKind::kString;
  flag.value_name = value_name;
  flag.help = help;
  flag.target = target;
  return flag;
}

Flag Choice(std::vector<std::string_view> names, std::string_view noun,
            std::vector<std::string_view> choices, std::string_view help, std::string* target) {
  Flag flag;
  flag.names = std::move(names);
  flag.kind = FlagKind::kChoice;
  flag.noun = noun;
  flag.choices = std::move(choices);
  flag.help = help;
  flag.target = target;
  return flag;
}

Flag Int(std::vector<std::string_view> names, std::string_view value_name, int64_t min, int64_t max,
         std::string_view help, int64_t* target) {
  Flag flag;
  flag.names = std::move(names);
  flag.kind = FlagKind::kInt;
  flag.value_name = value_name;
  flag.min = min;
  flag.max = max;
  flag.help = help;
  flag.target = target;
  return flag;
}

Flag IntList(std::vector<std::string_view> names, std::string_view value_name, int64_t min,
             int64_t max, std::string_view help, std::vector<int64_t>* target) {
  Flag flag = Int(std::move(names), value_name, min, max, help, nullptr);
  flag.kind = FlagKind::kIntList;
  flag.target = target;
  return flag;
}

Flag StringList(std::vector<std::string_view> names, std::string_view value_name,
                std::string_view help, std::vector<std::string>* target) {
  Flag flag = String(std::move(names), value_name, help, nullptr);
  flag.kind = FlagKind::kStringList;
  flag.target = target;
  return flag;
}

ParseResult ParseFlags(const Command& command, std::span<const Command* const> all,
                       std::span<const std::string> args) {
  ParseResult result;
  bool have_positional = false;
  bool only_positionals = false;  // after "--"
  auto fail = [&result](std::string error) {
    result.outcome = ParseOutcome::kError;
    result.error = std::move(error);
    return result;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (!only_positionals && IsFlagWord(word)) {
      if (word == "--") {
        only_positionals = true;
        continue;
      }
      if (word == "-h" || word == "--help") {
        result.outcome = ParseOutcome::kHelp;
        return result;
      }
      FlagWord flag_word = SplitFlagWord(word);
      const std::string* next = i + 1 < args.size() ? &args[i + 1] : nullptr;
      const Flag* flag = Resolve(command, flag_word, next);
      if (flag == nullptr) return fail(UnknownOption(command, all, flag_word.name));
      std::string_view value = flag_word.value;
      if (!flag->TakesValue()) {
        if (flag_word.has_value) return fail(fmt::format("{} takes no value", flag_word.name));
      } else if (!flag_word.has_value) {
        if (next == nullptr) return fail(fmt::format("{} needs a value", flag_word.name));
        value = *next;
        ++i;
      }
      if (std::string error = Apply(command, *flag, value); !error.empty()) {
        return fail(std::move(error));
      }
      // fr_trace writes rank lists as separate words ("--selected-ranks 3 17"): plain numbers
      // after a number list continue it.
      while (flag->kind == FlagKind::kIntList && i + 1 < args.size() &&
             LooksLikeInteger(args[i + 1]) && args[i + 1].front() != '-') {
        if (std::string error = Apply(command, *flag, args[++i]); !error.empty()) {
          return fail(std::move(error));
        }
      }
      continue;
    }
    if (have_positional) return fail(fmt::format("unexpected argument {}", word));
    have_positional = true;
    result.positional = word;
  }
  return result;
}

bool HasSwitch(const Command& command, std::string_view name, std::span<const std::string> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") return false;
    if (!IsFlagWord(args[i])) continue;
    FlagWord word = SplitFlagWord(args[i]);
    const std::string* next = i + 1 < args.size() ? &args[i + 1] : nullptr;
    const Flag* flag = Resolve(command, word, next);
    if (flag == nullptr) continue;  // ParseFlags will say what is wrong with it
    if (!flag->TakesValue()) {
      if (std::find(flag->names.begin(), flag->names.end(), name) != flag->names.end()) {
        return true;
      }
    } else if (!word.has_value) {
      ++i;  // its value, whatever it looks like
    }
  }
  return false;
}

std::string FormatCommandHelp(const Command& command) {
  std::string out =
      fmt::format("usage: fr-analyze {} {} [options]\n", command.name, command.positional);
  for (std::string_view usage : command.other_usages) out += fmt::format("       {}\n", usage);
  if (!command.details.empty()) out += fmt::format("\n{}\n", command.details);
  out += "\noptions:\n";
  for (const Flag& flag : command.flags) AppendTableRow(FlagLabel(flag), flag.help, &out);
  AppendTableRow("-h, --help", "this help", &out);
  return out;
}

std::string FormatHelpRow(std::string_view label, std::string_view help) {
  std::string out;
  AppendTableRow(label, help, &out);
  return out;
}

std::string FormatCommandList(std::span<const Command* const> all) {
  std::string out;
  for (const Command* command : all) {
    AppendTableRow(fmt::format("{} {}", command->name, command->positional), command->summary,
                   &out);
  }
  return out;
}

}  // namespace fr::cli
