/* cli.h — the options every hat program shares, parsed the same way.
 *
 *   -o, --output FILE   write here instead of stdout (atomic, .gz aware)
 *       --seed N        seed for everything random (default 1)
 *       --skip-bad      skip unparseable input lines, report the count
 *   -h, --help          usage on stdout, exit 0
 *       --version       version on stdout, exit 0
 *
 * A program lists only its own options; cli_next merges the shared ones
 * in, handles them, and returns the program's options one at a time like
 * getopt_long.  An unknown option prints the usage on stderr, exit 2. */
#ifndef HAT_CLI_H
#define HAT_CLI_H

#include <getopt.h>
#include <stdint.h>

/* Zero-initialise before the first cli_next: cli_common c = { 0 }; */
typedef struct {
    const char *output;      /* -o; NULL = stdout */
    uint64_t    seed;        /* --seed; default 1 */
    int         seed_set;
    int         skip_bad;    /* --skip-bad */
} cli_common;

typedef struct {
    const char *usage;              /* printed by --help and on errors */
    const char *short_opts;         /* program's own, getopt syntax */
    const struct option *long_opts; /* program's own, {0} terminated, may be NULL */
} cli_spec;

/* Program-specific long options must use val < CLI_COMMON_BASE. */
#define CLI_COMMON_BASE 0x10000

void cli_init(int argc, char **argv);        /* sets hat_prog */
int  cli_next(int argc, char **argv, const cli_spec *spec, cli_common *c);
void cli_usage_error(const cli_spec *spec, const char *fmt, ...)
     __attribute__((format(printf, 2, 3), noreturn));

/* Checked number parsing for option values; exits 2 with a message. */
long   cli_long(const cli_spec *spec, const char *opt, const char *arg, long min, long max);
double cli_double(const cli_spec *spec, const char *opt, const char *arg, double min, double max);

#endif
