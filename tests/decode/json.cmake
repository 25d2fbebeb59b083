# Tests of the JSON decoder (owned with lib/fr/decode/json_decoder.*).
fr_add_test(json_decoder_test SOURCES json_decoder_test.cc DEPS fr_decode)

# The fuzz target as an ordinary test over its seed corpus (tests/data/fuzz/json).
fr_add_fuzz_replay_test(json_fuzz_replay_test
  TARGET ${PROJECT_SOURCE_DIR}/fuzz/json_fuzzer.cc CORPUS json MIN_FILES 10 SUITE JsonFuzzReplayTest
  DEPS fr_decode fr_read)
