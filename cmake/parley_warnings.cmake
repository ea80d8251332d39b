# One warning set for every Parley target.
add_library(parley_warnings INTERFACE)
target_compile_options(parley_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                           -Wcast-align -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough>
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic>)
