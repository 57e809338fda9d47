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

# The demo model: random weights with the tiny shapes, generated on first use.
$(DEMO_MODEL)/config.json: | build
	$(BUILD)/hymt make-test-model --out $(DEMO_MODEL) --preset tiny --seed 1

demo-model: $(DEMO_MODEL)/config.json

# Until the HTTP server exists, the main job is a generation on the demo model.
serve: build demo-model
	@echo "hymt: serving the embedded demo model (random weights): use a real checkpoint with"
	@echo "      build/hymt generate -m /path/to/Hunyuan-MT-7B --ids ... -n 32"
	$(BUILD)/hymt generate -m $(DEMO_MODEL) --ids 497,10,20,30,40 -n 16 --ignore-eos

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
