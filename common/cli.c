/* cli.c — shared option parsing on getopt_long. */
#include "cli.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_SEED = CLI_COMMON_BASE, OPT_SKIP_BAD, OPT_VERSION };

static const struct option common_long[] = {
    { "output",   required_argument, NULL, 'o' },
    { "seed",     required_argument, NULL, OPT_SEED },
    { "skip-bad", no_argument,       NULL, OPT_SKIP_BAD },
    { "help",     no_argument,       NULL, 'h' },
    { "version",  no_argument,       NULL, OPT_VERSION },
};
#define N_COMMON (sizeof common_long / sizeof common_long[0])

void cli_init(int argc, char **argv)
{
    (void)argc;
    const char *p = argv[0] ? strrchr(argv[0], '/') : NULL;
    hat_prog = p ? p + 1 : (argv[0] ? argv[0] : "hat");
}

void cli_usage_error(const cli_spec *spec, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hat_verrat(NULL, 0, fmt, ap);
    va_end(ap);
    fputs(spec->usage, stderr);
    exit(EXIT_USAGE);
}

/* Build the merged tables once per spec (programs have one spec). */
static struct option *merged;
static char *merged_short;
static const cli_spec *merged_for;

static void merge(const cli_spec *spec)
{
    size_t n = 0;
    if (spec->long_opts)
        while (spec->long_opts[n].name) n++;
    free(merged);
    free(merged_short);
    merged = xcalloc(n + N_COMMON + 1, sizeof *merged);
    memcpy(merged, common_long, sizeof common_long);
    if (n) memcpy(merged + N_COMMON, spec->long_opts, n * sizeof *merged);
    /* Leading ':' lets us report missing arguments ourselves. */
    merged_short = xasprintf(":o:h%s", spec->short_opts ? spec->short_opts : "");
    merged_for = spec;
}

int cli_next(int argc, char **argv, const cli_spec *spec, cli_common *c)
{
    if (merged_for != spec) {
        merge(spec);
        if (!c->seed_set) c->seed = 1;
    }
    for (;;) {
        int idx = -1;
        int opt = getopt_long(argc, argv, merged_short, merged, &idx);
        switch (opt) {
        case 'o': c->output = optarg; continue;
        case OPT_SEED: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 0);
            if (errno || *end || !*optarg || optarg[0] == '-')
                cli_usage_error(spec, "--seed: not a non-negative integer: '%s'", optarg);
            c->seed = v;
            c->seed_set = 1;
            continue;
        }
        case OPT_SKIP_BAD: c->skip_bad = 1; continue;
        case 'h': fputs(spec->usage, stdout); exit(EXIT_OK);
        case OPT_VERSION: printf("%s (hat) %s\n", hat_prog, HAT_VERSION); exit(EXIT_OK);
        case ':':
            cli_usage_error(spec, "option '%s' needs an argument", argv[optind - 1]);
        case '?':
            if (optopt && optopt < 128) cli_usage_error(spec, "unknown option '-%c'", optopt);
            cli_usage_error(spec, "unknown option '%s'", argv[optind - 1]);
        default:
            return opt;
        }
    }
}

long cli_long(const cli_spec *spec, const char *opt, const char *arg, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 0);
    if (errno || *end || !*arg)
        cli_usage_error(spec, "%s: not an integer: '%s'", opt, arg);
    if (v < min || v > max)
        cli_usage_error(spec, "%s: %ld is outside [%ld, %ld]", opt, v, min, max);
    return v;
}

double cli_double(const cli_spec *spec, const char *opt, const char *arg, double min, double max)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || *end || !*arg || !isfinite(v))
        cli_usage_error(spec, "%s: not a number: '%s'", opt, arg);
    if (v < min || v > max)
        cli_usage_error(spec, "%s: %g is outside [%g, %g]", opt, v, min, max);
    return v;
}
