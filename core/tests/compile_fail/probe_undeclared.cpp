// Must not compile: no_such_probe is no row of FAULTLANE_PROBES. The ctests
// probe_undeclared_name_fails_to_compile_* (core/tests/CMakeLists.txt) run
// the compiler on this file and expect it to refuse the name.
#include "faultlane/base/probe.hpp"

void mark_an_undeclared_probe() { FAULTLANE_PROBE(no_such_probe); }
