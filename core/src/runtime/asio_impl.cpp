// The one translation unit that compiles Asio's implementation
// (ASIO_SEPARATE_COMPILATION). Every other file includes Asio's headers only.
#include <asio/impl/src.hpp>
