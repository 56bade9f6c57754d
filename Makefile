# Makefile: one-word entry points (demo, test, build, asan, tsan, bench, fuzz, format, clean) over the CMake presets.
# Variables: JOBS (parallel jobs, default nproc), FUZZ_SECONDS (default 600), CRASH_TRIALS and MPI_CRASH_TRIALS (make crash-test),
# BUILD_ROOT (where preset build trees go, default build; build/<preset> matches CMakePresets.json),
# CMAKE_ARGS (extra configure arguments, e.g. CMAKE_ARGS=-DMOKA_BUILD_BENCH=OFF).

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 600
BUILD_ROOT ?= build
DEMO_DIR ?= $(BUILD_ROOT)/demo
DEMO_ROWS ?= 1000000
FUZZ_TARGETS := plan_json blob_reader minidb job_files
CRASH_TRIALS ?= 60
MPI_CRASH_TRIALS ?= 50
CMAKE_ARGS ?=

RELEASE_DIR := $(BUILD_ROOT)/release
FUZZ_DIR := $(BUILD_ROOT)/fuzz

# configure(preset): configure the preset into $(BUILD_ROOT)/<preset>.
configure = cmake --preset $(1) -B $(BUILD_ROOT)/$(1) $(CMAKE_ARGS)
# build(preset[, target]): build it (all targets unless one is named).
build_preset = cmake --build $(BUILD_ROOT)/$(1) -j $(JOBS) $(if $(2),--target $(2))
# test(preset): run its test preset (sanitizer environments come from CMakePresets.json).
test_preset = ctest --preset $(1) --test-dir $(BUILD_ROOT)/$(1) -j $(JOBS)

.PHONY: all help bootstrap demo build test test-one-cpu asan tsan bench fuzz crash-test format format-check clean

all: build

help:
	@echo "make demo    install packages, build, run the flagship job (docs/demo.md) into $(DEMO_DIR)"
	@echo "make test    install packages, release build, run the test suite"
	@echo "make test-one-cpu  release build, then the test suite pinned to one CPU (concurrent steps run as fibers)"
	@echo "make build   release build only"
	@echo "make asan    AddressSanitizer+UBSan build and tests"
	@echo "make tsan    ThreadSanitizer build and tests"
	@echo "make bench   release build, then every benchmark in $(RELEASE_DIR)/bench/ (collectives_bench under mpirun, 2 and 4 ranks; mpi_queue_bench, 2; mpi_seed_job_bench, 3; mpi_checkpoint_bench, 4; plan_build_bench through bench/python_plan_build_bench.py; pipe_bench, then bench/python_pipe_bench.py, which installs python3-torch)"
	@echo "make fuzz    libFuzzer build, then the fuzzers ($(FUZZ_TARGETS)), FUZZ_SECONDS=$(FUZZ_SECONDS) each"
	@echo "make crash-test  release build, then CRASH_TRIALS=$(CRASH_TRIALS) SIGKILL-and-resume trials of moka job run,"
	@echo "                 and MPI_CRASH_TRIALS=$(MPI_CRASH_TRIALS) with one rank of it killed under mpirun"
	@echo "make format  reformat every tracked C++ file with clang-format (.clang-format)"
	@echo "make format-check  fail, listing them, when tracked C++ files are not formatted"
	@echo "make clean   remove the preset build trees"

bootstrap:
	bash scripts/bootstrap

# The flagship job (docs/demo.md): generated data, a reader node and two trainer nodes, SGD with Allreduce,
# a checkpoint per epoch and a trace; then the fit beside the truth.
demo: bootstrap
	$(call configure,release)
	$(call build_preset,release,moka_cli moka_sgd_demo)
	$(RELEASE_DIR)/examples/moka_sgd_demo --dir $(DEMO_DIR) --rows $(DEMO_ROWS)
	$(RELEASE_DIR)/moka job run $(DEMO_DIR)/sgd_job.json --checkpoint-dir $(DEMO_DIR)/checkpoints --start-over \
	  --trace $(DEMO_DIR)/trace.json > $(DEMO_DIR)/run.log || { cat $(DEMO_DIR)/run.log; exit 1; }
	@cut -c1-160 $(DEMO_DIR)/run.log
	$(RELEASE_DIR)/examples/moka_sgd_demo --summary $(DEMO_DIR)/run.log
	@echo "trace: $(DEMO_DIR)/trace.json (open it in https://ui.perfetto.dev); checkpoints: $(RELEASE_DIR)/moka checkpoint ls $(DEMO_DIR)/checkpoints"

build: bootstrap
	$(call configure,release)
	$(call build_preset,release)

test: build
	$(call test_preset,release)

# The suite again on one CPU (taskset): there Concurrency::automatic, the default, runs every fiber-safe
# concurrent step as fibers, so this checks the fiber path everywhere the suite uses the default.
test-one-cpu: build
	taskset -c $$(taskset -pc $$$$ | sed 's/.*: *//; s/[,-].*//') ctest --preset release --test-dir $(RELEASE_DIR) -j 1

asan: bootstrap
	$(call configure,asan)
	$(call build_preset,asan)
	$(call test_preset,asan)

tsan: bootstrap
	$(call configure,tsan)
	$(call build_preset,tsan)
	$(call test_preset,tsan)

bench: build
	@set -e; found=0; \
	for b in $$(find $(RELEASE_DIR)/bench -maxdepth 2 -type f -executable 2>/dev/null | grep -v CMakeFiles | sort); do \
	  found=1; echo "== $$b"; \
	  case "$$b" in \
	    */collectives_bench) for n in 2 4; do \
	      mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader -np $$n "$$b"; done ;; \
	    */mpi_queue_bench) \
	      mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader -np 2 "$$b" ;; \
	    */mpi_seed_job_bench) \
	      mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader -np 3 "$$b" ;; \
	    */mpi_checkpoint_bench) \
	      mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader -np 4 "$$b" ;; \
	    */plan_build_bench) \
	      PYTHONPATH=$(RELEASE_DIR)/python /usr/bin/python3 bench/python_plan_build_bench.py --build $(RELEASE_DIR) ;; \
	    */pipe_bench) "$$b"; \
	      PYTHONPATH=$(RELEASE_DIR)/python /usr/bin/python3 bench/python_pipe_bench.py ;; \
	    *) "$$b" ;; \
	  esac; \
	done; \
	if [ $$found = 0 ]; then echo "no benchmark binaries in $(RELEASE_DIR)/bench/"; fi

# Each fuzzer for FUZZ_SECONDS. New fuzz inputs go to the scratch corpus (first directory); the
# checked-in corpus (tests/fuzz/corpus/<target>, replayed by `make test`) only seeds it.
fuzz: bootstrap
	$(call configure,fuzz)
	$(call build_preset,fuzz)
	mkdir -p $(FUZZ_DIR)/artifacts
	set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$t; \
	  $(FUZZ_DIR)/tests/fuzz/moka_fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
	    $$(case $$t in plan_json|job_files) echo -dict=tests/fuzz/plan_json.dict;; esac) \
	    -artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_DIR)/corpus/$$t tests/fuzz/corpus/$$t; \
	done

# The crash-safety tests with the full trial counts (make test runs a few trials): one process, then
# MPI_CRASH_TRIALS trials of a rank killed under mpirun.
crash-test: build
	MOKA_CRASH_TRIALS=$(CRASH_TRIALS) $(RELEASE_DIR)/tests/moka_stress_durability_tests
	/usr/bin/python3 tests/mpi/crash_under_mpi.py $(MPI_CRASH_TRIALS) $(RELEASE_DIR)/moka $(CURDIR) \
	  mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader

# clang-format over the C++ files git tracks (so build trees and scratch files are never touched).
format: bootstrap
	git ls-files -z '*.cpp' '*.h' | xargs -0 clang-format -i

format-check: bootstrap
	bash scripts/format-check

clean:
	rm -rf $(addprefix $(BUILD_ROOT)/,dev release ci asan tsan fuzz)
