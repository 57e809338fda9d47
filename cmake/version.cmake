# version.cmake -DSRC=dir -DOUT=file: writes OUT with HYMT_GIT_COMMIT, the source tree's
# commit (12 hex digits, "-dirty" with uncommitted changes; "unknown" outside a git
# checkout). Run at every build; OUT is rewritten only when it changes, so nothing
# recompiles when the commit is the same.
find_package(Git QUIET)
set(commit "unknown")
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SRC} describe --always --dirty --abbrev=12
                  --exclude=*
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc EQUAL 0 AND out MATCHES "^[0-9a-f]+(-dirty)?$")
    set(commit "${out}")
  endif()
endif()
set(text "#define HYMT_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
