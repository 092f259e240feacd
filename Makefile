# The two commands a fresh clone needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# Absolute links in emails and feeds follow the address served, unless SITE_URL is set
# (in the environment or on the command line: `make run SITE_URL=https://status.example.com`).
SITE_URL ?= http://$(HOST):$(PORT)
RUN_ENV := DEBUG=1 SITE_URL='$(SITE_URL)'
# Two test processes, each file on one of them (`make test PYTEST_PARALLEL=` runs one).
PYTEST_PARALLEL ?= -n 2 --dist loadfile

.PHONY: run test lint typecheck layers sizes check bench clean compose-test

# The virtualenv is rebuilt when a requirements file changes.
$(VENV)/.installed-dev: requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is required (set PYTHON=python3.x)")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

# Embedded default: SQLite under var/, no Redis, tasks in process, emails as files in
# var/mail/. DEBUG is on for the local server only.
run: $(VENV)/.installed-dev
	$(RUN_ENV) $(PY) manage.py migrate --noinput
	$(RUN_ENV) $(PY) manage.py load_demo
	@echo ""
	@echo "  Status page:  http://$(HOST):$(PORT)/"
	@echo "  Staff console: http://$(HOST):$(PORT)/manage/  (user: staff   password: staff-demo, Administrator)"
	@echo "  One login per role (password: <user>-demo):"
	@echo "    viewer        Viewer            reads the console, insights and drafts"
	@echo "    responder     Responder         declares, updates, resolves, writes reports, publishes drafts"
	@echo "    approver      Report approver   approves and publishes incident reports"
	@echo "    finance       Finance           customers, policies, credit review, send, statements, portal access"
	@echo "    integrations  Integrations      alert integrations, webhooks, subscribers, API keys"
	@echo "    admin         Administrator     everything, including users and roles"
	@echo "  Staff admin:  http://$(HOST):$(PORT)/admin/"
	@echo "  Emails are written to var/mail/ (their links start with $(SITE_URL))"
	@echo "  Internal page: http://$(HOST):$(PORT)/p/internal/  sign in first at /manage/ as staff (any staff login above)"
	@echo "  Customer portal: http://$(HOST):$(PORT)/portal/  sign in with a one-time link, mailed to var/mail/:"
	@echo "    ops@tailspin.example   Tailspin Toys      Cloud Storage in us-central1  page /p/tailspin-toys/"
	@echo "    it@northwind.example   Northwind Traders  Gmail                         page /p/northwind-traders/"
	@echo ""
	@# Periodic tasks (outbox sweeper, maintenance transitions, reminders) run in a
	@# process next to the server, since the embedded mode has no Celery beat.
	$(RUN_ENV) $(PY) manage.py run_periodic & periodic=$$!; trap 'kill $$periodic 2>/dev/null' EXIT INT TERM; \
	  $(RUN_ENV) $(PY) manage.py runserver $(HOST):$(PORT)

test: $(VENV)/.installed-dev
	$(PY) -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: $(VENV)/.installed-dev
	DEBUG=1 $(PY) -m mypy .

layers: $(VENV)/.installed-dev
	$(VENV)/bin/lint-imports

# Modules <= 600 lines, functions <= 80, radon D-or-worse <= 3, no dead code (vulture).
sizes: $(VENV)/.installed-dev
	$(PY) tools/check_size.py

check: lint typecheck layers sizes
	DEBUG=1 $(PY) manage.py makemigrations --check --dry-run

# The container stack built and run as production runs it, under podman, with smoke and
# failure checks through nginx (docker/sandbox/compose-test.sh; root, podman, runc, mmdebstrap).
compose-test: $(VENV)/.installed-dev
	PODMAN_COMPOSE=$(VENV)/bin/podman-compose docker/sandbox/compose-test.sh

clean:
	rm -rf $(VENV) var/test .pytest_cache .mypy_cache .ruff_cache
