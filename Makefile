# sluice: an MCP gateway in C.
#
#   make            build build/sluice (installs build dependencies if missing)
#   make run        build and serve the demo config (examples/demo.json) on
#                   http://127.0.0.1:8370/mcp (HTTP=host:port elsewhere; STDIO=1 on stdio)
#   make test       install what is missing, build, run every test; ends "N passed, N failed"
#   make bench      benchmarks (numbers, not pass/fail)
#   make soak       60 s of 50 concurrent HTTP sessions; a markdown report (SOAK_SECONDS, SOAK_SESSIONS)
#   make attack     hostile peers against one HTTP gateway, ATTACK_SECONDS (5) each; a table,
#                   fails when a token holder was not served or RSS passed the budget (ATTACK_REPORT=file.md)
#   make install PREFIX=/usr/local   the binary, sluice(1) and the bash completion
#   make deb        build/sluice_<version>_<arch>.deb (dpkg-buildpackage; docs/PACKAGING.md)
#   make test-deb   build it, lintian, install it into a throw-away root, serve, call a tool
#   make release    build/release/: the source tarball, the .deb and the image of this commit, SHA256SUMS
#                   (a clean tree only; docs/RELEASES.md)
#   make image      build/image: an OCI image (Debian 12 libraries, build/sluice), offline and
#                   reproducibly; prints its digest and size (scripts/image.sh; docs/CONTAINERS.md)
#   make test-image run it with crun as Kubernetes would, with deploy/seccomp/sluice.json
#                   and with the default profile; doctor, tools, execute_code over HTTP
#   make docs       docs/CONFIG.md from the config key tables (a unit test checks it is current)
#   make test SAN=address,undefined    the same under ASan and UBSan (separate build dir)
#   make fuzz [FUZZ_SECONDS=30] [FUZZ_TARGETS="jsonrpc config"] [FUZZ_JOBS=1]
#                   libFuzzer targets of tests/fuzz/ (clang, ASan, UBSan; build/fuzz),
#                   one per core side by side

VERSION  := 0.1.0
# The commit a build is made from (docs/RELEASES.md): a COMMIT file's (what a
# release tarball carries, and the Debian package's build tree), else git's,
# "-dirty" when the tree has changes; "unknown" without either.
COMMIT   := $(shell { cat COMMIT 2>/dev/null || git describe --always --dirty --abbrev=12 --match=- 2>/dev/null || echo unknown; } | head -n1 | tr -cd '0-9a-zA-Z.+_-')
# Parallel by default, one job per core: a -j on the command line wins, and
# sub-makes (make fuzz's, make run's) share the top make's jobs. Not when
# cleaning, which must not race the build it precedes.
ifeq ($(MAKELEVEL)$(filter clean,$(MAKECMDGOALS)),0)
MAKEFLAGS += -j$(shell nproc)
endif
PREFIX   ?= /usr/local
CC       ?= cc
SAN      ?=
OPT      ?= -O2

BUILD    := build
TP       := $(BUILD)/third_party
# FUZZ=1 (set by `make fuzz` for its own sub-make): the library built by
# clang with coverage for libFuzzer, ASan and UBSan, in build/fuzz.
ifneq ($(FUZZ),)
override CC  := clang
override SAN := fuzzer-no-link,address,undefined
endif
OUT      := $(BUILD)$(if $(FUZZ),/fuzz,$(if $(SAN),/san))
OBJ      := $(OUT)/obj

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wpointer-arith -Wformat=2 -Wno-unused-parameter
# clang counts libseccomp's SCMP_A0(...) compound literal as missing fields.
WARN     += $(if $(findstring clang,$(CC)),-Wno-missing-field-initializers)
CFLAGS   := -std=c11 -D_GNU_SOURCE $(OPT) -g $(WARN) -Isrc -I$(TP)/yyjson/src -I$(TP)/quickjs-ng \
            -DSL_VERSION=\"$(VERSION)\" -MMD -MP
# Segments aligned to 2 MiB, so that the zygote can hold sluice's code in one
# huge page (src/sandbox/zygote.c, docs/internals/SANDBOX.md "The floor, third pass").
LDFLAGS  := -Wl,-z,now,-z,relro,-z,max-page-size=0x200000
LDLIBS   := -luv -lhiredis -lmicrohttpd -lgnutls -lseccomp -lpcre2-8 -lnettle -lm
# Packagers' flags, added to ours (debian/rules passes dpkg-buildflags').
CFLAGS   += $(EXTRA_CFLAGS)
LDFLAGS  += $(EXTRA_LDFLAGS)
ifneq ($(SAN),)
CFLAGS   += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=$(SAN)
endif
# Third-party code is compiled as shipped, with its own warnings left alone.
TPFLAGS  := -std=c11 -D_GNU_SOURCE $(OPT) -g -w $(EXTRA_CFLAGS) \
            $(if $(SAN),-fsanitize=$(SAN) -fno-omit-frame-pointer)

# (Under -j the setup target and the two stamps may start together:
# scripts/setup.sh takes a lock, so its runs follow one another.)
SETUP_STAMP := $(TP)/yyjson/.pinned

# The gateway: everything under src/ except main.c forms a library that unit
# tests link against, but for the sandbox's own executable (its main, and
# the object that embeds it, both below).
SANDBOX_MAIN := src/sandbox/main.c
IMAGE_SRC := src/sandbox/image.c
LIB_SRC  := $(filter-out $(SANDBOX_MAIN) $(IMAGE_SRC),$(sort $(wildcard src/*/*.c)))
IMAGE_O  := $(OBJ)/src/sandbox/image.o
LIB_OBJ  := $(LIB_SRC:%.c=$(OBJ)/%.o)
YYJSON_O := $(OBJ)/third_party/yyjson.o
# The JS engine of code mode: quickjs-ng without its std/os library.
QJS_SRC  := quickjs.c libregexp.c libunicode.c dtoa.c
QJS_O    := $(QJS_SRC:%.c=$(OBJ)/third_party/quickjs-ng/%.o)
SLUICE   := $(OUT)/sluice
# TypeScript in code mode: sucrase, bundled by esbuild (both pinned in
# scripts/deps/stripper, installed into build/stripper by scripts/setup.sh),
# compiled to bytecode by the very engine that loads it (scripts/stripper/).
STRIP_NM := $(BUILD)/stripper/node_modules/.package-lock.json
STRIP_JS := $(BUILD)/stripper/strip.js
GEN      := $(OUT)/gen
JSBC     := $(GEN)/jsbc
STRIP_O  := $(OBJ)/gen/stripper.o
# Code mode's host APIs in JavaScript (src/sandbox/runtime.js), compiled to
# bytecode by the same tool.
RT_O     := $(OBJ)/gen/runtime.o
COMMIT_O := $(OBJ)/gen/commit.o

.PHONY: all run test unit e2e bench soak attack install clean setup fuzz docs man deb test-deb \
	release print-commit FORCE image test-image
all: $(SLUICE)

$(SETUP_STAMP): scripts/deps/pins
	bash scripts/setup.sh build
	@touch $@

setup:
	bash scripts/setup.sh

$(OBJ)/%.o: %.c | $(SETUP_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(YYJSON_O): $(SETUP_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(TPFLAGS) -c $(TP)/yyjson/src/yyjson.c -o $@

# Under FUZZ=1 the JS engine gets no coverage counters: no fuzz target runs
# JavaScript in-process, and libFuzzer scans every counter after each run.
comma    := ,
$(OBJ)/third_party/quickjs-ng/%.o: $(SETUP_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(subst fuzzer-no-link$(comma),,$(TPFLAGS)) -c $(TP)/quickjs-ng/$*.c -o $@

$(STRIP_NM): scripts/deps/stripper/package.json scripts/deps/stripper/package-lock.json
	bash scripts/setup.sh stripper
	@touch $@

$(STRIP_JS): scripts/stripper/entry.js scripts/stripper/bundle.mjs $(STRIP_NM)
	node scripts/stripper/bundle.mjs $(BUILD)/stripper/node_modules $< $@

# A build-time tool, linked with the engine's objects (under SAN too: no
# leak report from a tool that exits at once).
$(JSBC): scripts/stripper/jsbc.c $(QJS_O)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lm

$(GEN)/stripper.c: $(STRIP_JS) $(JSBC)
	ASAN_OPTIONS=detect_leaks=0 $(JSBC) sl_stripper_bc $< $@

$(STRIP_O): $(GEN)/stripper.c
	@mkdir -p $(dir $@)
	$(CC) $(subst fuzzer-no-link$(comma),,$(TPFLAGS)) -c $< -o $@

$(GEN)/runtime.c: src/sandbox/runtime.js $(JSBC)
	ASAN_OPTIONS=detect_leaks=0 $(JSBC) sl_runtime_bc $< $@

$(RT_O): $(GEN)/runtime.c
	@mkdir -p $(dir $@)
	$(CC) $(subst fuzzer-no-link$(comma),,$(TPFLAGS)) -c $< -o $@

# Rewritten only when the commit changes: a new commit relinks, nothing more.
$(GEN)/commit.c: FORCE
	@mkdir -p $(dir $@)
	@printf 'const char sl_build_commit[] = "%s";\n' '$(COMMIT)' > $@.tmp
	@if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi

# For scripts (deb.sh, release.sh): the commit a build from this tree carries.
print-commit:
	@echo '$(COMMIT)'

$(COMMIT_O): $(GEN)/commit.c
	@mkdir -p $(dir $@)
	$(CC) $(TPFLAGS) -c $< -o $@

$(OUT)/libsluice.a: $(LIB_OBJ) $(YYJSON_O) $(QJS_O) $(STRIP_O) $(RT_O) $(COMMIT_O)
	@rm -f $@
	ar rcs $@ $^

# The sandbox's own executable (src/sandbox/image.h): the zygote and its
# workers, linked statically from the same library with only what they run,
# position-independent (its address is random like sluice's), stripped, and
# embedded in sluice. Its segments are 2 MiB aligned like sluice's, for the
# same reason. Sanitizer builds have none (their runtimes cannot be linked
# statically): their zygote is sluice itself, the same code.
ifeq ($(SAN),)
SANDBOX  := $(OUT)/sluice-sandbox
$(SANDBOX): $(OBJ)/src/sandbox/main.o $(OUT)/libsluice.a
	$(CC) -static-pie -s $(LDFLAGS) -o $@ $^ -lseccomp -lnettle -lm

$(IMAGE_O): $(IMAGE_SRC) $(SANDBOX)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DSL_SANDBOX_IMAGE='"$(SANDBOX)"' -c $< -o $@
endif

$(SLUICE): $(OBJ)/src/main.o $(IMAGE_O) $(OUT)/libsluice.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

include tests/servers/catalog/catalog.mk
include tests/unit/unit.mk
include tests/fuzz/fuzz.mk

# Tests: C unit tests, then end-to-end tests with the official MCP SDK.
test: setup $(SLUICE) $(TEST_BINS)
	@SLUICE=$(abspath $(SLUICE)) CATALOG=$(abspath $(CATALOG)) UNIT=$(abspath $(UNIT)) \
		SAN=$(SAN) bash tests/run.sh

# make run serves the demo over HTTP on $(HTTP); make run STDIO=1 on stdio.
HTTP     ?= 127.0.0.1:8370
# The script sets up, builds (with this make) and serves, a numbered step each.
run:
	@SLUICE_HTTP=$(if $(STDIO),,$(HTTP)) MAKE="$(MAKE)" bash scripts/run-demo.sh $(SLUICE) $(CATALOG)

bench: setup $(SLUICE) $(CATALOG)
	@SLUICE=$(abspath $(SLUICE)) CATALOG=$(abspath $(CATALOG)) bash bench/run.sh

# Fails on an unexpected answer or on RSS/fd growth after warm-up (tests/soak/soak.mjs).
soak: setup $(SLUICE) $(CATALOG)
	@SLUICE=$(abspath $(SLUICE)) CATALOG=$(abspath $(CATALOG)) node tests/soak/soak.mjs

# Slowloris, body flood, detached streams, backlog, deep JSON, program flood, token flood,
# token churn, program slots
# (tests/attack/attack.mjs); its 2,000 sockets need the open-file limit raised.
attack: setup $(SLUICE) $(CATALOG)
	@ulimit -n 20000 2>/dev/null || ulimit -n $$(ulimit -Hn); \
		SLUICE=$(abspath $(SLUICE)) CATALOG=$(abspath $(CATALOG)) node tests/attack/attack.mjs

docs: $(SLUICE)
	$(SLUICE) config-reference > docs/CONFIG.md

# sluice(1) and the bash completion, both from `sluice --help` (scripts/helpdoc.sh).
MAN      := $(OUT)/sluice.1
BASHCOMP := $(OUT)/sluice.bash
man: $(MAN) $(BASHCOMP)
$(MAN): $(SLUICE) scripts/helpdoc.sh
	bash scripts/helpdoc.sh man $(SLUICE) > $@.tmp && mv $@.tmp $@
$(BASHCOMP): $(SLUICE) scripts/helpdoc.sh
	bash scripts/helpdoc.sh bash $(SLUICE) > $@.tmp && mv $@.tmp $@

install: $(SLUICE) $(MAN) $(BASHCOMP)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 755 $(SLUICE) $(DESTDIR)$(PREFIX)/bin/sluice
	install -m 644 $(MAN) $(DESTDIR)$(PREFIX)/share/man/man1/sluice.1
	install -m 644 $(BASHCOMP) $(DESTDIR)$(PREFIX)/share/bash-completion/completions/sluice

# The Debian package, built by dpkg-buildpackage in a copy of the tree under
# build/deb (with the sources and the stripper setup fetched, so the package
# build needs no network), then copied to build/ (scripts/deb.sh).
# (scripts/deb.sh runs scripts/setup.sh build itself; test-deb needs the
# test dependencies too: the MCP server and the SDK client it runs.)
# dpkg-buildpackage sets its own jobs (DEB_JOBS), not this make's.
deb:
	@env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL bash scripts/deb.sh build

test-deb: setup deb
	@bash scripts/deb.sh test

release:
	@env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL bash scripts/release.sh

# The OCI image, one layer from Debian 12's packages and this build
# (scripts/image.sh: mmdebstrap, umoci; packages cached in build/image-cache).
image: $(SLUICE)
	@bash scripts/image.sh build

# Unpacked and run by crun, driven by the SDK client (tests/image/run.mjs).
test-image: setup image $(CATALOG)
	@CATALOG=$(abspath $(CATALOG)) bash scripts/image.sh test

clean:
	rm -rf $(OUT)/obj $(OUT)/gen $(OUT)/sluice $(OUT)/sluice-sandbox $(OUT)/libsluice.a $(OUT)/tests $(MAN) $(BASHCOMP)

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
