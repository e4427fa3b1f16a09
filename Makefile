# Convenience targets; each is a script under scripts/ or bench/ that works on its own.
.PHONY: all demo test bench module register lint format clean

all: module

## The main job: build, register with p11-kit, store a certificate through the Swift API,
## show it with p11tool --list-all.
demo:
	bash scripts/demo.sh

## Every test (what CI runs).
test:
	bash scripts/test.sh

## p11keychain and SoftHSM2 side by side (release build).
bench:
	bash bench/run.sh

module:
	swift build -c release --product p11keychain-pkcs11

register: module
	bash scripts/register-module.sh .build/release/libp11keychain-pkcs11.so

lint:
	swift format lint --strict -r Package.swift Sources Tests $(wildcard Examples)

format:
	swift format -i -r Package.swift Sources Tests $(wildcard Examples)

clean:
	rm -rf .build bench/build
