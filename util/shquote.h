/*
 * POSIX shell quoting for values placed into rendered scripts and remote
 * command lines. Every value becomes one single-quoted word; a single quote
 * inside is written as '\'' . Newlines, $(), backticks, and any byte
 * (including UTF-8) survive unchanged because nothing inside single quotes is
 * special to sh (POSIX.1-2017 XCU 2.2.2).
 */
#ifndef TPF_SHQUOTE_H
#define TPF_SHQUOTE_H

#include "util/buf.h"

/* Append the quoted form of s to b. */
void tpf_shquote_buf(struct tpf_buf *b, const char *s);
/* The quoted form of s in a fresh string; caller frees. */
char *tpf_shquote(const char *s);

#endif
