# hat — Harness-Aware Training toolkit.
#   make            build libhat.a and every program into bin/
#   make check      build and run all tests; ends with "N passed, N failed"
#   make demo       run the bundled example end to end
#   make bench      benchmarks, JSON lines on stdout
#   make install PREFIX=/usr/local
#   make SAN=1      ASan+UBSan build (objects in build/san, programs in build/san/bin)
# On a fresh Debian machine the first build installs the -dev packages it
# needs (apt-get as root; otherwise it prints the command and stops).

PREFIX  ?= /usr/local
CC      ?= cc
OPT     ?= -O2
SAN     ?= 0

DEB_PKGS := build-essential pkg-config libjansson-dev zlib1g-dev libarchive-dev \
            libreadline-dev libopenblas-dev libpcre2-dev libutf8proc-dev \
            libmicrohttpd-dev libcurl4-openssl-dev gnuplot-nox jq libyajl-dev libmimalloc-dev \
            libdnnl-dev
PC_LIBS  := jansson zlib libarchive readline openblas libpcre2-8 libutf8proc libmicrohttpd libcurl yajl

ifeq ($(SAN),1)
  VARIANT  := san
  BIN      := build/san/bin
  SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
  VARIANT  := rel
  BIN      := bin
  SANFLAGS :=
endif
BUILD := build/$(VARIANT)

PC_CFLAGS = $(shell pkg-config --cflags $(PC_LIBS) 2>/dev/null)
PC_LDLIBS = $(shell pkg-config --libs $(PC_LIBS) 2>/dev/null)

CFLAGS   ?= $(OPT) -g
CFLAGS   += -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -fopenmp -Icommon -Ikernels \
            -MMD -MP $(SANFLAGS) $(PC_CFLAGS) \
            -DHAT_DATADIR='"$(PREFIX)/share/hat"'
LDFLAGS  += -fopenmp $(SANFLAGS)
LDLIBS   += $(PC_LDLIBS) -ldnnl -lm -lpthread

LIB_SRC  := $(wildcard common/*.c) $(wildcard kernels/cpu/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libhat.a
PROGS    := $(patsubst cmd/%.c,$(BIN)/%,$(wildcard cmd/*.c))
UNIT     := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
DEPS_OK  := build/.deps-ok

# `make` alone builds every program (the CUDA rules below would otherwise
# come first and be the default).
.DEFAULT_GOAL := all

# --- CUDA back end (kernels/cuda/; man 7 hat, GPU) ------------------------
#   CUDA=auto  (default) on when nvcc is found (PATH, then /usr/local/cuda/bin)
#              and a GPU is usable (nvidia-smi lists one): compiling the
#              kernels takes ~15 minutes on 2 cores, wasted where no GPU runs them
#   CUDA=1     required (stop if nvcc is missing);  CUDA=0  off
# CUDA=1 builds on machines without a GPU; the programs still start there (the
# CUDA runtime finds no driver and device_available() says 0).  SAN=1
# leaves it off unless CUDA=1 is given: ASan's shadow memory and the CUDA
# driver's address-space reservations collide on GPU machines.
# kernels/cuda/*.c (the --device parsing) is plain C and always built.
CUDA      ?= auto
NVCC      ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
GPU_SEEN  := $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU' && echo 1)
NVCC_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
ifeq ($(CUDA),1)
  ifeq ($(NVCC),)
    $(error CUDA=1 but nvcc was not found (PATH or /usr/local/cuda/bin))
  endif
  HAVE_CUDA := 1
  CUDA_WHY  := CUDA=1
else ifeq ($(CUDA),auto)
  HAVE_CUDA := $(if $(NVCC),$(if $(GPU_SEEN),$(if $(filter 1,$(SAN)),0,1),0),0)
  CUDA_WHY  := $(if $(NVCC),$(if $(GPU_SEEN),$(if $(filter 1,$(SAN)),SAN=1; CUDA=1 SAN=1 forces it,auto: nvcc and a GPU),no GPU seen; CUDA=1 builds it anyway),nvcc not found; CUDA=1 to require it)
else
  HAVE_CUDA := 0
  CUDA_WHY  := CUDA=$(CUDA)
endif
LIB_SRC   += $(wildcard kernels/cuda/*.c)
LIB_OBJ   += $(patsubst %.c,$(BUILD)/%.o,$(wildcard kernels/cuda/*.c))
GPU_BENCH := $(BUILD)/gpu/bench
# Every object depends on the flags it is built with (git's GIT-CFLAGS):
# FLAGS_STAMP's rule below rewrites it whenever the compiler, its flags
# or the CUDA setting change, so no stale object survives a change.
FLAGS_STAMP := $(BUILD)/flags.stamp
ifeq ($(HAVE_CUDA),1)
  CUDA_HOME   := $(patsubst %/bin/nvcc,%,$(NVCC))
  CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib))
  NVCCFLAGS   ?= -O3
  NVCCFLAGS   += -std=c++17 $(NVCC_ARCH) -lineinfo -Icommon -Ikernels -DHAT_CUDA \
                 -Xcompiler -Wall,-Wextra,-Wno-unused-parameter
  CFLAGS      += -DHAT_CUDA
  LDFLAGS     += -Wl,--as-needed
  LDLIBS      += -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcudart -lcublas -lcublasLt -lnccl -lstdc++
  CUDA_OBJ    := $(patsubst %.cu,$(BUILD)/%.cu.o,$(wildcard kernels/cuda/*.cu))
  LIB_OBJ     += $(CUDA_OBJ)
  $(if $(MAKELEVEL:0=),,$(info hat: CUDA back end ON ($(CUDA_WHY)): $(NVCC), $(shell $(NVCC) --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), libs in $(CUDA_LIBDIR)))
else
  $(if $(MAKELEVEL:0=),,$(info hat: CUDA back end off ($(CUDA_WHY))))
endif
$(BUILD)/%.cu.o: %.cu $(FLAGS_STAMP) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -MF $(@:.o=.d) -c -o $@ $<
$(LIB_OBJ) $(PROGS:$(BIN)/%=$(BUILD)/cmd/%.o) $(UNIT:$(BUILD)/tests/%=$(BUILD)/tests/unit/%.o) \
  $(BUILD)/tests/gpu/bench.o: $(FLAGS_STAMP)
$(GPU_BENCH): $(BUILD)/tests/gpu/bench.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)
.PHONY: gpu-bench
gpu-bench: $(GPU_BENCH)
# --- end of the CUDA block ------------------------------------------------

# Without it the AVX2 clones of vecmath.h's exp loops stay scalar (its
# header comment says why); nothing here reads FP exception flags.
KERNEL_CFLAGS := -fno-trapping-math
BUILD_FLAGS := $(CC) $(CFLAGS) | kernels $(KERNEL_CFLAGS) | nvcc $(HAVE_CUDA) $(NVCCFLAGS)
$(FLAGS_STAMP): FORCE
	@mkdir -p $(dir $@); flags='$(subst ','\'',$(BUILD_FLAGS))'; \
	  [ "$$(cat $@ 2>/dev/null)" = "$$flags" ] || printf '%s\n' "$$flags" > $@
.PHONY: FORCE

.PHONY: all check demo bench install deps clean help
all: $(PROGS)

# --- dependencies -----------------------------------------------------
deps: $(DEPS_OK)
# Checked again when the Makefile changes: a package added to DEB_PKGS is
# installed on a machine that built before it was listed.
$(DEPS_OK): Makefile
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "deps: installing$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "deps: missing Debian packages; run:"; \
	    echo "  sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi; mkdir -p build && touch $@

# --- build ------------------------------------------------------------
$(BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/kernels/cpu/%.o: CFLAGS += $(KERNEL_CFLAGS)

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN)/%: $(BUILD)/cmd/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# judge(1) makes and frees hundreds of small jansson values per scored line;
# mimalloc, linked in, serves every malloc of the process (jansson's too)
# about twice as fast as glibc's.  Not under ASan, which brings its own.
ifneq ($(SAN),1)
$(BIN)/judge: LDLIBS += -lmimalloc
endif

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# --- tests, demo, bench -------------------------------------------------
check: $(PROGS) $(UNIT)
	@HAT_BIN=$(CURDIR)/$(BIN) HAT_UNIT=$(CURDIR)/$(BUILD)/tests HAT_SAN=$(SAN) tests/run.sh

demo: $(PROGS)
	@$(MAKE) --no-print-directory -C examples demo HAT_BIN=$(CURDIR)/$(BIN)

# The peers (pip's torch, transformers, tokenizers) live in a venv of the
# build tree, made here the first time (tests/venv.sh); without it (no
# network) the benches still run and say the peer is absent.
# bench_gemm: hat's matmuls at a training step's shapes (the MFU's peak).
BENCH_GEMM := $(BUILD)/bench/gemm
$(BENCH_GEMM): $(BUILD)/tests/bench_gemm.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)
# bench_fma: the cores' fp32 multiply-add peak (what no GEMM can beat).
BENCH_FMA := $(BUILD)/bench/fma
$(BENCH_FMA): $(BUILD)/tests/bench_fma.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $<
bench: $(PROGS) $(BENCH_GEMM) $(BENCH_FMA) $(if $(filter 1,$(HAVE_CUDA)),$(GPU_BENCH))
	@tests/venv.sh --make >/dev/null || true
	@HAT_BIN=$(CURDIR)/$(BIN) HAT_BENCH_GEMM=$(CURDIR)/$(BENCH_GEMM) HAT_BENCH_FMA=$(CURDIR)/$(BENCH_FMA) tests/bench.sh

# --- fuzzing (tests/fuzz/, man 7 hat LIMITS) ------------------------------
# make fuzz [FUZZ_SECONDS=N] [FUZZ=name,...]: each tests/fuzz/fuzz_NAME.c is
# built with clang + libFuzzer against the library compiled into build/fuzz
# (ASan+UBSan, coverage), then run N seconds per target from a scratch copy
# of tests/fuzz/corpus/NAME/; one JSON line per target.  Needs the Debian
# packages clang, libclang-rt-14-dev (libFuzzer) and libomp-14-dev.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := build/fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS   = -O1 -g -std=gnu11 -D_GNU_SOURCE -Wno-pass-failed -Wno-macro-redefined -fopenmp -Icommon -Ikernels -MMD -MP \
                $(FUZZ_SAN) $(PC_CFLAGS) -DHAT_DATADIR='"$(PREFIX)/share/hat"'
FUZZ_OBJ     := $(LIB_SRC:%.c=$(FUZZ_BUILD)/%.o)
FUZZ_PROGS   := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(wildcard tests/fuzz/fuzz_*.c))

$(FUZZ_BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
$(FUZZ_BUILD)/libhat.a: $(FUZZ_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_BUILD)/libhat.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Itests/fuzz -o $@ $< $(FUZZ_BUILD)/libhat.a \
	  $(PC_LDLIBS) -lm -lpthread
.PHONY: fuzz
fuzz: $(FUZZ_PROGS)
	@FUZZ_BIN=$(CURDIR)/$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(subst $(comma), ,$(FUZZ))
comma := ,
-include $(FUZZ_OBJ:.o=.d) $(FUZZ_PROGS:=.d)

# --- install ------------------------------------------------------------
install: $(PROGS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	           $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man7 \
	           $(DESTDIR)$(PREFIX)/share/hat
	install -m 755 $(PROGS) $(DESTDIR)$(PREFIX)/bin
	install -m 644 man/man1/*.1 $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 man/man5/*.5 $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 644 man/man7/*.7 $(DESTDIR)$(PREFIX)/share/man/man7
	cp -R data/. $(DESTDIR)$(PREFIX)/share/hat/

clean:
	rm -rf build bin tests/out

help:
	@sed -n '2,10s/^# //p' Makefile

.SECONDARY:
-include $(LIB_OBJ:.o=.d) $(wildcard $(BUILD)/cmd/*.d) $(wildcard $(BUILD)/tests/unit/*.d)
