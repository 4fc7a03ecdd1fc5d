#include "cmd/gen.h"
int tpf_completion_script(FILE *out, const char *shell) { (void)out; (void)shell; return -1; }
int tpf_complete_names(FILE *out, const char *fleet_file) { (void)out; (void)fleet_file; return 0; }
