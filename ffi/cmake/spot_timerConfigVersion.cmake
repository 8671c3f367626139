# Version of the installed spot_timer package: the C ABI's version. A request for the same
# major and a minor not newer than this one is compatible (minors only add).
set(PACKAGE_VERSION "@ABI_VERSION@")
if(PACKAGE_FIND_VERSION_MAJOR STREQUAL "@ABI_MAJOR@"
   AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
elseif(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
else()
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
endif()
