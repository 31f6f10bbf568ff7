/* Compiled as C89 with -pedantic-errors: include/moefuzz/plugin.h must stay plain C89. */
#include "moefuzz/plugin.h"

const moefuzz_plugin_v1* moefuzz_header_c89_probe(void);
const moefuzz_plugin_v1* moefuzz_header_c89_probe(void) { return (const moefuzz_plugin_v1*)0; }
