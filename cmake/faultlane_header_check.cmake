# faultlane_header_check(LIBRARY NAME): every public header of LIBRARY,
# include/faultlane/NAME/*.hpp beside the calling CMakeLists.txt, must
# compile on its own: one generated TU per header, in an object library
# LIBRARY_header_check. Off with FAULTLANE_HEADER_CHECKS (the tsan and dsim
# presets: a header compiles alike under every sanitizer).
function(faultlane_header_check library name)
  if(NOT FAULTLANE_HEADER_CHECKS)
    return()
  endif()
  file(GLOB headers CONFIGURE_DEPENDS
    "${CMAKE_CURRENT_SOURCE_DIR}/include/faultlane/${name}/*.hpp")
  set(tus "")
  foreach(h IN LISTS headers)
    get_filename_component(stem "${h}" NAME_WE)
    set(tu "${CMAKE_CURRENT_BINARY_DIR}/header_check/${stem}.cpp")
    file(CONFIGURE OUTPUT "${tu}" CONTENT "#include \"faultlane/${name}/${stem}.hpp\"\n")
    list(APPEND tus "${tu}")
  endforeach()
  add_library(${library}_header_check OBJECT ${tus})
  target_link_libraries(${library}_header_check PRIVATE ${library} faultlane_warnings)
endfunction()
