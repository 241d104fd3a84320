# swift-tls-fixtures — every target installs what it needs on a fresh Debian/Ubuntu machine (as root),
# or prints the exact command to run.
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)
ifeq ($(shell uname -s),Darwin)
# Homebrew's OpenSSL is keg-only: point pkg-config at it.
export PKG_CONFIG_PATH := $(shell brew --prefix openssl@3 2>/dev/null)/lib/pkgconfig:$(PKG_CONFIG_PATH)
endif

# The open-file limit. Every test process raises its own as far as the hard limit allows (macOS's default soft limit is
# 256, its hard limit unlimited up to kern.maxfilesperproc). Under a low hard limit (`ulimit -n 256` in bash) all the
# tests' fixtures and clients at once do not fit: Swift Testing then runs 8 tests at a time (its
# SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH; a version without it ignores it), and the load tests that hold 1,000
# connections are skipped, saying why.
LOW_FD_LIMIT := $(shell l=$$(ulimit -Hn); [ "$$l" != unlimited ] && [ "$$l" -lt 4096 ] && echo yes)
ifneq ($(LOW_FD_LIMIT),)
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH ?= 8
endif

.PHONY: help deps build install uninstall test run bench bench-quick apple-report test-asan test-tsan fuzz fuzz-build clean scenarios lint matrix matrix-test-clients legacy-openssl test-legacy

help:
	@echo "make run         build (release) and serve every scenario plus the dashboard"
	@echo "make install     build (release) and install tls-fixtures into PREFIX/bin (PREFIX=$(PREFIX); DESTDIR stages it)"
	@echo "make uninstall   remove what make install installed (same PREFIX and DESTDIR)"
	@echo "make test        install missing dependencies, build, run the whole test suite"
	@echo "make lint        Darwin lint, client/layer graphs, public docs, toolchain floor, workflows (make test runs it)"
	@echo "make bench       performance comparison with nginx and openssl s_server (BENCHMARKS.md; Linux only)"
	@echo "make bench-quick the same in short runs (< 2 min after the build), for CI: checks that it runs (Linux only)"
	@echo "make test-asan   the test suite under AddressSanitizer;  make test-tsan: ThreadSanitizer"
	@echo "make fuzz        run the libFuzzer targets for a bounded time (Linux only: the toolchain's libFuzzer)"
	@echo "On macOS: brew install openssl@3 pkg-config (plus curl python3 for every test); see docs/macos.md"
	@echo "make matrix      every scenario against every client TLS stack (Linux; writes docs/CLIENTS.md, docs/clients.json)"
	@echo "make apple-report    Apple's URLSession's report card on this Mac and in a simulator, into docs/apple/ (macOS)"
	@echo "make legacy-openssl  build an OpenSSL with SSLv3/RC4/3DES and the helper serve runs for ssl-v3, rc4, 3des (opt-in)"
	@echo "make test-legacy     prove those three with that OpenSSL's own s_client (builds it first; opt-in)"

deps:
	@scripts/ensure-deps.sh core

build: deps
	@scripts/ensure-deps.sh xctest
	swift build

# --- Install (docs/cli.md, "Getting the tool") -------------------------------------------------------------------
# The GNU conventions: PREFIX (default /usr/local), BINDIR under it, DESTDIR prepended to both for staged installs
# (packagers), so `make install PREFIX=$$HOME/.local` needs no root. One file is installed: the CLI links OpenSSL
# dynamically (Homebrew's or the system's) and needs nothing else at run time. CONFIGURATION=debug installs the debug
# build instead of the release one; SKIP_BUILD=1 installs what is already built, from PRODUCTS (default: that
# configuration's products folder). The tests install the debug products of their own run that way: a release build
# takes minutes, and a `swift build` inside `swift test` would wait on the build folder's lock.
# Under sudo (a PREFIX only root may write, such as /usr/local/bin on an Apple silicon Mac) the build runs as the user
# who ran sudo, so .build and SwiftPM's caches stay theirs; only the copy runs as root.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
CONFIGURATION ?= release
UNDER_SUDO := $(and $(SUDO_USER),$(filter 0,$(shell id -u)),$(filter-out root,$(SUDO_USER)))
AS_USER := $(if $(UNDER_SUDO),sudo -H -u $(SUDO_USER) env PATH="$$PATH" )
# On a Mac the dependency check runs as that user too: it asks that user's Homebrew (Debian's apt-get wants root).
DEPS_AS_USER := $(if $(filter Darwin,$(shell uname -s)),$(AS_USER))
PRODUCTS ?= $$($(AS_USER)swift build -c $(CONFIGURATION) --show-bin-path)

install:
	@if [ -z "$(SKIP_BUILD)" ]; then $(DEPS_AS_USER)scripts/ensure-deps.sh core \
	  && $(AS_USER)swift build -c $(CONFIGURATION) --product tls-fixtures; fi
	install -d "$(DESTDIR)$(BINDIR)"
	install -m 0755 "$(PRODUCTS)/tls-fixtures" "$(DESTDIR)$(BINDIR)/tls-fixtures"
	@echo "Installed $(DESTDIR)$(BINDIR)/tls-fixtures"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/tls-fixtures"
	@echo "Removed $(DESTDIR)$(BINDIR)/tls-fixtures"

# The README's first command: a release build serving every scenario and the dashboard.
run: deps
	swift build -c release --product tls-fixtures
	.build/release/tls-fixtures serve $(ARGS)

# Our code builds without warnings (the house rule): SwiftPM passes -Xswiftc flags to this package's own targets only
# and builds every dependency with -suppress-warnings, so this fails on our warnings, never on a dependency's. Every
# debug build of the checkout uses it (bench-quick's too), so one does not recompile what another built.
SWIFT_WARNINGS := -Xswiftc -warnings-as-errors

# Three processes: DocExamplesConsumerTests builds the documentation's examples as a user's package (in
# .build/doc-examples; minutes the first time, seconds after), alone and first, so its build competes with no test;
# ReliabilitySuite measures this process's descriptors, threads and memory and churns through thousands of ephemeral
# ports, so it runs alone, after everything else (which runs in parallel).
# TLS_FIXTURES_MATRIX_REQUIRED: the live client matrix (ClientMatrixTests) must run; a missing client fails it.
# Every run's output goes to .build/test-logs as well; scripts/test-summary.py then prints one line (tests passed,
# failed, skipped) and under it every skip with its reason and the stacks the client matrix ran. It cannot pass on
# nothing: a log missing or cut short, a group that ran no test, a parameterized test with no case, or no client
# matrix (TLS_FIXTURES_MATRIX_REQUIRED) fails it (TestSummaryTests). With TLS_FIXTURES_CI=1
# (.ci/run) a skip fails the target: CI installs everything, so every test must run there.
# TEST_ENV: set before each test process starts, so no test changes the environment while others read it: a fresh
# store for the run (the documentation examples' default store; each suite makes its own beside it) and no legacy
# helper.
TEST_LOGS := .build/test-logs
TEST_ENV = TLS_FIXTURES_TEST_STORE=$(CURDIR)/$(1)/test-store TLS_FIXTURES_CERTS=$(CURDIR)/$(1)/test-store \
  TLS_FIXTURES_LEGACY_HELPER=none
test: deps lint matrix-test-clients
	@python3 scripts/generate-builtin-scenarios.py --check
	@scripts/ensure-deps.sh test
	swift build --build-tests $(SWIFT_WARNINGS)
	@rm -rf $(TEST_LOGS) .build/test-store && mkdir -p $(TEST_LOGS)
	set -o pipefail; status=0; export $(call TEST_ENV,.build); \
	  swift test --skip-build --filter DocExamplesConsumerTests 2>&1 | tee $(TEST_LOGS)/doc-examples.log || status=1; \
	  TLS_FIXTURES_MATRIX_REQUIRED=1 swift test --skip-build --skip ReliabilitySuite --skip DocExamplesConsumerTests 2>&1 \
	    | tee $(TEST_LOGS)/parallel.log || status=1; \
	  swift test --skip-build --filter ReliabilitySuite 2>&1 | tee $(TEST_LOGS)/reliability.log || status=1; \
	  TLS_FIXTURES_MATRIX_REQUIRED=1 python3 scripts/test-summary.py $(TEST_LOGS)/doc-examples.log \
	    $(TEST_LOGS)/parallel.log $(TEST_LOGS)/reliability.log || status=1; exit $$status

# Release build of the CLI and the in-process benchmark, then scripts/bench/run.py drives them, nginx, openssl s_server
# and wrk (installed by ensure-deps when missing). ARGS passes options through, e.g. ARGS="--only handshake".
# BENCH_CONFIGURATION=debug runs the same harness on the debug build `make test` made: .ci/run does, because bench-quick
# there checks that every section runs and every harness check passes, never a number, and a release build would add
# about 5 of CI's 30 minutes. Its report then says "debug build" at the top; numbers worth reading come from release.
BENCH_CONFIGURATION ?= release
BENCH_BUILD = swift build -c $(BENCH_CONFIGURATION) $(SWIFT_WARNINGS) --product tls-fixtures \
  && swift build -c $(BENCH_CONFIGURATION) $(SWIFT_WARNINGS) --product tls-fixtures-bench
# nginx is in /usr/sbin, which a normal user's PATH may lack. bench-quick is the same run, shortened.
bench bench-quick: deps
	@scripts/ensure-deps.sh bench
	$(BENCH_BUILD)
	PATH="$$PATH:/usr/sbin" python3 scripts/bench/run.py $(if $(filter bench-quick,$@),--quick) --bin .build/$(BENCH_CONFIGURATION) $(ARGS)

# No Mac builds this project's CI here: scripts/lint-darwin.py finds Linux-only Swift (Glibc spellings, /proc,
# posix_spawn initialisers, …) outside branches Darwin never compiles, before the build. Its rules are tested by
# Tests/TLSFixturesTests/Portability/DarwinLintTests.swift. lint-async-blocking.py finds calls that block a thread
# (a child process waited for, a sleep) inside the tests' async code, which runs on the concurrency pool's two threads
# (AsyncBlockingLintTests). check-client-graph.py holds TLSFixturesClient (what iOS test targets link) to Foundation:
# no OpenSSL, no NIO, in `swift package describe` and in its sources' imports (ClientGraphTests tests the checker). check-layers.py holds the library's layer targets to their order and every
# target's imports to its declared dependencies, keeps COpenSSL inside TLSFixturesOpenSSL and the ATS model Foundation
# only (LayerGraphTests tests it). check-toolchain-floor.py holds every manifest and resolved dependency to the Swift the
# README states (ToolchainFloorTests), and actionlint.sh lints the workflows (the macOS one runs nowhere else before
# GitHub does; it installs a pinned actionlint into .build-lint/venv when none is on PATH).
lint:
	@python3 scripts/lint-darwin.py
	@python3 scripts/lint-async-blocking.py
	@python3 scripts/check-client-graph.py
	@python3 scripts/check-layers.py
	@python3 scripts/check-public-docs.py
	@python3 scripts/check-toolchain-floor.py
	@scripts/actionlint.sh

# Apple's URLSession's report card on this Mac and in an iOS Simulator, into docs/apple/ (docs/apple/README.md). Mac only.
apple-report:
	@scripts/apple-report.sh

clean:
	rm -rf .build .build-asan .build-tsan .build-fuzz .build-matrix .build-lint fuzz-out

# --- Client matrix ------------------------------------------------------------------------------------------------
# Every served scenario against every client stack, each stack a report card (`tls-fixtures report --family STACK`,
# its client Matrix/Clients/load.py; scripts/matrix.py runs the reports and renders docs/CLIENTS.md from the cards). The
# Swift clients live in Matrix/, a package of its own built into .build-matrix, so neither the library nor its users
# depend on swift-nio-ssl or AsyncHTTPClient. Products are named because a plain `swift build` there also builds the
# dependencies' example executables. `make test` installs every stack (on macOS: GnuTLS and pyca) and builds the three
# Swift clients (on macOS the swift-nio-ssl one), then ClientMatrixTests runs each stack's card on the controls, the
# refusals and the scenarios where it differs from OpenSSL; `make matrix` runs every scenario on every stack and writes
# the report, with what each fixture recorded of each client beside its verdict: one serve (ports 29800 onwards;
# ARGS="--port-base N" moves them), four reports at a time (ARGS="--jobs N"), every load on a leased fixture of its
# own. Linux only (URLSession needs a private mount namespace).
MATRIX_BUILD = swift build --package-path Matrix --scratch-path .build-matrix $(SWIFT_WARNINGS)
MATRIX_PRODUCTS := matrix-nio-ssl $(if $(filter Darwin,$(shell uname -s)),,matrix-ahc matrix-urlsession)

matrix-test-clients: deps
	@scripts/ensure-deps.sh matrix-test
	@scripts/matrix-python.sh
	for product in $(MATRIX_PRODUCTS); do $(MATRIX_BUILD) --product $$product || exit 1; done

matrix: deps
	@scripts/ensure-deps.sh matrix
	@scripts/matrix-python.sh
	swift build $(SWIFT_WARNINGS) --product tls-fixtures
	for product in matrix-nio-ssl matrix-ahc matrix-urlsession; do $(MATRIX_BUILD) --product $$product || exit 1; done
	python3 scripts/matrix.py --json docs/clients.json --markdown docs/CLIENTS.md $(ARGS)

# --- Legacy OpenSSL (opt-in: not in `make test`, not in CI) ---------------------------------------------------------
# Debian's and Homebrew's OpenSSL 3 have no SSLv3, RC4 or 3DES, so ssl-v3, rc4 and 3des are reported unsupported.
# legacy-openssl builds upstream OpenSSL from Debian's source package (checksums checked against Debian's signed index)
# with enable-ssl3 enable-ssl3-method enable-weak-ssl-ciphers into .build-legacy/, and tls-fixtures against it; serve
# then runs that build as a helper process for those three scenarios. Measured here: 21 minutes on 2 cores shared with
# other builds (OpenSSL 908 s, the helper's release build 326 s), once; later runs only rebuild what changed.
legacy-openssl: deps
	scripts/legacy-openssl.sh

test-legacy: legacy-openssl
	swift build --product tls-fixtures
	scripts/test-legacy.sh

# Scenarios/*.json is the catalog, and the one place a scenario is edited. This target makes everything else from it:
# the library's embedded copy (generated Swift), then the table in docs/scenarios.md (printed by the CLI that embeds
# it). `make test` fails first, naming this target, when the embedded copy is stale, and the suite when the table is.
# Not a SwiftPM build-tool plugin: every Xcode user of the package would have to trust and enable it (CI passes
# -skipPackagePluginValidation), for a file that changes only when a scenario does.
scenarios:
	python3 scripts/generate-builtin-scenarios.py
	swift build --product tls-fixtures
	mkdir -p .build && "$$(swift build --show-bin-path)/tls-fixtures" scenarios list --markdown > .build/scenario-table.md
	python3 scripts/generate-builtin-scenarios.py --table .build/scenario-table.md

# --- Sanitizers -------------------------------------------------------------------------------------------------
# The whole suite (in the same two processes as `make test`) under AddressSanitizer or ThreadSanitizer, each in its own scratch path so .build is never touched.
# Here (2 cores) a cold build takes 1.5 min, up to 4 min while other builds run; the run itself 20-35 s under ASan,
# 45-65 s under TSan. The tests find the CLI next to the test bundle, so every `tls-fixtures` they spawn is
# instrumented too; log_path sends each process's report to .build-*/sanitizer-reports, and
# scripts/sanitizer-reports.sh prints them and fails the target if there is one.
# No test is skipped or gated: all pass under both sanitizers within their normal time limits.
# detect_leaks=0: LeakSanitizer is not usable on this suite. On Linux it cannot see Swift's bit-packed pointers
# (multi-payload enums such as Data's storage, weak-reference side tables), so it reports live objects as leaked
# even for an empty test target (swift-corelibs-xctest#534, llvm-project#56751); and the two real leaks it found
# are in Foundation, not here (Data(contentsOf:) leaks 4 KiB per empty file; PropertyListSerialization leaks its
# CFError per malformed plist: see Fuzz/lsan.supp). The fuzzers check the parsers for leaks instead.
# quarantine_size_mb=64 (ASan's default is 256): freed memory held to catch use after free counts as resident, and
# the reliability tests' memory bound adds exactly this much under ASan (Bounds.addressSanitizerQuarantineMB).
ASAN_TEST_OPTIONS := detect_leaks=0:quarantine_size_mb=64:log_path=$(CURDIR)/.build-asan/sanitizer-reports/asan
TSAN_TEST_OPTIONS := log_path=$(CURDIR)/.build-tsan/sanitizer-reports/tsan

# $(call sanitized_test,SANITIZER,SCRATCH,OPTIONS_VARIABLE,OPTIONS): the suite under one sanitizer, in its own build
# folder, the reliability suite in a process of its own as in `make test`; any report from any process fails it.
# Left to `make test`, which runs them on the same code: DocExamplesConsumerTests (it builds the documentation's examples
# as a user's package with the plain toolchain, so nothing of it runs under the sanitizer) and the live client matrix
# (ClientMatrixTests, OkHttpPinningTests: thirteen stacks' processes, a JVM per load, against fixtures whose code every
# other suite drives under the sanitizer too). Both cost CI minutes twice for no finding of the sanitizer's.
define sanitized_test
	@scripts/ensure-deps.sh test
	swift build --build-tests --sanitize=$(1) --scratch-path $(2) $(SWIFT_WARNINGS)
	@rm -rf $(2)/sanitizer-reports $(2)/test-logs $(2)/test-store && mkdir -p $(2)/sanitizer-reports $(2)/test-logs
	set -o pipefail; export $(call TEST_ENV,$(2)); \
	  $(3)=$(4) swift test --skip-build --sanitize=$(1) --scratch-path $(2) --skip ReliabilitySuite \
	    --skip DocExamplesConsumerTests --skip ClientMatrixTests --skip OkHttpPinningTests \
	    2>&1 | tee $(2)/test-logs/parallel.log \
	  && $(3)=$(4) swift test --skip-build --sanitize=$(1) --scratch-path $(2) --filter ReliabilitySuite \
	    2>&1 | tee $(2)/test-logs/reliability.log; \
	  status=$$?; scripts/sanitizer-reports.sh $(2)/sanitizer-reports || status=1; \
	  python3 scripts/test-summary.py $(2)/test-logs/parallel.log \
	    $(2)/test-logs/reliability.log || status=1; exit $$status
endef

test-asan: deps matrix-test-clients
	$(call sanitized_test,address,.build-asan,ASAN_OPTIONS,$(ASAN_TEST_OPTIONS))

test-tsan: deps matrix-test-clients
	$(call sanitized_test,thread,.build-tsan,TSAN_OPTIONS,$(TSAN_TEST_OPTIONS))

# --- Fuzzing ----------------------------------------------------------------------------------------------------
# Two libFuzzer targets in Fuzz/, a package of its own that depends on this one by path (so `swift build` here never
# sees -sanitize=fuzzer): FuzzScenarioDecoder (ScenarioCatalog.decode, then profile and JSON round trip) and
# FuzzATSPlist (ATSPolicy.parse / init(infoPlist:) / init(atsDictionary:), then warnings, rendering, requirements).
# Each runs FUZZ_SECONDS; its corpus grows in fuzz-out/NAME/corpus (git-ignored) from the seeds: Scenarios/*.json,
# Fuzz/Seeds/ats-plist (Fuzz/make-plist-seeds.py) and the saved regression inputs in Tests/TLSFixturesTests/Fuzz/Inputs.
# A crash, leak or hang stops the target and leaves its input in fuzz-out/NAME/: fix it, copy the input to
# Tests/TLSFixturesTests/Fuzz/Inputs/NAME/ (FuzzRegressionTests picks it up), and replay it with
# `SWIFT_BACKTRACE=enable=no .build-fuzz/debug/FuzzScenarioDecoder FILE`. FUZZ_FLAGS adds libFuzzer options.
# -Xswiftc -sanitize=fuzzer,address: the Swift driver keeps only the LAST -sanitize= it is given, so SwiftPM's
# `--sanitize=fuzzer --sanitize=address` alone compiles Swift code with ASan but without coverage (libFuzzer then sees
# only the C targets and finds nothing). The --sanitize flags still matter for the C targets and the link.
# SWIFT_BACKTRACE=enable=no: Swift's crash backtracer reads the stack in a way ASan reports as an error of its own,
# hiding the real trap; with it off, libFuzzer's handler reports the crash and saves the input.
# FuzzATSPlist runs with -detect_leaks=0: every malformed plist leaks a CFError inside Foundation (suppressed in
# Fuzz/lsan.supp), and libFuzzer then runs a full leak scan after each such input, which cuts the rate ~15-fold
# (40 vs 640 executions a second here). For a slow leak-checked pass: make fuzz FUZZ_FLAGS=-detect_leaks=1.
FUZZ_SECONDS ?= 60
FUZZ_FLAGS ?=
FUZZ_BIN := .build-fuzz/debug
FUZZ_ENV := SWIFT_BACKTRACE=enable=no LSAN_OPTIONS=suppressions=$(CURDIR)/Fuzz/lsan.supp:print_suppressions=0
FUZZ_COMMON := -timeout=10 -rss_limit_mb=4096 -max_len=16384 -print_final_stats=1 -max_total_time=$(FUZZ_SECONDS)

fuzz-build: deps
	@if [ "$$(uname -s)" = Darwin ]; then echo "make fuzz is Linux only: Xcode's Swift has no libFuzzer (-sanitize=fuzzer)" >&2; exit 1; fi
	swift build --package-path Fuzz -c debug --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address \
	  --scratch-path .build-fuzz

fuzz: fuzz-build
	@mkdir -p fuzz-out/scenario/corpus fuzz-out/ats-plist/corpus
	$(FUZZ_ENV) $(FUZZ_BIN)/FuzzScenarioDecoder $(FUZZ_COMMON) -dict=Fuzz/scenario.dict $(FUZZ_FLAGS) \
	  -artifact_prefix=fuzz-out/scenario/ fuzz-out/scenario/corpus Scenarios Tests/TLSFixturesTests/Fuzz/Inputs/scenario
	$(FUZZ_ENV) $(FUZZ_BIN)/FuzzATSPlist $(FUZZ_COMMON) -detect_leaks=0 -dict=Fuzz/ats-plist.dict $(FUZZ_FLAGS) \
	  -artifact_prefix=fuzz-out/ats-plist/ fuzz-out/ats-plist/corpus Fuzz/Seeds/ats-plist \
	  Tests/TLSFixturesTests/Fuzz/Inputs/ats-plist
