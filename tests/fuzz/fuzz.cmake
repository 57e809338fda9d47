# libFuzzer targets (tests/fuzz/README.md). Only with -DHYMT_FUZZ=ON (clang, ASan+UBSan:
# make test-asan's build folder, or one of their own that tests/fuzz/run.sh configures);
# CMakeLists.txt gives the library's and the server's sources -fsanitize=fuzzer-no-link.
set(HYMT_FUZZERS config tokenizer safetensors gguf segment format terms job http_parse request)
set(HYMT_FUZZ_SERVER_SOURCES ${HYMT_CLI_SOURCES})
list(FILTER HYMT_FUZZ_SERVER_SOURCES EXCLUDE REGEX "/main\\.c$")
# fuzz_request is hymt without main(): its sources, libraries, include folders, definitions
# and generated headers, whatever they are
get_target_property(HYMT_FUZZ_SERVER_LIBS hymt LINK_LIBRARIES)
get_target_property(HYMT_FUZZ_SERVER_INC hymt INCLUDE_DIRECTORIES)
get_target_property(HYMT_FUZZ_SERVER_DEFS hymt COMPILE_DEFINITIONS)
get_target_property(HYMT_FUZZ_SERVER_DEPS hymt MANUALLY_ADDED_DEPENDENCIES)
foreach(name ${HYMT_FUZZERS})
  if(name STREQUAL "request") # the whole server in-process (cmd_serve), as `hymt serve`
    add_executable(fuzz_${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_${name}.c
      ${HYMT_FUZZ_SERVER_SOURCES})
    target_link_libraries(fuzz_${name} PRIVATE ${HYMT_FUZZ_SERVER_LIBS})
    if(HYMT_FUZZ_SERVER_INC)
      target_include_directories(fuzz_${name} PRIVATE ${HYMT_FUZZ_SERVER_INC})
    endif()
    if(HYMT_FUZZ_SERVER_DEFS)
      target_compile_definitions(fuzz_${name} PRIVATE ${HYMT_FUZZ_SERVER_DEFS})
    endif()
    if(HYMT_FUZZ_SERVER_DEPS)
      add_dependencies(fuzz_${name} ${HYMT_FUZZ_SERVER_DEPS})
    endif()
  elseif(name STREQUAL "http_parse") # the parser alone: it needs only core/
    add_executable(fuzz_${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_${name}.c
      ${CMAKE_SOURCE_DIR}/src/server/http_parse.c)
    target_link_libraries(fuzz_${name} PRIVATE hymt_lib)
  else()
    add_executable(fuzz_${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_${name}.c)
    target_link_libraries(fuzz_${name} PRIVATE hymt_lib)
  endif()
  target_include_directories(fuzz_${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  target_compile_definitions(fuzz_${name} PRIVATE HYMT_SRC_DIR="${CMAKE_SOURCE_DIR}")
  target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer-no-link)
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  set_target_properties(fuzz_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
endforeach()
list(TRANSFORM HYMT_FUZZERS PREPEND fuzz_)
add_custom_target(fuzzers DEPENDS ${HYMT_FUZZERS})
