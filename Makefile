# SPDX-License-Identifier: GPL-3.0-or-later
# Reach IK — every entry point sets up what it needs (a Python 3.11 virtualenv in .venv).
#   make demo        set up, then run the main job on the bundled default (writes out/)
#   make test        set up, then lint, type-check, build the extension and run all tests
#   make extension   build dist/reach_ik-<version>.zip with Blender's own extension builder
#   make bench       run every benchmark in scripts/ (JSON + Markdown tables in out/bench/)
#   make check-blender  install the zip in Debian's real Blender 5.2 and 4.3 (root; see README)
#   make bench-overlay  time the 3D View overlay in Debian's real Blender 5.2 UI (root, Xvfb)

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' blender_manifest.toml)
ZIP := dist/reach_ik-$(VERSION).zip
EXT_TOOL = $(VENV)/lib/python3.11/site-packages/bpy/$(shell $(PY) -c "import bpy, sys; print('%d.%d' % bpy.app.version[:2])" 2>/dev/null)/scripts/addons_core/bl_pkg/cli/blender_ext.py
SOURCES := __init__.py blender_manifest.toml $(shell find core ik_addon -name '*.py' 2>/dev/null)

.PHONY: setup demo test lint extension bench bench-overlay check-blender screenshots clean

setup: $(STAMP)

$(STAMP): requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

demo: $(STAMP) $(ZIP)
	$(PY) scripts/bench_triangulation.py --out out
	$(PY) scripts/demo.py --out out

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

extension: $(ZIP)

$(ZIP): $(STAMP) $(SOURCES)
	@mkdir -p dist
	$(PY) $(EXT_TOOL) build --source-dir . --output-filepath $@
	$(PY) $(EXT_TOOL) validate $@

test: lint $(ZIP)
	REACH_IK_ZIP=$(abspath $(ZIP)) $(PY) -m pytest -q

bench: $(STAMP) $(ZIP)
	$(PY) scripts/bench_triangulation.py --out out/bench
	$(PY) scripts/bench_jacobian_paper_chains.py --out out/bench
	$(PY) scripts/bench_logquat.py --out out/bench
	$(PY) scripts/bench_6r.py --out out/bench
	$(PY) scripts/bench_solvers.py --zip $(ZIP) --out out/bench
	$(PY) scripts/bench_bake.py --out out/bench
	$(PY) scripts/bench_live.py --zip $(ZIP) --out out/bench
	$(PY) scripts/bench_natural.py --zip $(ZIP) --out out/bench

check-blender: $(ZIP)
	bash scripts/check_blender.sh $(ZIP)

screenshots: $(ZIP)
	bash scripts/screenshots.sh $(ZIP)

bench-overlay: $(ZIP)
	$(or $(REAL_BLENDER),../shared/tools/real-blender)/blender --xvfb -- --factory-startup \
		--python scripts/bench_overlay.py -- --zip $(ZIP) --out out/bench

clean:
	rm -rf dist out .mypy_cache .ruff_cache .pytest_cache
