# lang_table.cmake: the language table (src/translate/languages.tsv, its header says the
# columns) checked and turned into C, or into the web page's language list. Run as a script:
#
#   cmake -DIN=languages.tsv -DOUT=build/generated/lang_table.c -P lang_table.cmake
#   cmake -DIN=languages.tsv -DPAGE_IN=web/index.html -DPAGE_OUT=build/generated/index.html
#         -P lang_table.cmake
#
# The C file defines the rows and generation names src/translate/lang_table.h declares;
# the page is PAGE_IN with its one /*@LANGS@*/ replaced by [code, English, Chinese, native,
# script] arrays in table order. Every row is checked first, and a bad one stops the build
# with "languages.tsv:LINE: what is wrong": a field count other than 8, an empty or
# over-long (64 bytes) field, a malformed or repeated code, a name or alias another row
# already has (ASCII case folded; lang_test checks the full Unicode folding), a script
# that is no ISO 15924 code, an unknown prompt side, a row no generation translates, more than 32 generations, a
# reserved character (semicolon, double quote, backslash, square bracket). CRLF line ends
# read as LF (file(READ) drops the CRs).
# CMakeLists.txt reruns it when the table, the page or this script changes.

cmake_minimum_required(VERSION 3.20)

if(NOT DEFINED IN OR (NOT DEFINED OUT AND NOT DEFINED PAGE_OUT))
  message(FATAL_ERROR "lang_table.cmake: usage: cmake -DIN=languages.tsv "
    "(-DOUT=file.c | -DPAGE_IN=index.html -DPAGE_OUT=file.html) -P lang_table.cmake")
endif()
get_filename_component(LT_NAME "${IN}" NAME)

set(LT_MAX_BYTES 64) # lang.c's NAME_MAX_BYTES: a longer name is never looked up
set(LT_MAX_ROWS 1000)
set(LT_MAX_GENS 32)  # one bit each in a row's mask
# ISO 15924 code -> enum hy_script (lang.h); any other code is HY_SCRIPT_OTHER.
set(LT_SCRIPTS Latn LATIN Cyrl CYRILLIC Arab ARABIC Hebr HEBREW Deva DEVANAGARI
  Beng BENGALI Gujr GUJARATI Taml TAMIL Telu TELUGU Thai THAI Tibt TIBETAN Mymr MYANMAR
  Khmr KHMER Mong MONGOLIAN Hang HANGUL Jpan KANA Hani HAN Zzzz OTHER)

function(lt_fail line msg)
  message(FATAL_ERROR "${LT_NAME}:${line}: ${msg}")
endfunction()

# The line number of byte offset pos in text.
function(lt_line_of text pos out)
  string(SUBSTRING "${text}" 0 ${pos} before)
  string(REGEX MATCHALL "\n" nl "${before}")
  list(LENGTH nl n)
  math(EXPR n "${n} + 1")
  set(${out} ${n} PARENT_SCOPE)
endfunction()

# Fails on the first reserved character of the rows (comments may hold any).
function(lt_check_reserved text)
  foreach(c ";" "\"" "\\" "[" "]")
    string(FIND "${text}" "${c}" pos)
    if(pos GREATER_EQUAL 0)
      lt_line_of("${text}" ${pos} line)
      lt_fail(${line} "'${c}' is reserved (CMake lists and C strings): no row may hold it")
    endif()
  endforeach()
endfunction()

# A name or alias: non-empty, no surrounding space, at most LT_MAX_BYTES, not another
# row's (LT_KEYS holds the folded keys seen so far, LT_OWNERS the code of each one's row).
macro(lt_check_key line what value code)
  string(LENGTH "${value}" len)
  string(STRIP "${value}" stripped)
  if(len EQUAL 0 OR NOT stripped STREQUAL "${value}")
    lt_fail(${line} "${what} '${value}' is empty or has surrounding spaces")
  endif()
  if(len GREATER LT_MAX_BYTES)
    lt_fail(${line} "${what} '${value}' is ${len} bytes, more than ${LT_MAX_BYTES}")
  endif()
  string(TOLOWER "${value}" folded)
  string(REPLACE "_" "-" folded "${folded}")
  list(FIND LT_KEYS "${folded}" at)
  if(at LESS 0)
    list(APPEND LT_KEYS "${folded}")
    list(APPEND LT_OWNERS "${code}")
  else()
    list(GET LT_OWNERS ${at} owner)
    if(NOT owner STREQUAL "${code}")
      lt_fail(${line} "${what} '${value}' is already ${owner}'s")
    endif()
  endif()
endmacro()

# The generations of one row (space-separated) as the bit mask `mask` over LT_GENS, to
# which new names are appended.
macro(lt_gen_mask line gens)
  string(REPLACE " " ";" glist "${gens}")
  list(LENGTH glist ng)
  if(ng EQUAL 0)
    lt_fail(${line} "no generation translates ${code}")
  endif()
  set(mask 0)
  foreach(g IN LISTS glist)
    if(NOT g MATCHES "^[a-z0-9.]+$")
      lt_fail(${line} "generation '${g}' is not a name like mt2 (one space between names)")
    endif()
    list(FIND LT_GENS "${g}" bit)
    if(bit LESS 0)
      list(LENGTH LT_GENS bit)
      if(bit GREATER_EQUAL LT_MAX_GENS)
        lt_fail(${line} "more than ${LT_MAX_GENS} generations")
      endif()
      list(APPEND LT_GENS "${g}")
    endif()
    math(EXPR mask "${mask} | (1 << ${bit})")
  endforeach()
  math(EXPR mask "${mask}" OUTPUT_FORMAT HEXADECIMAL)
endmacro()

# One row's eight fields, checked; appends its C and page entries to LT_C and LT_JS.
macro(lt_row line)
  list(GET f 0 code)
  list(GET f 1 name_en)
  list(GET f 2 name_zh)
  list(GET f 3 native)
  list(GET f 4 script)
  list(GET f 5 side)
  list(GET f 6 gens)
  list(GET f 7 aliases)
  if(NOT code MATCHES "^[a-z][a-z][a-z]?(-[A-Za-z0-9][A-Za-z0-9]+)*$")
    lt_fail(${line} "code '${code}' is not a language code like de, yue or zh-Hant")
  endif()
  string(TOLOWER "${code}" folded)
  list(FIND LT_OWNERS_FOLDED "${folded}" at)
  if(at GREATER_EQUAL 0)
    lt_fail(${line} "code '${code}' is repeated: a row already has it")
  endif()
  list(APPEND LT_OWNERS_FOLDED "${folded}")
  foreach(k code name_en name_zh native)
    lt_check_key(${line} ${k} "${${k}}" "${code}")
  endforeach()
  if(NOT aliases STREQUAL "-")
    string(REPLACE "|" ";" alist "${aliases}")
    foreach(a IN LISTS alist)
      lt_check_key(${line} alias "${a}" "${code}")
    endforeach()
  endif()
  if(NOT script MATCHES "^[A-Z][a-z][a-z][a-z]$")
    lt_fail(${line} "script '${script}' is not an ISO 15924 code like Latn")
  endif()
  list(FIND LT_SCRIPTS "${script}" at)
  if(at LESS 0)
    set(enum OTHER) # a script detection does not know: never detected
  else()
    math(EXPR at "${at} + 1")
    list(GET LT_SCRIPTS ${at} enum)
  endif()
  if(NOT side MATCHES "^(zh|-)$")
    lt_fail(${line} "prompt side '${side}' is neither zh nor -")
  endif()
  lt_gen_mask(${line} "${gens}")
  if(side STREQUAL "zh")
    set(zh true)
  else()
    set(zh false)
  endif()
  if(aliases STREQUAL "-")
    set(aliases "")
  endif()
  string(APPEND LT_C "    {{\"${code}\", \"${name_en}\", \"${name_zh}\", \"${native}\", ${zh}, "
    "HY_SCRIPT_${enum}},\n     \"${aliases}\", ${mask}u},\n")
  string(APPEND LT_JS "  [\"${code}\", \"${name_en}\", \"${name_zh}\", \"${native}\", \"${script}\"],\n")
endmacro()

file(READ "${IN}" text)
# Comments go (their newlines stay, so line numbers hold); then the reserved characters.
string(REGEX REPLACE "(^|\n)#[^\n]*" "\\1" text "${text}")
lt_check_reserved("${text}")
string(REPLACE "\n" ";" lines "${text}")
set(LT_C "")
set(LT_JS "")
set(LT_KEYS "")
set(LT_OWNERS "")
set(LT_OWNERS_FOLDED "") # the codes so far, folded
set(LT_GENS "")
set(line 0)
set(rows 0)
foreach(l IN LISTS lines)
  math(EXPR line "${line} + 1")
  if(l STREQUAL "")
    continue()
  endif()
  string(REPLACE "\t" ";" f "${l}")
  list(LENGTH f nf)
  if(NOT nf EQUAL 8)
    lt_fail(${line} "${nf} tab-separated fields, want 8 (code name_en name_zh native "
      "script prompt gens aliases)")
  endif()
  math(EXPR rows "${rows} + 1")
  if(rows GREATER LT_MAX_ROWS)
    lt_fail(${line} "more than ${LT_MAX_ROWS} rows")
  endif()
  lt_row(${line})
endforeach()
if(rows EQUAL 0)
  message(FATAL_ERROR "${LT_NAME}: no rows")
endif()

if(DEFINED OUT)
  list(JOIN LT_GENS "\", \"" gen_names)
  list(LENGTH LT_GENS n_gens)
  file(WRITE "${OUT}" "/* Generated by cmake/lang_table.cmake from ${LT_NAME} (${rows} rows): do not edit. */
#include \"translate/lang_table.h\"

const size_t hy_lang_n_rows = ${rows};
const size_t hy_lang_n_gens = ${n_gens};

/* Bit i of a row's mask: generation i. */
const char *const hy_lang_gen_names[] = {\"${gen_names}\"};

const struct hy_lang_row hy_lang_rows[] = {
${LT_C}};
")
endif()
if(DEFINED PAGE_OUT)
  file(READ "${PAGE_IN}" page)
  string(REGEX MATCHALL "/\\*@LANGS@\\*/" marks "${page}")
  list(LENGTH marks n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "${PAGE_IN}: ${n} /*@LANGS@*/ markers, want 1")
  endif()
  string(REPLACE "/*@LANGS@*/" "\n${LT_JS}" page "${page}")
  file(WRITE "${PAGE_OUT}" "${page}")
endif()
