# zynqflow: ZynqNet-style CNN -> Zynq FPGA flow.  `make help` lists the targets.
#
# Variables (override on the command line):
#   NET   network preset or JSON config       (default zynqnet-mini)
#   DATA  fashion-mnist | synthetic | cifar10 | <folder>: a folder of images (train/<class>/ and
#         test/<class>/, or <class>/), of CIFAR-10 pickles (cifar-10-batches-py) or of IDX files
#   CKPT  checkpoint to export (default: your trained one, else the committed reference); the targets that
#         need an export use the one you made (make export CKPT=...), re-made only when its inputs change
#   WEIGHTS=random  seeded random weights (SEED=0), for speed and bit-exactness figures
#   DATA_DIR  where the dataset files are (Fashion-MNIST: looked up in the Debian
#         package dir first; CIFAR-10: required)

SHELL   := /bin/bash
PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.zynqflow-installed
NET     ?= zynqnet-mini
DATA    ?= fashion-mnist
DATA_DIR ?=
# build/<net>/<dataset>/ directory name for DATA, as zynqflow.model.data.dataset_tag: the dataset's name;
# a folder of CIFAR-10 pickles cifar10, of IDX files fashion-mnist, of images <name>-<8 hex of sha1(realpath)>
# (zynqflow.model.folders.folder_tag), so two folders never share build/<net>/<dataset>/ or the default CKPT
DATA_REAL := $(realpath $(DATA))
DATA_NAMES := fashion-mnist:fashion-mnist fashion_mnist:fashion-mnist fmnist:fashion-mnist synthetic:synthetic \
              synth:synthetic cifar10:cifar10 cifar-10:cifar10
DSET    := $(strip $(or \
  $(patsubst $(DATA):%,%,$(filter $(DATA):%,$(DATA_NAMES))), \
  $(if $(wildcard $(DATA)/cifar-10-batches-py $(DATA)/data_batch_1),cifar10), \
  $(if $(wildcard $(DATA)/train-images-idx3-ubyte* $(DATA)/t10k-images-idx3-ubyte*),fashion-mnist), \
  $(if $(DATA_REAL),$(shell printf '%s' '$(notdir $(DATA_REAL))' | tr -c 'A-Za-z0-9._-' '_')-$(shell \
       printf '%s' '$(DATA_REAL)' | sha1sum | cut -c1-8)), \
  $(DATA)))
ifeq ($(filter $(DATA):%,$(DATA_NAMES)),)
  DATA_DIR := $(DATA)
endif
REF_CKPT := model/reference/$(NET)/$(DSET)/checkpoint.pt
CKPT    ?= $(firstword $(wildcard build/$(NET)/$(DSET)/checkpoint.pt) $(REF_CKPT))
EXPORT  := build/$(NET)/export
TRAIN_ARGS ?=
FRAMES  ?= 256
DATA_ARG := $(if $(DATA_DIR),--data-dir $(DATA_DIR),)

.PHONY: help setup demo test test-slow test-fast train export csim report bench hls rtl-sim rtl-bench synth-estimate \
        bitstream check-board-scripts deploy clean notebook

help:
	@echo "make demo            short training, fixed-point evaluation, report, export, C-sim, RTL twin,"
	@echo "                     host driver on the RTL, one full 256x256 ZynqNet frame (RTL-simulated fps)"
	@echo "make test            the test suite (pytest), but for the tests marked slow"
	@echo "make test-slow       the tests marked slow (checks make bench also makes); .ci/run runs both"
	@echo "make train NET=.. DATA=..   train (QAT) -> build/<net>/<dataset>/checkpoint.pt, metrics.json"
	@echo "                     DATA=<folder>: your images (train/<class>/ + test/<class>/, or <class>/ with"
	@echo "                     TRAIN_ARGS=--split 0.1), decoded once into build/data/ (docs/datasets-and-import.md)"
	@echo "make import ONNX=model.onnx [NET=name] [DATA=..]  a Brevitas QONNX export -> build/<name>/imported/<name>.json,"
	@echo "                     checkpoint.pt (DATA: its class names and test split for the check)"
	@echo "make report NET=..   per-layer characterization -> build/<net>/report.json, roofline.png; what bounds"
	@echo "                     each layer on the engine under each memory preset -> build/<net>/bounds.json"
	@echo "make export CKPT=..  integers, HLS header, RTL parameters, weight image, manifest -> build/<net>/export/"
	@echo "                     (no checkpoint: refused, naming it; WEIGHTS=random [SEED=0]: seeded random weights;"
	@echo "                     zynqnet, which has no dataset here: random, said so). csim, rtl-bench, rtl-sim,"
	@echo "                     bench use the export you made, re-made only when its inputs change"
	@echo "make csim [OUT=f.json]  HLS C simulation with g++ -> build/<net>/<dataset>/csim.json (or OUT)"
	@echo "make bench [OUT=dir]  speed and bit-exactness figures, the full ZynqNet in RTL -> build/bench/*.json"
	@echo "                     (or OUT/*.json)"
	@echo "make hls             Vitis HLS csim/csynth/cosim/export (needs vitis_hls or vitis-run)"
	@echo "make rtl-sim         cocotb + Verilator on the RTL twin, then per-layer cycles vs the model"
	@echo "                     -> build/<net>/rtl_perf.json"
	@echo "make rtl-bench [FRAMES=N BACKPRESSURE=1 MEMORY=ideal|pynq-z2|stress SEEDS=N]  the test set through the"
	@echo "                     RTL twin (free-running Verilator, one simulator per core) behind a DDR model,"
	@echo "                     bit-exact vs golden -> build/<net>/rtl_bench.json; OUT=f.json writes there instead"
	@echo "                     (a second run keeps the first)"
	@echo "make synth-estimate  Yosys synth_xilinx estimate -> build/<net>/resources.json, and the worst"
	@echo "                     register-to-register paths with a routing estimate -> build/<net>/timing.json"
	@echo "make bitstream [ENGINE=rtl|hls]  Vivado PYNQ-Z2 block design with the RTL twin (default) or the"
	@echo "                     HLS engine -> bitstreams/<net>_pynq-z2.bit/.hwh"
	@echo "make check-board-scripts  board/'s Vivado scripts (bitstream.sh, ENGINE=rtl and hls) under a mock of"
	@echo "                     Vivado built from its reference (UG835, the IPs' product guides): any unknown"
	@echo "                     command, option, CONFIG name, pin or a failed check of what they build: exit 1"
	@echo "                     (NET's export if made, else a seeded zynqnet-tiny one; no Vivado needed)"
	@echo "make deploy BOARD=<host>  copy bitstream, hwh, manifest, host package to a PYNQ board"
	@echo "make notebook        run notebooks/zynqflow_pynq_z2.ipynb against the RTL simulation, save its outputs"
	@echo "make dse [DATA=.. PART=xc7z020|xczu7ev TRIALS=32 WORKERS=2 STUDY=..]  co-design search (accuracy x fps"
	@echo "                     x resources, hardware in the loop) -> build/dse/<study>/pareto.json, pareto.png"
	@echo "make dse-train TRIAL=<n> [STUDY=..]  retrain a search trial's design with the full schedule"

setup: $(STAMP)
$(STAMP): pyproject.toml setup.cfg scripts/setup.sh
	@PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/setup.sh
	@touch $@

# TEST_JOBS: test processes (pytest-xdist, -n; tests that share a build run in one process, see
# tests/conftest.py); TEST_JOBS=1, or xdist not installed: one process. TEST_ARGS: more pytest arguments
# (after the marker: TEST_ARGS="-m ''" runs every test).
# make test: every test but those marked slow (checks make bench also makes); make test-slow: those.
# .ci/run runs both.
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TEST_ARGS ?=
define run_tests
	@if [ "$(TEST_JOBS)" != 1 ] && $(PY) -c "import xdist" 2>/dev/null; then \
	  x="-n $(TEST_JOBS) --dist loadgroup"; else x=""; echo "make $@: one process (TEST_JOBS=1 or no pytest-xdist)"; fi; \
	  echo "$(PY) -m pytest -q $$x -m \"$(1)\" $(TEST_ARGS)"; $(PY) -m pytest -q $$x -m "$(1)" $(TEST_ARGS)
endef
test: $(STAMP)
	$(call run_tests,not slow)

test-slow: $(STAMP)
	$(call run_tests,slow)

test-fast: $(STAMP)
	$(PY) -m pytest -q -x -m "not slow"

train: $(STAMP)
	$(PY) -m zynqflow.model.train --net $(NET) --data $(DATA) $(DATA_ARG) $(TRAIN_ARGS)

# zynqflow import: a Brevitas QONNX export -> build/<name>/imported/ (NetConfig JSON, checkpoint, import.json)
ONNX ?=
.PHONY: import
import: $(STAMP)
	@test -n "$(ONNX)" || { echo "usage: make import ONNX=model.onnx [NET=<name>] [DATA=<folder>]" >&2; exit 2; }
	$(PY) -m zynqflow.export.qonnx_import $(ONNX) $(if $(filter command line,$(origin NET)),--name $(NET),) \
	    $(if $(DATA_GIVEN),--data $(DATA),$(if $(DATA_DIR),--data $(DATA_DIR),))

# the dataset tag of DATA (build/<net>/<tag>/), and what the loader finds in a folder
.PHONY: data-tag
data-tag:
	@echo $(DSET)

report: $(STAMP)
	$(PY) -m zynqflow.model.report --net $(NET) --out build/$(NET)
	$(PY) -m zynqflow.export.bounds --net $(NET) --out build/$(NET)/bounds.json

# The export (zynqflow.export.ensure; build/<net>/export/export_inputs.json records what it was made from):
# `make export` exports CKPT (named, else your trained checkpoint for DATA, else the committed reference);
# the targets that need an export (export-ready) use the one there, re-made only when its checkpoint,
# config, EXPORT_ARGS or the exporter changed; CKPT=, WEIGHTS=random or a DATA of another dataset named on
# the command line choose again. No checkpoint: refused, naming the one it would use, for a network with
# a dataset; seeded random weights (said so) only with WEIGHTS=random or for a network without one (zynqnet).
SEED    ?= 0
WEIGHTS ?=
# EXPORT_ARGS passes more exporter options, e.g. the engine: EXPORT_ARGS="--n-pe 16 --n-ci 16"
EXPORT_ARGS ?=
GIVEN    = $(filter command line environment,$(origin $(1)))
DATA_GIVEN := $(call GIVEN,DATA)
ENSURE_EXPORT = $(PY) -m zynqflow.export.ensure $(1) --net $(NET) --out $(EXPORT) --dset $(DSET) --seed $(SEED) \
	$(if $(call GIVEN,CKPT),--ckpt $(CKPT),--candidate build/$(NET)/$(DSET)/checkpoint.pt --candidate $(REF_CKPT)) \
	$(if $(filter random,$(WEIGHTS)),--random $(SEED),) $(if $(DATA_GIVEN),--data-given,) \
	$(if $(call GIVEN,EXPORT_ARGS),--args-given,) -- $(DATA_ARG) $(EXPORT_ARGS)
.PHONY: export-ready
export: $(STAMP)
	@$(call ENSURE_EXPORT,--force)
export-ready: $(STAMP)
	@$(ENSURE_EXPORT)

# OUT=<path> on the command line (not from the environment): where csim, rtl-bench (a .json file) and
# bench (a directory) write, so that a second run keeps the first; default paths as below
OUT_ARG = $(if $(filter-out environment% undefined,$(origin OUT)),$(OUT))
csim: export-ready
	$(PY) -m zynqflow.bench.csim_eval --export $(EXPORT) --frames $(FRAMES) $(if $(DATA_GIVEN),--data $(DATA),) \
	    $(DATA_ARG) --out $(or $(OUT_ARG),build/$(NET)/$(DSET)/csim.json)

BENCH_RTL_FRAMES ?= 10000
bench: export-ready
	$(PY) -m zynqflow.bench.bench --net $(NET) --ckpt $(CKPT) $(DATA_ARG) --rtl-frames $(BENCH_RTL_FRAMES) \
	    $(if $(OUT_ARG),--out $(OUT_ARG),)

demo: $(STAMP)
	$(PY) -m zynqflow.bench.demo

# Vitis HLS 2023.2 (vitis_hls) or Vitis 2024.2+ (vitis-run --mode hls): csim, csynth, cosim
# (ZQ_COSIM_FRAMES frames, default 1), IP export -> build/<net>/hls (hls/README.md)
# The csynth report is checked before the co-simulation (zynqflow.bench.csynth_check: CORE at II=1, its
# depth within the guards; build/<net>/hls/csynth_check.json).
hls: hls-tool export-ready
	ZQ_CSYNTH_CHECK="$(abspath $(PY)) -m zynqflow.bench.csynth_check" bash hls/scripts/hls.sh $(EXPORT) build/$(NET)/hls

.PHONY: hls-tool
hls-tool:
	@command -v vitis_hls >/dev/null || command -v vitis-run >/dev/null || { echo "make hls: neither vitis_hls" \
	    "(Vitis HLS 2023.2) nor vitis-run (Vitis 2024.2+) on PATH: source <Vitis>/settings64.sh. Without it," \
	    "make csim runs the same engine in g++ C simulation." >&2; exit 1; }

# RTL twin under cocotb + Verilator: the cocotb suite, then rtl_perf.json.
# RTL=hls runs the same tests on the Vitis-exported Verilog (build/<net>/hls/...).
RTL ?= rtl
RTL_FRAMES ?= 8
rtl-sim: export-ready
	RTL=$(RTL) $(PY) -m pytest -q tests/test_rtl_zq_top.py
	$(PY) -m zynqflow.bench.rtl_perf $(EXPORT) --frames $(RTL_FRAMES) --memory $(MEMORY) $(if $(filter hls,$(RTL)),--rtl hls,)

# The RTL twin at full speed: a free-running Verilator harness (sim/harness/, zynqflow.sim.harness.rtl_fast),
# one simulator per core, every frame checked against the golden model. FRAMES given on the command
# line limits the images (default: the whole test set); BACKPRESSURE=1 adds random stalls on both
# streams (probability 0.3 per cycle; or BACKPRESSURE=<p>) -> build/<net>/rtl_bench_backpressure.json.
# MEMORY=pynq-z2 (default)|ideal|stress: the DDR behind the engine's AXI4 masters (spec.engine.MEMORY_PRESETS,
# recorded as memory_preset); SEEDS=N runs the frames under N seeds of the memory's random gaps and stalls
# (one simulator per seed, over the cores) and counts hangs and mismatches. SIM_OPT=quick|o2|native|pgo: the
# simulator's C++ build (default: pgo, profile-guided and cached, for the whole test set; zynqflow.sim.harness.rtl_fast).
BACKPRESSURE ?= 0
MEMORY  ?= pynq-z2
SEEDS   ?=
RTL_BENCH_FRAMES := $(if $(filter command line,$(origin FRAMES)),$(FRAMES),0)
RTL_BENCH_BP := $(if $(filter 1,$(BACKPRESSURE)),0.3,$(BACKPRESSURE))
rtl-bench: export-ready
	$(PY) -m zynqflow.bench.rtl_bench --export $(EXPORT) --frames $(RTL_BENCH_FRAMES) \
	    $(if $(DATA_GIVEN),--data $(DATA),) $(DATA_ARG) \
	    --backpressure $(RTL_BENCH_BP) --memory $(MEMORY) $(if $(SEEDS),--seeds $(SEEDS),) \
	    $(if $(SIM_OPT),--opt $(SIM_OPT),) $(if $(OUT_ARG),--out $(OUT_ARG),)

synth-estimate: export-ready
	$(PY) -m zynqflow.bench.synth_estimate $(EXPORT)

# ENGINE=rtl (default: the RTL twin, packaged as a Vivado IP; needs Vivado only) or hls (the
# Vitis HLS IP from make hls); board/README.md says why rtl is the default
ENGINE  ?= rtl
bitstream:
	ENGINE=$(ENGINE) bash board/bitstream.sh $(NET)

# the Vivado scripts under the vendor-reference mock of Vivado (zynqflow.sim.world.vivado), no Vivado
check-board-scripts: $(STAMP)
	$(PY) -m zynqflow.bench.board_check $(if $(wildcard $(EXPORT)/manifest.json),$(EXPORT))

# the board notebook run against the RTL simulation, saved with its outputs (labelled as simulation)
notebook: $(STAMP)
	$(PY) -m zynqflow.bench.notebook

BOARD ?=
deploy:
	bash board/deploy.sh BOARD=$(BOARD) NET=$(NET)

# Co-design search (docs/dse.md): the study lives in build/dse/<study>/journal.log (resumable);
# DSE_ARGS passes more options (--storage URL, --hil K, --engines 16x8, ...; python -m zynqflow.dse run -h).
PART    ?= xc7z020
TRIALS  ?= 32
WORKERS ?= 2
STUDY   ?=
TRIAL   ?=
DSE_ARGS ?=
.PHONY: dse dse-train
dse: $(STAMP)
	$(PY) -m zynqflow.dse run --data $(DATA) $(DATA_ARG) --part $(PART) --trials $(TRIALS) --workers $(WORKERS) \
	    $(if $(STUDY),--study $(STUDY),) $(DSE_ARGS)

dse-train: $(STAMP)
	@test -n "$(TRIAL)" || { echo "usage: make dse-train TRIAL=<trial number> [STUDY=<study>]" >&2; exit 2; }
	$(PY) -m zynqflow.dse train --study $(or $(STUDY),$(DSET)-$(PART)) --trial $(TRIAL) $(DATA_ARG) $(TRAIN_ARGS)

clean:
	rm -rf build sim_build
