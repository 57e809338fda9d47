# lang_table_test.cmake: cmake/lang_table.cmake on small tables, run as a script (ctest
# lang_table_test, label unit):
#
#   cmake -DSRC=<source dir> -DWORK=<scratch dir> -P lang_table_test.cmake
#
# Each bad table must stop the generator with its "languages.tsv:LINE: ..." message (the
# line and the words checked); a good one with a new generation and a script detection
# does not know must come out as the C and the page rows it describes. Exit status 1 and
# one line per failed case otherwise.

set(GEN ${SRC}/cmake/lang_table.cmake)
set(HEAD "# code\tname_en\tname_zh\tnative\tscript\tprompt\tgens\taliases\n")
set(EN "en\tEnglish\t英语\tEnglish\tLatn\t-\tmt2\teng\n")
set(failures 0)

# Runs the generator on content (written as WORK/languages.tsv); its exit code and messages.
function(run_gen content rc_out msg_out)
  file(WRITE ${WORK}/languages.tsv "${content}")
  execute_process(COMMAND ${CMAKE_COMMAND} -DIN=${WORK}/languages.tsv
    -DOUT=${WORK}/lang_table.c -DPAGE_IN=${WORK}/page.html -DPAGE_OUT=${WORK}/page.out.html
    -P ${GEN} RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  string(REGEX REPLACE "[ \t\n]+" " " err "${err}${out}") # CMake wraps long messages
  set(${rc_out} "${rc}" PARENT_SCOPE)
  set(${msg_out} "${err}" PARENT_SCOPE)
endfunction()

# A bad table: the generator must fail and say `want` (a substring, line number included).
function(bad name want content)
  run_gen("${content}" rc msg)
  string(FIND "${msg}" "${want}" at)
  if(rc EQUAL 0 OR at LESS 0)
    message("FAIL ${name}: exit ${rc}, want '${want}' in: ${msg}")
    math(EXPR f "${failures} + 1")
    set(failures ${f} PARENT_SCOPE)
  else()
    message("ok   ${name}")
  endif()
endfunction()

file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/page.html "<script>var LANGS = [/*@LANGS@*/];</script>\n")

bad(field_count "languages.tsv:3: 7 tab-separated fields"
  "${HEAD}${EN}de\tGerman\t德语\tDeutsch\tLatn\t-\tmt2\n")
bad(repeated_code "languages.tsv:3: code 'en' is repeated" "${HEAD}${EN}${EN}")
string(CONCAT hant "${HEAD}zh-Hant\tTraditional Chinese\t繁体中文\t繁體中文\tHani\tzh\tmt2\t-\n"
  "zh-HANT\tHant2\t繁体2\t繁體2\tHani\tzh\tmt2\t-\n")
bad(repeated_code_case "languages.tsv:3: code 'zh-HANT' is repeated" "${hant}")
bad(upper_code "languages.tsv:2: code 'EN' is not a language code"
  "${HEAD}EN\tEnglish\t英语\tEnglish\tLatn\t-\tmt2\t-\n")
bad(name_clash "languages.tsv:3: name_en 'english' is already en's"
  "${HEAD}${EN}xx\tenglish\t某语\tXx\tLatn\t-\tmt2\t-\n")
bad(alias_clash "languages.tsv:3: alias 'ENG' is already en's"
  "${HEAD}${EN}xx\tXish\t某语\tXx\tLatn\t-\tmt2\tx|ENG\n")
bad(empty_name "languages.tsv:2: name_zh '' is empty"
  "${HEAD}en\tEnglish\t\tEnglish\tLatn\t-\tmt2\t-\n")
bad(spaced_name "languages.tsv:2: native ' English' is empty or has surrounding spaces"
  "${HEAD}en\tEnglish\t英语\t English\tLatn\t-\tmt2\t-\n")
string(REPEAT "x" 65 long)
bad(long_alias "languages.tsv:2: alias '${long}' is 65 bytes, more than 64"
  "${HEAD}en\tEnglish\t英语\tEnglish\tLatn\t-\tmt2\t${long}\n")
bad(bad_code "languages.tsv:2: code 'english' is not a language code"
  "${HEAD}english\tEnglish\t英语\tEnglish\tLatn\t-\tmt2\t-\n")
bad(bad_script "languages.tsv:2: script 'LATIN' is not an ISO 15924 code"
  "${HEAD}en\tEnglish\t英语\tEnglish\tLATIN\t-\tmt2\t-\n")
bad(bad_side "languages.tsv:2: prompt side 'yes' is neither zh nor -"
  "${HEAD}en\tEnglish\t英语\tEnglish\tLatn\tyes\tmt2\t-\n")
bad(no_gens "languages.tsv:2: no generation translates en"
  "${HEAD}en\tEnglish\t英语\tEnglish\tLatn\t-\t\t-\n")
bad(bad_gen "languages.tsv:2: generation 'MT2' is not a name"
  "${HEAD}en\tEnglish\t英语\tEnglish\tLatn\t-\tmt1 MT2\t-\n")
bad(reserved_quote "languages.tsv:3: '\"' is reserved"
  "${HEAD}${EN}de\tGer\"man\t德语\tDeutsch\tLatn\t-\tmt2\t-\n")
bad(reserved_semicolon "languages.tsv:2: ';' is reserved"
  "${HEAD}en\tEnglish\t英语\tEnglish\tLatn\t-\tmt2\teng;x\n")
bad(empty_table "languages.tsv: no rows" "${HEAD}")
set(g "")
foreach(i RANGE 32)
  string(APPEND g "g${i} ")
endforeach()
string(STRIP "${g}" g)
bad(gen_overflow "languages.tsv:2: more than 32 generations"
  "${HEAD}en\tEnglish\t英语\tEnglish\tLatn\t-\t${g}\t-\n")
file(WRITE ${WORK}/page.html "<script>var LANGS = [];</script>\n")
bad(page_marker "0 /*@LANGS@*/ markers, want 1" "${HEAD}${EN}")
file(WRITE ${WORK}/page.html "<script>var LANGS = [/*@LANGS@*/];</script>\n")

# A good table: comments anywhere (reserved characters allowed there), a second
# generation, a script detection does not know, the Chinese side, a CRLF line end.
string(CONCAT good "${HEAD}# a comment; with \"quotes\" [and brackets]\n${EN}\n"
  "el\tGreek\t希腊语\tΕλληνικά\tGrek\t-\tmt3\tell|gre\r\n"
  "yue\tCantonese\t粤语\t粵語\tHani\tzh\tmt2 mt3\t-\n")
run_gen("${good}" rc msg)
file(READ ${WORK}/lang_table.c c)
file(READ ${WORK}/page.out.html page)
set(want_c
  "hy_lang_n_rows = 3;" "hy_lang_n_gens = 2;" "{\"mt2\", \"mt3\"}"
  "{{\"en\", \"English\", \"英语\", \"English\", false, HY_SCRIPT_LATIN},\n     \"eng\", 0x1u}"
  "{{\"el\", \"Greek\", \"希腊语\", \"Ελληνικά\", false, HY_SCRIPT_OTHER},\n     \"ell|gre\", 0x2u}"
  "{{\"yue\", \"Cantonese\", \"粤语\", \"粵語\", true, HY_SCRIPT_HAN},\n     \"\", 0x3u}")
if(NOT rc EQUAL 0)
  message("FAIL good table: exit ${rc}: ${msg}")
  math(EXPR failures "${failures} + 1")
endif()
foreach(w IN LISTS want_c)
  string(FIND "${c}" "${w}" at)
  if(at LESS 0)
    message("FAIL good table: no '${w}' in the C")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()
string(FIND "${page}" "var LANGS = [\n  [\"en\", \"English\", \"英语\", \"English\", \"Latn\"],\n  [\"el\"" at)
if(at LESS 0)
  message("FAIL good table: the page rows: ${page}")
  math(EXPR failures "${failures} + 1")
endif()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} failed")
endif()
message("all passed")
