# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# urdma: a software RoCEv2 RDMA adapter (kernel module + rdma-core provider).
# Run "make help" for the targets.

SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

# The kernel to build for.  Default: the running kernel if its headers are
# installed, else Debian's 6.12 headers (linux-headers-6.12-amd64).
KVER_RUNNING := $(shell uname -r)
KVER_612 := $(notdir $(lastword $(sort $(wildcard /lib/modules/6.12.*-amd64))))
KVER_61 := $(notdir $(lastword $(sort $(wildcard /lib/modules/6.1.*-amd64))))
ifneq ($(wildcard /lib/modules/$(KVER_RUNNING)/build/Makefile),)
KVER ?= $(KVER_RUNNING)
else
KVER ?= $(KVER_612)
endif

# The debug kernel is built in the cache by scripts/build-debug-kernel.sh.
DEBUG_DIR = $(shell $(TOP)/scripts/build-debug-kernel.sh --print-dir)
DEBUG_KVER = $(shell cat $(DEBUG_DIR)/kernelrelease 2>/dev/null)

ifeq ($(KVER),debug)
override KVER := $(DEBUG_KVER)
KDIR ?= $(DEBUG_DIR)/src
ifeq ($(KVER),)
$(error the debug kernel is not built: run "make debug-kernel" first)
endif
endif
KDIR ?= /lib/modules/$(KVER)/build

# Each kernel gets its own out-of-tree build directory, so builds for
# several kernels can coexist.
BUILD := $(TOP)/build
KBUILD_DIR = $(BUILD)/$(KVER)
KSRC := Kbuild $(shell find kernel uapi tests/kunit -name '*.[ch]' 2>/dev/null)

.PHONY: all modules modules-all provider tests bench install install-module \
	install-userland uninstall demo check soak checkpatch sparse debug-kernel \
	deps deb clean help

all: modules

help:
	@echo 'urdma make targets'
	@echo
	@echo '  make                 build urdma.ko for KVER (default: $(KVER))'
	@echo '  make modules KVER=V  build for kernel V (V=debug: the debug kernel)'
	@echo '  make modules-all     build for Debian 6.12, Debian 6.1 and debug'
	@echo '  make provider        fetch rdma-core 56.1, add liburdma, build it'
	@echo '  make tests           build the C++ test programs (tests/verbs)'
	@echo '  make install         install urdma.ko for the running kernel and'
	@echo '                       the rdma-core userland (run as root; the'
	@echo '                       test guests run it in their overlay)'
	@echo '  make install-module  only the kernel module (+ depmod)'
	@echo '  make install-userland only rdma-core 56.1 with liburdma'
	@echo '  make demo            install deps, build, boot a guest, show urdma0, move data'
	@echo '  make check           every test lane; ends with "N passed, N failed"'
	@echo '  make soak            the fuzz lane for SOAK_SECONDS (default 900) per'
	@echo '                       fuzzer, not 40 as in make check'
	@echo '  make bench           urdma, rxe, siw, TCP; clients; two guests'
	@echo '                       side by side in one guest;'
	@echo '                       writes docs/bench/ (BENCH_ARGS=--quick: smoke)'
	@echo '  make deb             Debian 12 packages for a real machine, in build/deb/:'
	@echo '                       urdma-dkms, ibverbs-provider-urdma and rdma-core'
	@echo '                       56.1 (README: "Install on your machines")'
	@echo '  make checkpatch      checkpatch.pl --strict on the kernel sources'
	@echo '  make sparse          sparse (C=1) build against 6.12'
	@echo '  make debug-kernel    build the KASAN/lockdep/KUnit kernel (cached)'
	@echo '  make deps            install the Debian packages needed here'
	@echo '  make clean           remove build/'
	@echo
	@echo 'Variables: KVER, KDIR, URDMA_CACHE (default /var/cache/urdma),'
	@echo '           LANES (make check: subset of lanes, e.g. "build kunit";'
	@echo '           lanes: build dkms provider deb kunit guest-6.12 guest-6.1'
	@echo '           guest-debug fuzz twohost bench)'
	@echo
	@echo 'Guests: scripts/urdma-vm (one guest), scripts/urdma-2host (two guests on'
	@echo '        a Unix-socket network); each takes --help.'

deps:
	@$(TOP)/scripts/deps.sh

# ---- kernel module ------------------------------------------------------

$(KBUILD_DIR)/.synced: $(KSRC)
	@mkdir -p $(KBUILD_DIR)
	@rsync -a --relative $(KSRC) $(KBUILD_DIR)/
	@touch $@

modules: $(KBUILD_DIR)/.synced
	@test -f $(KDIR)/Makefile || { echo "no kernel build tree at $(KDIR)" \
		"(install linux-headers-$(KVER), or run make deps)"; exit 1; }
	$(MAKE) -C $(KDIR) M=$(KBUILD_DIR) modules
	@echo "built $(KBUILD_DIR)/urdma.ko for $(KVER)"

modules-all:
	$(MAKE) modules KVER=$(KVER_612)
	$(MAKE) modules KVER=$(KVER_61)
	$(MAKE) debug-kernel
	$(MAKE) modules KVER=debug

sparse: $(KBUILD_DIR)/.synced
	$(MAKE) -C $(KDIR) M=$(KBUILD_DIR) C=2 modules

checkpatch:
	@$(TOP)/scripts/checkpatch.sh

debug-kernel:
	@$(TOP)/scripts/build-debug-kernel.sh

# ---- userland -----------------------------------------------------------

provider:
	@$(TOP)/scripts/rdma-core.sh build

tests: provider
	@$(TOP)/scripts/build-tests.sh

# ---- install (on a real host, or inside a test guest) --------------------

MODDIR = $(DESTDIR)/lib/modules/$(KVER_RUNNING)/updates

install: install-module install-userland

# DEPMOD_PREBUILT: a module index made on the host by
# scripts/depmod-prebuilt.sh for exactly these modules (the test guests use
# it: depmod inside a TCG guest takes minutes).  Without it, run depmod.
DEPMOD_PREBUILT ?=
MODULES_TO_INSTALL = $(wildcard $(BUILD)/$(KVER_RUNNING)/urdma.ko \
	$(BUILD)/$(KVER_RUNNING)/urdma_kunit.ko)

install-module:
	@test -f $(BUILD)/$(KVER_RUNNING)/urdma.ko || { echo "no urdma.ko" \
		"for $(KVER_RUNNING): run make modules KVER=$(KVER_RUNNING)"; exit 1; }
	install -d $(MODDIR)
	install -m 644 $(MODULES_TO_INSTALL) $(MODDIR)/
	@if [ -n "$(DEPMOD_PREBUILT)" ] && for m in $(MODULES_TO_INSTALL); do \
		cmp -s $$m $(DEPMOD_PREBUILT)/updates/$$(basename $$m) || exit 1; \
	    done; then \
		echo "using the module index prebuilt in $(DEPMOD_PREBUILT)"; \
		for f in $(DEPMOD_PREBUILT)/modules.*; do \
			t=$(DESTDIR)/lib/modules/$(KVER_RUNNING)/$$(basename $$f); \
			[ $$f -ef $$t ] || cp $$f $$t || exit 1; \
		done; \
	else \
		echo depmod -a $(KVER_RUNNING); depmod -a $(KVER_RUNNING); \
	fi

install-userland:
	@$(TOP)/scripts/rdma-core.sh install

uninstall:
	rm -f $(MODDIR)/urdma.ko $(MODDIR)/urdma_kunit.ko
	depmod -a $(KVER_RUNNING)

# ---- demo and tests -------------------------------------------------------

demo:
	@$(TOP)/scripts/demo.sh

check:
	@$(TOP)/scripts/check.sh $(LANES)

# The fuzz lane for SOAK_SECONDS per fuzzer (make check: 40).
SOAK_SECONDS ?= 900
soak:
	@$(TOP)/scripts/build-debug-kernel.sh
	@URDMA_FUZZ_LANE_SECONDS=$(SOAK_SECONDS) $(TOP)/scripts/check.sh provider fuzz

deb:
	@$(TOP)/scripts/deb.sh

bench: tests
	@$(TOP)/scripts/bench.sh $(BENCH_ARGS)

clean:
	rm -rf $(BUILD)
