# Convenience targets; each is a script under scripts/ or bench/ that works on its own.
.PHONY: all demo test bench module cli pam release register lint format clean install uninstall deb deb-depends

all: release

# The Swift toolchain, found as scripts/setup.sh finds it: swift on PATH, else /opt/swift,
# else /usr/share/swift (make SWIFT=/path/to/swift overrides).
SWIFT ?= $(or $(shell command -v swift 2>/dev/null),$(firstword $(wildcard /opt/swift/usr/bin/swift /usr/share/swift/usr/bin/swift)),swift)
# Extra flags for the release builds (CI: -Xswiftc -warnings-as-errors).
SWIFTFLAGS ?=

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
	$(SWIFT) build -c release --product p11keychain-pkcs11 $(SWIFTFLAGS)

cli:
	$(SWIFT) build -c release --product p11keychain $(SWIFTFLAGS)

## The PAM module and its helper (docs/pam.md).
pam:
	$(SWIFT) build -c release --product pam_p11keychain $(SWIFTFLAGS)
	$(SWIFT) build -c release --product p11keychain-pam-helper $(SWIFTFLAGS)

## The release products that install: the module, the CLI and the PAM module.
release: module cli pam

register: release
	bash scripts/register-module.sh .build/release/libp11keychain-pkcs11.so

lint:
	$(SWIFT) format lint --strict -r Package.swift Sources Tests $(wildcard Examples)

format:
	$(SWIFT) format -i -r Package.swift Sources Tests $(wildcard Examples)

clean:
	rm -rf .build bench/build

# ------------------------------------------------------------------ install
## make install [PREFIX=/usr/local] [DESTDIR=]: the files listed in README "Install". Builds the
## release products only if they are missing (run `make` first to bring them up to date).
## make uninstall with the same PREFIX and DESTDIR removes exactly those files.
PREFIX ?= /usr/local
DESTDIR ?=
# Debian's multiarch directory (x86_64-linux-gnu) for a system install (PREFIX=/usr), where
# p11-kit looks for modules (p11_module_path); plain lib/ elsewhere.
MULTIARCH ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null)
ifeq ($(PREFIX),/usr)
LIBDIR ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
else
LIBDIR ?= $(PREFIX)/lib
endif
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/p11keychain
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
# p11-kit reads the module files of its package directory whatever PREFIX is.
P11KIT_MODULE_DIR ?= $(or $(shell pkg-config --variable p11_module_configs p11-kit-1 2>/dev/null),/usr/share/p11-kit/modules)
MODULE_DIR = $(LIBDIR)/pkcs11
# libpam loads modules from its own directory only, whatever PREFIX is (docs/pam.md).
PAM_DIR ?= /lib$(if $(MULTIARCH),/$(MULTIARCH))/security
# The PAM module execs its helper from the path it was built with, whatever PREFIX is
# (pam/include/pam_p11keychain.h; the module argument helper= names another).
PAM_HELPER_DIR ?= /usr/libexec/p11keychain

# The products installed; the tests point these at the build under test.
RELEASE_MODULE ?= .build/release/libp11keychain-pkcs11.so
RELEASE_CLI ?= .build/release/p11keychain
RELEASE_PAM ?= .build/release/libpam_p11keychain.so
RELEASE_PAM_HELPER ?= .build/release/p11keychain-pam-helper

INSTALLED = \
	$(MODULE_DIR)/libp11keychain-pkcs11.so \
	$(P11KIT_MODULE_DIR)/p11keychain.module \
	$(BINDIR)/p11keychain \
	$(MANDIR)/man1/p11keychain.1 \
	$(MANDIR)/man5/p11keychain.conf.5 \
	$(COMPLETIONDIR)/p11keychain \
	$(DOCDIR)/p11keychain.conf \
	$(PAM_DIR)/pam_p11keychain.so \
	$(PAM_HELPER_DIR)/pam-helper

$(RELEASE_MODULE):
	$(SWIFT) build -c release --product p11keychain-pkcs11 $(SWIFTFLAGS)

$(RELEASE_CLI):
	$(SWIFT) build -c release --product p11keychain $(SWIFTFLAGS)

$(RELEASE_PAM):
	$(SWIFT) build -c release --product pam_p11keychain $(SWIFTFLAGS)

$(RELEASE_PAM_HELPER):
	swift build -c release --product p11keychain-pam-helper

install: $(RELEASE_MODULE) $(RELEASE_CLI) $(RELEASE_PAM) $(RELEASE_PAM_HELPER)
	install -D -m 0644 $(RELEASE_MODULE) $(DESTDIR)$(MODULE_DIR)/libp11keychain-pkcs11.so
	install -d $(DESTDIR)$(P11KIT_MODULE_DIR)
	sed 's|^module:.*|module: $(MODULE_DIR)/libp11keychain-pkcs11.so|' conf/p11keychain.module \
		>$(DESTDIR)$(P11KIT_MODULE_DIR)/p11keychain.module
	chmod 0644 $(DESTDIR)$(P11KIT_MODULE_DIR)/p11keychain.module
	install -D -m 0755 $(RELEASE_CLI) $(DESTDIR)$(BINDIR)/p11keychain
	install -D -m 0644 man/p11keychain.1 $(DESTDIR)$(MANDIR)/man1/p11keychain.1
	install -D -m 0644 man/p11keychain.conf.5 $(DESTDIR)$(MANDIR)/man5/p11keychain.conf.5
	install -D -m 0644 conf/p11keychain.bash-completion $(DESTDIR)$(COMPLETIONDIR)/p11keychain
	install -D -m 0644 conf/p11keychain.conf $(DESTDIR)$(DOCDIR)/p11keychain.conf
	install -D -m 0644 $(RELEASE_PAM) $(DESTDIR)$(PAM_DIR)/pam_p11keychain.so
	install -D -m 0755 $(RELEASE_PAM_HELPER) $(DESTDIR)$(PAM_HELPER_DIR)/pam-helper

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	@# Directories only p11keychain puts files in go too, when nothing else is left in them.
	for dir in $(DESTDIR)$(DOCDIR) $(DESTDIR)$(MODULE_DIR) $(DESTDIR)$(PAM_HELPER_DIR); do rmdir "$$dir" 2>/dev/null || true; done

## The Debian package: .build/deb/p11keychain_<VERSION>_<arch>.deb (scripts/build-deb.sh).
deb:
	bash scripts/build-deb.sh

## The names of the packages the .deb depends on, derived from the binaries (README "Install").
deb-depends:
	@bash scripts/build-deb.sh --depends
