# hymt: the front door. `make` builds build/hymt; `make test` runs every test;
# `make serve` runs the main job. Each installs missing Debian packages first.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
DEMO_MODEL ?= $(BUILD)/demo-model

.PHONY: all build deps test test-asan serve demo-model clean help

all: build

help:
	@echo "make            build build/hymt (Release; CUDA when nvcc is found)"
	@echo "make test       build and run all tests (ctest, every label)"
	@echo "make test-asan  build with ASan+UBSan and run the unit and model tests"
	@echo "make serve      build and run the main job on the embedded demo model"
	@echo "make deps       install missing build dependencies (Debian packages)"
	@echo "make clean      remove build folders"
	@echo "variables: CMAKE_ARGS='-DHYMT_CUDA=OFF' BUILD=dir JOBS=n"

deps:
	@sh scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	@sh scripts/deps.sh
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

build: $(BUILD)/CMakeCache.txt
	@sh scripts/deps.sh
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan:
	@sh scripts/deps.sh
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DHYMT_SANITIZE=ON -DHYMT_CUDA=OFF $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(JOBS) -L 'unit|model'

# The demo model: random weights with the tiny shapes, generated on first use, with the
# tiny test tokenizer (512 ids, the 7B vocabulary's control tokens).
$(DEMO_MODEL)/config.json: | build
	$(BUILD)/hymt make-test-model --out $(DEMO_MODEL) --preset tiny --seed 3
	cp tests/data/tiny-mqa/tokenizer.json tests/data/tiny-mqa/tokenizer_config.json $(DEMO_MODEL)/

demo-model: $(DEMO_MODEL)/config.json

# Until the HTTP server exists, the main job is a document translation on the demo model.
serve: build demo-model
	@echo "hymt: translating with the embedded demo model (RANDOM WEIGHTS: the output is"
	@echo "      meaningless). For real translations: build/hymt translate -m /path/to/Hunyuan-MT-7B --to en FILE"
	printf 'Hunyuan-MT translates whole documents.\n\nIt keeps the paragraphs. 今天天气很好。\n' | \
		$(BUILD)/hymt translate -m $(DEMO_MODEL) --to zh --max-new-tokens 24

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
