# The version of tpuform and what `tpuform version` says about the build
# (included by the Makefile).
#
#   VERSION     the release: stamped into state files and plans, compared
#               with util/version.h, so dotted numbers only
#   .build-info the commit (dist/commit.sh) and the build date, rewritten
#               only when the commit changes, so cmd/cmd_version.o (the only
#               object that uses them) is rebuilt then and only then
#
# The build date is $SOURCE_DATE_EPOCH when set (reproducible builds, as
# dpkg-buildpackage sets it from debian/changelog:
# https://reproducible-builds.org/specs/source-date-epoch/), else now.
VERSION := 0.1.0

.build-info: FORCE
	@c=$$(sh dist/commit.sh .); \
	if [ "$$(sed -n 1p $@ 2>/dev/null)" != "$$c" ]; then \
	  if [ -n "$${SOURCE_DATE_EPOCH:-}" ]; then \
	    d=$$(date -u -d "@$$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ); \
	  else d=$$(date -u +%Y-%m-%dT%H:%M:%SZ); fi; \
	  printf '%s\n%s\n' "$$c" "$$d" > $@; \
	fi

cmd/cmd_version.o: .build-info
cmd/cmd_version.o: CFLAGS += -DTPF_COMMIT='"$(shell sed -n 1p .build-info 2>/dev/null)"' \
                         -DTPF_BUILD_DATE='"$(shell sed -n 2p .build-info 2>/dev/null)"'
