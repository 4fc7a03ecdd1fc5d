# Installing and packaging (included by the Makefile; docs: docs/install.md).
#
#   make gen          man pages and completions from the binary (dist/gen.sh) into gen/
#   make install      PREFIX=/usr/local DESTDIR= BINDIR= MANDIR= DOCDIR=
#                     BASHCOMPDIR= ZSHCOMPDIR= FISHCOMPDIR= SYSTEMDUNITDIR=
#                     STRIP=1 (strip the binary; default: not)   (dist/install.sh)
#   make uninstall    the same variables: removes what install put there
#   make dist         tpuform-VERSION.tar.gz: the tracked files plus
#                     .tarball-version, so its build needs no git, and
#                     .tarball-files (their list: what make install ships)
#   make deb          ../tpuform_VERSION-1_ARCH.deb with dpkg-buildpackage (debian/)

PREFIX  ?= /usr/local
DESTDIR ?=
GEN_DIR := gen
INSTALL_VARS := DESTDIR PREFIX BINDIR DATADIR MANDIR DOCDIR BASHCOMPDIR ZSHCOMPDIR \
                FISHCOMPDIR SYSTEMDUNITDIR STRIP
INSTALL_ENV = $(foreach v,$(INSTALL_VARS),$(if $(value $(v)),$(v)='$($(v))')) \
              GEN='$(GEN_DIR)' TPUFORM=./tpuform

.PHONY: gen install uninstall dist deb
gen: $(GEN_DIR)/.stamp
$(GEN_DIR)/.stamp: tpuform dist/gen.sh
	sh dist/gen.sh ./tpuform $(GEN_DIR)
	@touch $@

install: tpuform gen
	$(INSTALL_ENV) sh dist/install.sh install

uninstall:
	$(INSTALL_ENV) sh dist/install.sh uninstall

# The tarball holds what git tracks at HEAD plus .tarball-version (the
# commit: dist/commit.sh reads it when there is no git) and .tarball-files
# (the list of those files: dist/install.sh installs only the examples in
# it, never what a run left in the tree).
DIST_NAME := tpuform-$(VERSION)
dist:
	@[ -e .git ] || { echo "make dist: needs the git checkout"; exit 1; }
	rm -rf .dist-tmp && mkdir -p .dist-tmp/$(DIST_NAME)
	git archive --format=tar HEAD | tar -x -C .dist-tmp/$(DIST_NAME)
	printf 'version=%s\ncommit=%s\n' '$(VERSION)' "$$(sh dist/commit.sh .)" \
	  > .dist-tmp/$(DIST_NAME)/.tarball-version
	git ls-tree -r --name-only HEAD > .dist-tmp/$(DIST_NAME)/.tarball-files
	tar -C .dist-tmp -czf $(DIST_NAME).tar.gz $(DIST_NAME)
	rm -rf .dist-tmp
	@echo "make dist: $(DIST_NAME).tar.gz"

# Debian's own tools: dpkg-buildpackage runs debian/rules (debhelper),
# dpkg-shlibdeps derives the library dependencies. Unsigned, binary only,
# built from the `make dist` tarball in .deb-build/ (so the tree's own build
# is left alone, and the tarball is proven to build without git); the
# package is copied here: tpuform_VERSION_ARCH.deb. LINTIAN=1: run lintian.
DEB_BUILD_DEPS := debhelper dpkg-dev fakeroot
deb: dist
	@$(MAKE) --no-print-directory deps DEB_PKGS="$(DEB_PKGS) $(DEB_BUILD_DEPS)"
	rm -rf .deb-build && mkdir .deb-build
	tar -C .deb-build -xzf $(DIST_NAME).tar.gz
	cd .deb-build/$(DIST_NAME) && dpkg-buildpackage -b -us -uc
	cp .deb-build/tpuform_$(VERSION)_*.deb .
	@if [ "$(LINTIAN)" = 1 ]; then lintian --fail-on error .deb-build/tpuform_$(VERSION)_*.changes; fi
	rm -rf .deb-build
