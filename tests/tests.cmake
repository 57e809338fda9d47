# Tests outside src/: parity with transformers (label "model") and the CLI (label "unit").

hy_add_test(parity_test LABEL model SOURCES ${CMAKE_SOURCE_DIR}/tests/parity/parity_test.c)
set_tests_properties(parity_test PROPERTIES DISABLED TRUE) # the binary; one test per model below

file(GLOB HYMT_PARITY_MODELS LIST_DIRECTORIES true ${CMAKE_SOURCE_DIR}/tests/data/tiny-*)
foreach(dir ${HYMT_PARITY_MODELS})
  if(EXISTS ${dir}/golden.json)
    get_filename_component(name ${dir} NAME)
    foreach(mode ref cpu cli)
      add_test(NAME parity_${name}_${mode} COMMAND parity_test ${dir} ${mode})
      set_tests_properties(parity_${name}_${mode} PROPERTIES LABELS model TIMEOUT 300
        ENVIRONMENT "HYMT_SRC=${CMAKE_SOURCE_DIR};HYMT_BIN=${CMAKE_BINARY_DIR}")
    endforeach()
  endif()
endforeach()

add_test(NAME cli_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/cli_test.sh
  ${CMAKE_BINARY_DIR}/hymt ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(cli_test PROPERTIES LABELS unit TIMEOUT 300)

# The engine allocates nothing in steady state: malloc/calloc/realloc/free are wrapped.
hy_add_test(noalloc_test LABEL unit SOURCES ${CMAKE_SOURCE_DIR}/tests/engine/noalloc_test.c)
target_link_options(noalloc_test PRIVATE
  -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free)
