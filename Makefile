# The project's commands. `make test` is the one test command (CI runs it too): it installs
# what the tests need (moto, an S3-compatible server, in a virtual environment under target/).

VENV   := target/venv
MOTO   := $(VENV)/bin/moto_server
export MOTO_PYTHON := $(abspath $(VENV)/bin/python)

.PHONY: test bench example install lint ssh-keygen

test: $(MOTO) ssh-keygen
	cargo test --locked

bench: $(MOTO)
	cargo bench --locked --bench clone
	cargo bench --locked --bench latency

# Installs the helper and clones the example lake shipped in examples/lake.
example: install
	rm -rf target/demo
	git clone fdl::$(abspath examples/lake) target/demo
	git -C target/demo log --graph --stat --format='%h %s (%an, %ad)' --date=short --all

install:
	cargo install --locked --path .

lint:
	cargo fmt --check
	cargo clippy --locked --all-targets -- -D warnings

$(MOTO):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check 'moto[server]==5.2.5'
	test -x $(MOTO)

# The signature tests sign versions with the real ssh-keygen.
ssh-keygen:
	@command -v ssh-keygen >/dev/null || { apt-get update -qq && apt-get install -y -qq openssh-client; }
