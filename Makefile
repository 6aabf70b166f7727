# The two commands of the README: `make book` and `make test`.
# Both create .venv if it is missing and install what they need into it.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HTML   := _build/html

.DEFAULT_GOAL := help
.PHONY: help venv test-deps book build pages test check lint typecheck dist unit colab nbgrader notebooks nbval nbval-nudged browser browser-tests bench execute edition student pdf have-chromium clean

help:
	@echo "make book   build the HTML book into $(HTML) (sets up $(VENV) first)"
	@echo "make test   lint, unit/property tests, nbval on every notebook, build, browser tests"
	@echo "make check  the everyday loop (under 2½ min): lint, types, the library's tests and doctests"
	@echo "make dist   attnlib's wheel and sdist into _build/dist, checked by twine (the book serves the same)"
	@echo "make bench  run the benchmarks under bench/"
	@echo "make pdf    print the book to _build/pdf/book.pdf and book-student.pdf (needs chromium)"
	@echo "make student  the student edition, no solutions: _build/student/html and _build/student/notebooks"
	@echo "make execute  re-run every notebook in place (refresh the outputs nbval compares), then make edition"
	@echo "make edition  write the notebook edition (book/notebooks/: runs in Colab or any Jupyter, no MyST)"
	@echo "make nbval-nudged NB=book/04_scaling.ipynb  nbval with random draws and exp, log, ... one ulp off"

# Reinstall only when a requirements file changed.
$(BIN)/.reader-installed: requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

$(BIN)/.test-installed: requirements-test.txt $(BIN)/.reader-installed
	$(BIN)/python -m pip install --quiet -r requirements-test.txt
	touch $@

venv: $(BIN)/.reader-installed
test-deps: $(BIN)/.test-installed

# -W: warnings are errors; execution is forced in _config.yml, so every notebook runs.
build: venv
	rm -rf _build/html _build/.doctrees _build/jupyter_execute
	$(BIN)/jupyter-book build . -W -n --keep-going

book: build
	@echo
	@echo "The book is built. Open it in a browser:"
	@echo "  file://$(CURDIR)/$(HTML)/index.html"

lint: test-deps
	$(BIN)/ruff check attnlib tests bench book/press

typecheck: test-deps
	$(BIN)/mypy

# The everyday loop: lint, types, and the tests of the library itself (not the book's pages, editions,
# notebooks or browsers, which make test adds).
CHECK_TESTS := $(filter-out $(addprefix tests/test_,$(addsuffix .py,colab nbgrader binder student_edition \
	notebook_edition torch_crosscheck torch_agreement prose_numbers claims first_use package)),$(wildcard tests/test_*.py))
check: lint typecheck
	$(BIN)/python -m pytest -q -n 2 -x attnlib $(CHECK_TESTS) --doctest-modules

dist: test-deps
	rm -rf _build/dist
	$(BIN)/python -c "import pathlib; from press import attnlib_wheel; \
		print(*attnlib_wheel.build_distributions(pathlib.Path('_build/dist')), sep='\n')"
	$(BIN)/twine check --strict _build/dist/*

unit: test-deps
	$(BIN)/python -m pytest -q attnlib tests --doctest-modules --ignore=tests/browser --ignore=tests/test_colab.py \
		--ignore=tests/test_nbgrader.py

# The notebook edition in a Colab stand-in (Colab's package versions, ipywidgets 7, no checkout): its
# environment is built once under _build/colab-venv (tests/reproducibility/colab_env.py).
colab: test-deps
	$(BIN)/python -m pytest -q tests/test_colab.py

# The notebook edition as an nbgrader source: generate_assignment and autograde run by nbgrader itself,
# in an environment built once under _build/nbgrader-venv (tests/reproducibility/nbgrader_env.py).
nbgrader: test-deps
	$(BIN)/python -m pytest -q tests/test_nbgrader.py

# The notebooks that nbval, nbval-nudged and execute act on (NB=book/04_scaling.ipynb for one).
NB ?= book/*.ipynb

# nbval twice, side by side: as stored, and in a kernel whose random draws and exp/log/tanh/sin/cos results
# are one ulp off (tests/reproducibility/nudge.py), where an output that depends on this CPU's rounding changes.
NUDGED := _build/nudged-ipython
# A kernel gets 5 minutes to start (nbval's default is 60 s): on a loaded 2-core CI machine a kernel once
# took longer, and its notebook errored before any output was compared.
NBVAL := $(BIN)/python -m pytest -q --nbval --nbval-kernel-startup-timeout=300
notebooks: test-deps
	$(MAKE) --no-print-directory -j2 nbval nbval-nudged

nbval: test-deps
	$(NBVAL) $(NB)

nbval-nudged: test-deps
	rm -rf $(NUDGED) && $(BIN)/python tests/reproducibility/nudge.py $(NUDGED)
	IPYTHONDIR=$(CURDIR)/$(NUDGED) $(NBVAL) $(NB)

# Three processes on two cores (the layer mostly waits on pages): each takes whole test files (what a file
# builds once, such as the PDFs, is built once), but the tests of the one-page-each files go one by one
# to whichever is free (tests/browser/conftest.py: SPREAD). A test
# that has not finished in 15 minutes fails with the stacks of its threads (every wait in a page is
# bounded too: print_pdf.bounded); --durations lists the slowest, to see where the time goes.
BROWSER_TESTS := $(BIN)/python -m pytest -q -n 3 --dist loadscope --timeout=900 --durations=12 tests/browser
browser: test-deps build student
	$(BROWSER_TESTS)

# The pages the browser layer reads: the book (every chapter executed) and the student edition.
pages: build
	$(MAKE) --no-print-directory student

# make test: the same tests on the pages its first stage built.
browser-tests: test-deps
	$(BROWSER_TESTS)

# First lint, types, unit (one core), colab and nbgrader (these two mostly wait on pip while their
# environments are built) and the pages (the book's build, then the student edition's) side by side; -O
# prints each layer's output whole when it ends. Then nbval twice, then the browser layer on the pages built
# in the first stage.
test: test-deps
	$(MAKE) --no-print-directory -j6 -O lint typecheck unit colab nbgrader pages
	$(MAKE) --no-print-directory notebooks
	$(MAKE) --no-print-directory browser-tests
	@echo "All test layers passed."

# Re-execute the chapters in place, then drop per-cell timestamps and widget state so diffs show
# only real changes.
execute: venv
	$(BIN)/jupyter execute --inplace $(NB)
	$(BIN)/python -c "import glob, nbformat as nbf; \
		nbs = {p: nbf.read(p, 4) for pattern in '$(NB)'.split() for p in glob.glob(pattern)}; \
		[c.metadata.pop('execution', None) for nb in nbs.values() for c in nb.cells]; \
		[nb.metadata.pop('widgets', None) for nb in nbs.values()]; \
		[nbf.write(nb, p) for p, nb in nbs.items()]"
	$(MAKE) --no-print-directory edition

# The notebook edition is written from the chapters and their stored outputs; it is committed (Colab
# opens notebooks from the repository) and tests/test_notebook_edition.py fails when it is stale.
edition: venv
	$(BIN)/python -m press.notebook_edition

# The student edition: every chapter without its solutions, as web pages and notebooks, from the
# stored outputs (book/press/student.py).
student: venv
	$(BIN)/python -m press.student --out _build/student

# The PDF: every built page printed by headless Chromium, solutions collected after each chapter's
# exercises (book.pdf) or left out (book-student.pdf), joined by pypdf (book/press/print_pdf.py).
pdf: have-chromium test-deps build
	$(BIN)/python -m press.print_pdf --html $(HTML) --out _build/pdf

have-chromium:
	@test -x /usr/bin/chromium || { echo "make pdf needs Chromium at /usr/bin/chromium: run apt-get install chromium" >&2; exit 1; }

bench: venv
	$(BIN)/python bench/bench_core.py

clean:
	rm -rf _build
