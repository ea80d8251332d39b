// Whitespace as Python's str.strip() sees it: the published Jinja chat templates strip
// messages with it (Llama 2's), so the same text renders to the same ids here.
#pragma once

#include <string_view>

namespace parley::text {

// `text` without the whitespace it starts with (`leading`) and ends with (`trailing`), as
// str.isspace() counts it: ASCII's and U+001C..U+001F, U+0085, U+00A0, U+1680, U+2000..U+200A,
// U+2028, U+2029, U+202F, U+205F, U+3000. Bytes that are not valid UTF-8 are not whitespace.
std::string_view strip_python_space(std::string_view text, bool leading, bool trailing);

}  // namespace parley::text
