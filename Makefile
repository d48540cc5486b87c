# aimux-ops — every build and test entry point. On a fresh machine:
#   make demo   sets everything up and runs the main job (native/examples/demo.c)
#   make test   sets everything up and runs every test of every language
#   make install PREFIX=/usr/local [DESTDIR=] [PYTHON=python3.11]   the library, headers,
#               pkg-config and CMake files, the Python payload and the interpreter runtime it
#               carries (README "Use it from your own project"); needs no venv
SHELL := /bin/bash
.DEFAULT_GOAL := help

ROOT      := $(abspath .)
PYTHON3   ?= python3
VENV      := $(ROOT)/.venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.aimux-setup-stamp
LIB       := $(ROOT)/native/build/libaimux.so
BINDINGS  := cpp node go java
export AIMUX_LIB := $(LIB)
SUB_ENV   := PYTHON=$(PY) AIMUX_LIB=$(LIB)
# make install / test-dist: the interpreter the installed library embeds (default: the venv's,
# else python3)
PYTHON    ?= $(if $(wildcard $(PY)),$(PY),$(PYTHON3))
PREFIX    ?= /usr/local
DESTDIR   ?=

.PHONY: help setup native schema check-schema lint lint-tools format test test-python test-asan test-native test-vectors test-fuzz fuzz peers \
        install wheel test-dist \
        $(addprefix test-,$(BINDINGS)) $(addprefix setup-,$(BINDINGS)) test-kotlin demo bench recordings clean

help:
	@echo "make demo | test | setup | native | install | wheel | schema | check-schema | lint | format | bench | fuzz | recordings | clean"

## setup: .venv with the package (editable) and every dev tool, from the pinned lock file, and
## the optional stream chunk reader in C built in place (aimux_ops/_speedups/_cchunks*.so,
## native/build_cproject.py)
EXT_SUFFIX := $(shell $(if $(wildcard $(PY)),$(PY),$(PYTHON3)) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX") or ".so")')
CCHUNKS   := aimux_ops/_speedups/_cchunks$(EXT_SUFFIX)
setup: $(STAMP) $(CCHUNKS)
$(CCHUNKS): aimux_ops/_speedups/_cchunks.c native/build_cproject.py $(STAMP)
	$(PY) native/build_cproject.py --out-dir aimux_ops/_speedups --only _cchunks
$(STAMP): requirements/dev.lock pyproject.toml
	test -x $(PY) || $(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip==26.0.1
	$(PY) -m pip install -q --disable-pip-version-check -r requirements/dev.lock
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

## native: build native/build/libaimux.so (cffi embedding)
native: setup
	$(MAKE) -C native build $(SUB_ENV)

## schema: regenerate everything derived from the catalogue and the op models (one generator,
## aimux_ops/codegen): schema/, native/aimux_codes.h, the shim's early-error table and packed-chain layout, the Go, Node
## and Java generated code, the typed Python API (aimux_ops/api/_generated.py), the DESIGN.md catalogue
## table. All of it is committed.
schema: setup
	$(PY) -m aimux_ops.codegen --write

## check-schema: fail when any generated file drifts from the catalogue / models
check-schema: setup
	$(PY) -m aimux_ops.codegen --check

## lint: every language's linters. Python: ruff check + ruff format + mypy --strict, and the
## import layers (lint/layers.py: folders import only downward, no circle); C/C++:
## clang-format, a strict -Werror compile of the shim on its own, cppcheck; Node: eslint; Go:
## gofmt, go vet, staticcheck; Java: checkstyle; Kotlin: kotlinc -Werror, ktlint. Tool versions are
## pinned (lock files, Makefiles, poms).
PY_LINTED := aimux_ops tests contract-tests bindings/python native lint setup.py
C_GENERATED := native/aimux_codes.h native/src/aimux_early.h native/src/aimux_packed.h
C_SOURCES := $(filter-out $(C_GENERATED),$(wildcard native/*.h native/src/*.c native/src/aimux_buf.h \
             native/src/aimux_queue.h native/lint/*.[ch] \
             native/tests/*.c native/examples/*.c bindings/cpp/*.hpp bindings/cpp/tests/*.cpp \
             bindings/cpp/tools/*.cpp fuzz/*.c bench/*.c bench/native/*.c aimux_ops/_speedups/*.c))
PY_INCLUDE = $(shell $(PY) -c "import sysconfig; print(sysconfig.get_paths()['include'])")
CC ?= cc

## lint-tools: clang-format and cppcheck (Debian) when missing
lint-tools:
	@command -v clang-format >/dev/null && command -v cppcheck >/dev/null || { \
	  echo "installing clang-format cppcheck (Debian)"; \
	  apt-get install -y clang-format cppcheck || { apt-get update && apt-get install -y clang-format cppcheck; }; }

lint: setup lint-tools
	$(VENV)/bin/ruff check $(PY_LINTED)
	$(VENV)/bin/ruff format --check $(PY_LINTED)
	$(VENV)/bin/mypy --strict aimux_ops
	$(PY) lint/layers.py
	clang-format --dry-run --Werror $(C_SOURCES)
	$(CC) -std=gnu11 -fsyntax-only -Wall -Wextra -Werror -I$(PY_INCLUDE) -Inative -Inative/src native/lint/shim_check.c
	$(CC) -std=gnu11 -fsyntax-only -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror -I$(PY_INCLUDE) aimux_ops/_speedups/_cchunks.c
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance --std=c11 --inline-suppr \
	  --suppress=missingIncludeSystem -Inative -Inative/src -DAIMUX_BUILD_PATHS='""' -DAIMUX_PYTHON_HOME='""' -DAIMUX_REPO='""' -DAIMUX_LIB_PATH='""' \
	  native/src/aimux_shim.c native/tests/test_native.c native/tests/test_dlopen.c native/tests/test_guest.c native/examples/demo.c fuzz/fuzz_cabi.c
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance --std=c11 --inline-suppr \
	  --suppress=missingIncludeSystem aimux_ops/_speedups/_cchunks.c
	$(MAKE) -C bindings/node lint $(SUB_ENV)
	$(MAKE) -C bindings/go lint $(SUB_ENV)
	$(MAKE) -C bindings/java lint $(SUB_ENV)
	$(MAKE) -C bindings/kotlin lint $(SUB_ENV)

## format: rewrite what `make lint` checks the layout of (Python, C/C++)
format: setup lint-tools
	$(VENV)/bin/ruff format $(PY_LINTED)
	clang-format -i $(C_SOURCES)

## peers: the AI SDK (npm, pinned in bench/peers/package-lock.json) the parity tests compare with
peers:
	$(MAKE) -C bench peers

test-python: setup peers native
	$(VENV)/bin/pytest tests

## test-vectors: every decode-chain over every contract vector
test-vectors: setup native
	$(PY) contract-tests/run_decode_chain.py bindings/python/decode-chain $(foreach b,$(BINDINGS),bindings/$(b)/decode-chain)

test-native: native
	$(MAKE) -C native test $(SUB_ENV)

$(addprefix test-,$(BINDINGS)): test-%: native
	$(MAKE) -C bindings/$* test $(SUB_ENV)

## test-kotlin: the Kotlin module over the Java binding (installs the Java jar first, ~/.m2)
test-kotlin: native
	$(MAKE) -C bindings/kotlin test $(SUB_ENV)

## test-fuzz: a short, bounded fuzzing slice (the long run is `make fuzz`)
test-fuzz: native
	$(MAKE) -C fuzz smoke $(SUB_ENV)

## test-asan: the C extension (_cchunks) built with AddressSanitizer into a copy of the
## package (build/asan), and its differential suite run against that copy: a stack or heap
## overrun inside a frame, which valgrind cannot see, fails the run
ASAN_DIR := build/asan
ASAN_TESTS := tests/test_cchunks.py
test-asan: setup
	rm -rf $(ASAN_DIR) && mkdir -p $(ASAN_DIR)
	cp -r aimux_ops $(ASAN_DIR)/aimux_ops
	rm -f $(ASAN_DIR)/aimux_ops/_speedups/_cchunks*.so
	$(PY) native/build_cproject.py --out-dir $(ASAN_DIR)/aimux_ops/_speedups \
	  --cflags "-O1 -fsanitize=address -fno-omit-frame-pointer"
	cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	  LD_PRELOAD="$$(cc -print-file-name=libasan.so) $$(cc -print-file-name=libstdc++.so.6)" \
	  PYTHONPATH=$(CURDIR)/$(ASAN_DIR) \
	  AIMUX_EXPECT_EXTENSIONS_FROM=$(CURDIR)/$(ASAN_DIR)/aimux_ops/_speedups \
	  $(PY) -m pytest -q --capture=sys -p no:randomly -p no:cacheprovider --rootdir=$(CURDIR) \
	  $(addprefix $(CURDIR)/,$(ASAN_TESTS))

## install: PREFIX (and DESTDIR) get include/, lib/libaimux.so.1, pkg-config, CMake, the payload
## and the runtime (lib/aimux/runtime: libpython, its standard library and the libraries they load)
install:
	$(MAKE) -C native install PYTHON=$(PYTHON) PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)

## wheel: dist/ gets a manylinux wheel per supported CPython found here (3.11-3.13: pythonX.Y or
## pyenv; WHEEL_PYTHONS= picks others) and the sdist (native/build_wheels.py: auditwheel repair)
WHEEL_PYTHONS ?=
wheel: setup
	$(PY) native/build_wheels.py --src . --out dist --sdist \
	  $(if $(strip $(WHEEL_PYTHONS)),$(addprefix --python ,$(WHEEL_PYTHONS)),--supported)

## test-dist: the downstream-user test (dist-tests/run.sh: install, move, build and run outside;
## the C and C++ programs also in minimal Debian 12 and 13 roots, cached in ~/.cache/aimux-roots)
test-dist: setup
	@for tool in cmake pkg-config; do command -v $$tool >/dev/null || { echo "installing $$tool (Debian)"; \
	  apt-get install -y $$tool || { apt-get update && apt-get install -y $$tool; }; }; done
	PYTHON=$(PY) dist-tests/run.sh

test: lint check-schema test-python test-asan test-native $(addprefix test-,$(BINDINGS)) test-kotlin test-vectors test-fuzz test-dist
	@echo "make test: every suite passed"

demo: native
	$(MAKE) -C native demo $(SUB_ENV)

## bench: every benchmark (the native table included), results in bench/results.md + .png
bench: native
	$(MAKE) -C bench bench $(SUB_ENV)

fuzz: native
	$(MAKE) -C fuzz fuzz $(SUB_ENV)

## recordings: re-record recordings/demo.jsonl and anthropic.jsonl against the local fault server
recordings: setup
	$(PY) tests/make_recordings.py

clean:
	rm -rf native/build build aimux_ops.egg-info aimux_ops/_speedups/_cchunks*.so bindings/*/build bindings/java/target bindings/kotlin/target bindings/node/node_modules $(VENV)
