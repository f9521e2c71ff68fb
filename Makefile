# Conveniences over the scripts the README names; the scripts are the contract.
.PHONY: demo test bench suites screenshots lint format

demo:
	./scripts/demo

test:
	./scripts/test

bench:
	./scripts/bench

suites:
	./scripts/suites

screenshots:
	./scripts/screenshots

lint:
	.venv/bin/ruff check ttyoffer_nvim rplugin tests scripts bench
	.venv/bin/ruff format --check ttyoffer_nvim rplugin tests scripts bench
	.venv/bin/mypy

format:
	.venv/bin/ruff format ttyoffer_nvim rplugin tests scripts bench
	.venv/bin/ruff check --fix ttyoffer_nvim rplugin tests scripts bench

format-lua:
	.venv/stylua/node_modules/.bin/stylua lua plugin tests/lua
