# hy_add_test(NAME LABEL label SOURCES a.c ... [ARGS ...] [TIMEOUT s])
# Builds one test executable linked with libhymt and registers it with ctest.
# A test exits 0 on success, 77 to skip (GPU tests without a GPU), anything else on failure.
function(hy_add_test name)
  cmake_parse_arguments(T "" "LABEL;TIMEOUT" "SOURCES;ARGS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE hymt_lib)
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  if(NOT T_LABEL)
    set(T_LABEL unit)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS ${T_LABEL} SKIP_RETURN_CODE 77
    TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "HYMT_SRC=${CMAKE_SOURCE_DIR};HYMT_BIN=${CMAKE_BINARY_DIR}")
endfunction()

# Unit tests live beside their code: src/<layer>/<module>_test.c, label "unit".
file(GLOB_RECURSE HYMT_UNIT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*_test.c)
foreach(src ${HYMT_UNIT_TESTS})
  get_filename_component(stem ${src} NAME_WE)
  if(stem MATCHES "^cuda_")
    # GPU tests: built only with the CUDA backend, labelled cuda; they exit 77 (skip)
    # where no GPU is present, so CI stays green
    if(HYMT_CUDA)
      hy_add_test(${stem} LABEL cuda SOURCES ${src})
    endif()
    continue()
  endif()
  if(stem MATCHES "^queue_" AND NOT HIREDIS_FOUND)
    continue() # src/queue/ is built only with libhiredis-dev
  endif()
  hy_add_test(${stem} LABEL unit SOURCES ${src})
endforeach()

if(EXISTS ${CMAKE_SOURCE_DIR}/tests/tests.cmake)
  include(${CMAKE_SOURCE_DIR}/tests/tests.cmake)
endif()
