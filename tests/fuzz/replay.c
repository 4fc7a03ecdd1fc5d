/*
 * Replays fuzz inputs without libFuzzer: `make check` builds each
 * tests/fuzz/fuzz_NAME.c with the normal compiler and this main() into
 * tests/fuzz/replay_NAME, and tests/run.sh runs it over
 * tests/fuzz/corpus/NAME and tests/fuzz/regressions/NAME. Under
 * `make SANITIZE=address,undefined check` (CI) a crash, leak or undefined
 * behaviour that a fuzzer once found fails the suite again.
 *
 * Usage: replay_NAME DIR_OR_FILE...   One TAP line per input file; a
 * missing directory is skipped (a harness may have no regressions yet).
 */
#include "tests/fuzz/fuzz.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/fs.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int count;

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_file(const char *path)
{
	struct tpf_buf b = TPF_BUF_INIT;
	struct tpf_diags d = TPF_DIAGS_INIT;
	count++;
	if (tpf_read_file(path, &b, &d) < 0) {
		printf("not ok %d - %s: %s\n", count, path, d.n ? d.items[0].summary : "unreadable");
	} else {
		/* a crash ends the process: the harness never prints this line */
		LLVMFuzzerTestOneInput((const uint8_t *)b.buf, b.len);
		printf("ok %d - %s (%zu bytes)\n", count, path, b.len);
	}
	fflush(stdout);
	tpf_diags_release(&d);
	tpf_buf_release(&b);
}

/* Every regular file of dir, in name order (stable TAP numbering). */
static void replay_dir(const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, alloc = 0;
	if (!dh) {
		printf("# %s: no such directory, skipped\n", dir);
		return;
	}
	while ((e = readdir(dh))) {
		if (e->d_name[0] == '.')
			continue; /* ".", "..", and .gitkeep-style placeholders */
		XGROW(names, n + 1, alloc);
		names[n++] = xasprintf("%s/%s", dir, e->d_name);
	}
	closedir(dh);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
			replay_file(names[i]);
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode))
			replay_file(argv[i]);
		else
			replay_dir(argv[i]);
	}
	printf("1..%d\n", count);
	return 0;
}
