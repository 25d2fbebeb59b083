// Command-line flags as data: each subcommand is a table of flags, parsed by one loop and turned
// into its help text, so that what a command accepts and what its help says cannot drift apart.
//
//   int64_t jobs = 0;
//   std::string format = "text";
//   bool follow = false;
//   Command load{"load", "DIR", "what was loaded", "", {
//       Choice({"--format"}, "format", {"text", "json"}, "output format", &format),
//       Int({"-j", "--jobs"}, "N", 0, 1024, "threads", &jobs),
//       Switch({"--follow-links"}, "follow symlinks out of DIR", &follow)}};
//   ParseResult parsed = ParseFlags(load, all_commands, args);
//   if (parsed.outcome == ParseOutcome::kHelp) print FormatCommandHelp(load);
//   if (parsed.outcome == ParseOutcome::kError) print parsed.error (a usage error).
//
// Syntax: "--name value", "--name=value", and switches without a value; "-h"/"--help" anywhere.
// Every value is checked when parsed: numbers are whole decimal integers within the flag's range
// (never saturated), choices one of the listed words, lists comma-separated.
#ifndef FR_TOOLS_CLI_FLAGS_H_
#define FR_TOOLS_CLI_FLAGS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace fr::cli {

enum class FlagKind {
  kSwitch,      // no value: sets a bool
  kString,      // any text
  kChoice,      // one of `choices`
  kInt,         // a decimal integer in [min, max]
  kIntList,     // integers in [min, max], comma-separated; plain numbers after it continue it
  kStringList,  // text, comma-separated, empty items dropped
};

struct Flag {
  // Every spelling, in the order help shows them ("-o", "--output"). Messages name the flag by its
  // first long ("--") spelling. Two flags may share a short name when one is a switch and the
  // other a number: the number flag is meant when a number follows ("-j 4"), else the switch.
  std::vector<std::string_view> names;
  FlagKind kind = FlagKind::kSwitch;
  std::string_view value_name;  // "N", "FILE"; empty for switches
  std::string_view help;        // lines after the first are indented under the first
  int64_t min = 0;              // kInt, kIntList
  int64_t max = 0;
  std::vector<std::string_view> choices;  // kChoice
  std::string_view noun;                  // kChoice: "unknown <noun> X"
  std::variant<bool*, std::string*, int64_t*, std::vector<int64_t>*, std::vector<std::string>*>
      target;

  // The spelling messages use: the first long name, else the first name.
  std::string_view Name() const;
  bool TakesValue() const { return kind != FlagKind::kSwitch; }
};

Flag Switch(std::vector<std::string_view> names, std::string_view help, bool* target);
Flag String(std::vector<std::string_view> names, std::string_view value_name, std::string_view help,
            std::string* target);
Flag Choice(std::vector<std::string_view> names, std::string_view noun,
            std::vector<std::string_view> choices, std::string_view help, std::string* target);
Flag Int(std::vector<std::string_view> names, std::string_view value_name, int64_t min, int64_t max,
         std::string_view help, int64_t* target);
Flag IntList(std::vector<std::string_view> names, std::string_view value_name, int64_t min,
             int64_t max, std::string_view help, std::vector<int64_t>* target);
Flag StringList(std::vector<std::string_view> names, std::string_view value_name,
                std::string_view help, std::vector<std::string>* target);

struct Command {
  std::string_view name = {};        // "analyze"
  std::string_view positional = {};  // what the one positional argument is: "DIR", "FILE"
  std::string_view summary = {};     // one line, for the overview
  std::string_view details = {};     // paragraphs for the command's own help; may be empty
  std::vector<Flag> flags = {};
  // Extra usage lines for the help ("fr-analyze DIR [options]"), after the canonical one.
  std::vector<std::string_view> other_usages = {};
};

enum class ParseOutcome { kOk, kHelp, kError };

struct ParseResult {
  ParseOutcome outcome = ParseOutcome::kOk;
  std::string error;       // kError: what is wrong, naming the flag and, where useful, the
                           // command's flags
  std::string positional;  // the one positional argument; "" when none was given
};

// Parses `args` (the words after the subcommand) against `command`'s flags, storing values in
// their targets as it goes. `all` (which may include `command`) lets an error say which other
// command a stray flag belongs to.
ParseResult ParseFlags(const Command& command, std::span<const Command* const> all,
                       std::span<const std::string> args);

// Whether `args` holds the switch `name` (any of its spellings) of `command`, walking the words as
// ParseFlags would (a value flag's value is not mistaken for a flag). Nothing is stored. Lets a
// switch choose which command parses the words, as `analyze -j` chooses `entries`.
bool HasSwitch(const Command& command, std::string_view name, std::span<const std::string> args);

// "usage: fr-analyze NAME POSITIONAL [options]", the details and a table of the flags.
std::string FormatCommandHelp(const Command& command);

// One line per command, its usage and summary, for the overview (`fr-analyze --help`).
std::string FormatCommandList(std::span<const Command* const> all);

// One row of a help table: `label` indented, `help` in the column the flag tables use.
std::string FormatHelpRow(std::string_view label, std::string_view help);

}  // namespace fr::cli

#endif  // FR_TOOLS_CLI_FLAGS_H_
