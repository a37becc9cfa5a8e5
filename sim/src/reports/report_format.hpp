// report_format: text pieces the reports share (report.cpp, report_export.cpp,
// timeline*.cpp): one line per violation, XML/HTML escaping and shortening
// names to a column.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "faultlane/sim/checkers.hpp"

namespace faultlane::sim::report_format {

// "op 2 (task 5, request 0x1a, server#0, seq 40): evidence"; the parts that
// are zero or empty are left out.
std::string violation_line(const violation& v);

// Appends `text` with &, <, >, " and ' as entities, control characters
// other than tab and newline removed and bytes that are not UTF-8 replaced
// by U+FFFD. In an attribute, tab and newline are written as character
// references so they survive attribute normalisation.
void append_escaped(std::string& out, std::string_view text, bool attribute = false);
std::string escaped(std::string_view text, bool attribute = false);

// Characters (UTF-8 code points) in `text`: its width in a terminal, near enough.
std::size_t columns(std::string_view text);

// `text` if it has at most `width` characters, else its start and end around
// "..." in exactly `width` characters.
std::string shortened(std::string_view text, std::size_t width);

}  // namespace faultlane::sim::report_format
