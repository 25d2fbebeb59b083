fr_add_test(pickle_decoder_test SOURCES pickle_decoder_test.cc DEPS fr_decode)

# Replays the fuzzer's seed corpus (and every crash it found) through the fuzz target itself.
fr_add_fuzz_replay_test(pickle_fuzz_replay_test
  TARGET ${PROJECT_SOURCE_DIR}/fuzz/pickle_fuzzer.cc CORPUS pickle MIN_FILES 10 SUITE PickleFuzzReplayTest
  DEPS fr_decode fr_normalize)
