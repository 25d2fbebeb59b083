# Tests of the JSON decoder (owned with lib/fr/decode/json_decoder.*).
fr_add_test(json_decoder_test SOURCES json_decoder_test.cc DEPS fr_decode)
