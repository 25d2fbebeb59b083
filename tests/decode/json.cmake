# Tests of the JSON decoder (owned with lib/fr/decode/json_decoder.*).
fr_add_test(json_decoder_test SOURCES json_decoder_test.cc DEPS fr_decode)

# The fuzz target as an ordinary test over its seed corpus (tests/data/fuzz/json).
fr_add_test(json_fuzz_replay_test SOURCES ${PROJECT_SOURCE_DIR}/lib/fr/decode/json_fuzzer.cc
  DEPS fr_decode fr_read)
target_compile_definitions(json_fuzz_replay_test PRIVATE FR_FUZZ_REPLAY
  FR_JSON_FUZZ_CORPUS_DIR="${PROJECT_SOURCE_DIR}/tests/data/fuzz/json")
