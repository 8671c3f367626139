# CMake package of libspot_timer, installed by `make install` as
# <prefix>/lib/cmake/spot_timer/spot_timerConfig.cmake:
#
#   find_package(spot_timer 2.0 CONFIG REQUIRED)   # the C ABI's version: same major, minor not newer
#   target_link_libraries(app PRIVATE spot_timer::spot_timer)          # shared
#   target_link_libraries(app PRIVATE spot_timer::spot_timer_static)   # static
#
# Relocatable: paths are found from this file's place under the prefix.
get_filename_component(_spot_timer_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

if(NOT TARGET spot_timer::spot_timer)
  add_library(spot_timer::spot_timer SHARED IMPORTED)
  set_target_properties(spot_timer::spot_timer PROPERTIES
    IMPORTED_LOCATION "${_spot_timer_prefix}/lib/libspot_timer.so.@SONAME_MAJOR@"
    IMPORTED_SONAME "libspot_timer.so.@SONAME_MAJOR@"
    INTERFACE_INCLUDE_DIRECTORIES "${_spot_timer_prefix}/include")
endif()

if(NOT TARGET spot_timer::spot_timer_static)
  find_package(Threads REQUIRED)
  add_library(spot_timer::spot_timer_static STATIC IMPORTED)
  set_target_properties(spot_timer::spot_timer_static PROPERTIES
    IMPORTED_LOCATION "${_spot_timer_prefix}/lib/libspot_timer.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_spot_timer_prefix}/include"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS};m")
endif()

unset(_spot_timer_prefix)
