// The twin of probe_undeclared.cpp with a declared name: it compiles
// cleanly, so the other's failure is the name's and not the command's.
#include "faultlane/base/probe.hpp"

bool mark_a_declared_probe(int bytes_left) {
  FAULTLANE_PROBE(ambiguous_write);
  // A variable read only by the condition is no unused variable in release.
  const bool cut = bytes_left > 0;
  FAULTLANE_PROBE_IF(cut, read_payload_cut);
  return bytes_left > 1;
}
