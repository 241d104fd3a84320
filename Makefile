# swift-tls-fixtures — every target installs what it needs on a fresh Debian/Ubuntu machine (as root),
# or prints the exact command to run.
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)
ifeq ($(shell uname -s),Darwin)
# Homebrew's OpenSSL is keg-only: point pkg-config at it.
export PKG_CONFIG_PATH := $(shell brew --prefix openssl@3 2>/dev/null)/lib/pkgconfig:$(PKG_CONFIG_PATH)
endif

.PHONY: help deps build test run bench bench-quick test-asan test-tsan fuzz clean scenarios

help:
	@echo "make run         build (release) and serve every scenario plus the dashboard"
	@echo "make test        install missing dependencies, build, run the whole test suite"
	@echo "make bench       performance comparison with nginx and openssl s_server (BENCHMARKS.md)"
	@echo "make bench-quick the same in short runs (< 2 min after the build), for CI: checks that it runs"
	@echo "make test-asan   the test suite under AddressSanitizer;  make test-tsan: ThreadSanitizer"
	@echo "make fuzz        run the libFuzzer targets for a bounded time"

deps:
	@scripts/ensure-deps.sh core

build: deps
	swift build

# The README's first command: a release build serving every scenario and the dashboard.
run: deps
	swift build -c release --product tls-fixtures
	.build/release/tls-fixtures serve $(ARGS)

test: deps
	@scripts/ensure-deps.sh browser
	swift build --build-tests
	swift test --skip-build

# Release build of the CLI and the in-process benchmark, then scripts/bench/run.py drives them, nginx, openssl s_server
# and wrk (installed by ensure-deps when missing). ARGS passes options through, e.g. ARGS="--only handshake".
BENCH_BUILD = swift build -c release --product tls-fixtures && swift build -c release --product tls-fixtures-bench
bench: deps
	@scripts/ensure-deps.sh bench
	$(BENCH_BUILD)
	python3 scripts/bench/run.py $(ARGS)

bench-quick: deps
	@scripts/ensure-deps.sh bench
	$(BENCH_BUILD)
	python3 scripts/bench/run.py --quick $(ARGS)

clean:
	rm -rf .build

# Scenarios/*.json is the catalog; the library embeds it through generated code (checked by a test).
scenarios:
	python3 scripts/generate-builtin-scenarios.py
