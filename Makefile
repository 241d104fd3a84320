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

clean:
	rm -rf .build .build-asan .build-tsan

# Scenarios/*.json is the catalog; the library embeds it through generated code (checked by a test).
scenarios:
	python3 scripts/generate-builtin-scenarios.py

# --- Sanitizers -------------------------------------------------------------------------------------------------
# The whole suite under AddressSanitizer or ThreadSanitizer, each in its own scratch path so .build is never touched
# (about 35 s / 65 s to run here once built; a cold build of either takes 2.5–4 min on 2 cores). The tests find the CLI
# next to the test bundle, so every `tls-fixtures` they spawn is instrumented too; log_path sends each process's
# report to .build-*/sanitizer-reports, and scripts/sanitizer-reports.sh prints them and fails the target if any.
# No test is skipped or gated: all pass under both sanitizers within their normal time limits.
# detect_leaks=0: LeakSanitizer is not usable on this suite. On Linux it cannot see Swift's bit-packed pointers
# (multi-payload enums such as Data's storage, weak-reference side tables), so it reports live objects as leaked
# even for an empty test target (swift-corelibs-xctest#534, llvm-project#56751); and the two real leaks it found
# are in Foundation, not here (Data(contentsOf:) leaks 4 KiB per empty file; PropertyListSerialization leaks its
# CFError per malformed plist).
ASAN_TEST_OPTIONS := detect_leaks=0:log_path=$(CURDIR)/.build-asan/sanitizer-reports/asan
TSAN_TEST_OPTIONS := log_path=$(CURDIR)/.build-tsan/sanitizer-reports/tsan

test-asan: deps
	@scripts/ensure-deps.sh browser
	swift build --build-tests --sanitize=address --scratch-path .build-asan
	@rm -rf .build-asan/sanitizer-reports && mkdir -p .build-asan/sanitizer-reports
	ASAN_OPTIONS=$(ASAN_TEST_OPTIONS) swift test --skip-build --sanitize=address --scratch-path .build-asan; \
	  status=$$?; scripts/sanitizer-reports.sh .build-asan/sanitizer-reports || status=1; exit $$status

test-tsan: deps
	@scripts/ensure-deps.sh browser
	swift build --build-tests --sanitize=thread --scratch-path .build-tsan
	@rm -rf .build-tsan/sanitizer-reports && mkdir -p .build-tsan/sanitizer-reports
	TSAN_OPTIONS=$(TSAN_TEST_OPTIONS) swift test --skip-build --sanitize=thread --scratch-path .build-tsan; \
	  status=$$?; scripts/sanitizer-reports.sh .build-tsan/sanitizer-reports || status=1; exit $$status

