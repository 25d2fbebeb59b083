#include "fr/write/dump_writer.h"

#include <vector>

#include "fr/write/dump_document.h"
#include "fr/write/json_writer.h"
#include "fr/write/pickle_writer.h"

namespace fr {

std::string WriteDumpPickle(const DumpSpec& spec) {
  std::vector<ValueId> held;
  Document document = BuildDumpDocument(spec, DumpFlavor::kPickle, &held);
  return PickleDocument(document, held);
}

std::string WriteDumpJson(const DumpSpec& spec) {
  return WriteNlohmannJson(BuildDumpDocument(spec, DumpFlavor::kJson));
}

std::string WriteLogicalJson(const Document& document) { return WritePythonJson(document); }

}  // namespace fr
