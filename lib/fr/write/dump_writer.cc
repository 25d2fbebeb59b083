#include "fr/write/dump_writer.h"

namespace fr {

std::string WriteDumpPickle(const DumpSpec& spec) { return {}; }
std::string WriteDumpJson(const DumpSpec& spec) { return {}; }
std::string WriteLogicalJson(const Document& document) { return {}; }

}  // namespace fr
