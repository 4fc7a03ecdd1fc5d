/*
 * The table of providers: one row per folder of providers/ that holds a
 * provider ({kind, name, open}, providers/provider.h struct
 * tpf_provider_row), as curl keeps a table of its protocol handlers. It
 * sits a layer above every provider so that it may name their open
 * functions; nothing below it calls up, and no symbol is weak.
 *
 * Adding a provider: a folder providers/NAME with its open function, and
 * a row here (docs/ARCHITECTURE.md section 4). A second API of an existing
 * provider (Compute Engine for gcp) is not a new row.
 */
#ifndef TPF_PROVIDER_REGISTRY_H
#define TPF_PROVIDER_REGISTRY_H

#include <stddef.h>
#include "config/config.h"
#include "providers/provider.h"
#include "util/diag.h"

/* The rows (static storage; never changes) and their number. */
extern const struct tpf_provider_row tpf_provider_table[];
extern const size_t tpf_provider_table_size;

/* Open the provider the fleet declares: tpf_provider_open_from over the
 * table. *out: caller frees with tpf_provider_free. 0, or TPF_ERROR with
 * a diagnostic. */
int tpf_provider_open(struct tpf_provider **out, const struct tpf_fleet *f, struct tpf_diags *d);

#endif
