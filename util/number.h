/*
 * The one grammar of numbers in what people write to tpuform: fleet-file
 * values (count, budget amounts, prices, ports), flags (-parallelism),
 * environment knobs (TPUFORM_*), and the numbers inside durations
 * (util/timeutil.h tpf_parse_duration) all go through tpf_parse_number.
 *
 *   number = digits [ "." digits ] [ ( "e" | "E" ) [ "+" | "-" ] digits ]
 *
 * YAML 1.2's core-schema float (https://yaml.org/spec/1.2.2/#10214-floating-point)
 * without its sign, leading-dot and .inf/.nan forms, so `1e3` means 1000
 * wherever a number is taken (issue 26: `budget: {chip_hours: 1e3}` was
 * refused while durations took exponents). Never a sign (no value tpuform
 * takes is negative), hex, inf or nan, which strtod(3) alone would accept.
 */
#ifndef TPF_NUMBER_H
#define TPF_NUMBER_H

/* What a number looks like, for messages: "such as 100, 12.5 or 1e3". */
#define TPF_NUMBER_EXAMPLES "such as 100, 12.5 or 1e3"

/*
 * The number at the start of s, as much of it as the grammar takes: 0, with
 * *out its value and *end (may be NULL) just past it; -1 when s does not
 * start with a number, or it is too large for a double (then *out and *end
 * are untouched).
 */
int tpf_parse_number_prefix(const char *s, double *out, const char **end);

/* s, the whole of it, as a number: 0 or -1 (see above). s may be NULL. */
int tpf_parse_number(const char *s, double *out);

/*
 * s as a whole number (a number of the grammar whose value is whole: "1e3"
 * is 1000, "2.0" is 2, "2.5" is not): 0 and *out; -1 when s is not a whole
 * number; -2 when it is one outside [min, max].
 */
int tpf_parse_whole(const char *s, long min, long max, long *out);

#endif
