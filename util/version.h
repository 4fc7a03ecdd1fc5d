/*
 * Dotted version numbers, as tpuform stamps them into state files and lock
 * info ("0.1.0").
 */
#ifndef TPF_VERSION_CMP_H
#define TPF_VERSION_CMP_H

/*
 * Compare "0.10.2" with "0.9": <0, 0 or >0, part by part as numbers; a
 * missing part is 0 ("0.1" == "0.1.0"), and a part that is not a number
 * compares as 0, so "dev" is older than any release.
 */
int tpf_version_cmp(const char *a, const char *b);

#endif
