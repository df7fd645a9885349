/* hsa-augment — harness-state augmentation: K rewritten variants of each
 * trajectory (or of the harness alone), every operation recorded in
 * meta.hsa.  Option parsing and the read/write loop; the work is in
 * common/hsa*.c. */
#include "cli.h"
#include "harness.h"
#include "harness_compile.h"
#include "hsa.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: hsa-augment [options] [TRAJ.jsonl...]\n"
    "Write K harness-state augmentations of each trajectory (or of --harness).\n"
    "  -H, --harness H        harness (dir, .tar[.gz], compiled .json); default for\n"
    "                         records without an inline harness\n"
    "  -k N                   variants per input (default 1)\n"
    "      --vocab NAME       train (default), heldout, or a vocabulary directory\n"
    "      --bank FILE        a per-harness rewrite bank from hsa-bank (its part for\n"
    "                         the vocabulary's split)\n"
    "      --stats FILE       per-dimension counts as JSON (operations, texts\n"
    "                         rewritten and not); a dimension that did nothing and\n"
    "                         texts with no rewrite are also reported on stderr\n"
    "      --p-skill-id P     probability per operation of each dimension\n"
    "      --p-skill-content P  (default 0.5 each)\n"
    "      --p-tools P\n"
    "      --p-prompt P\n"
    "      --p-hooks P\n"
    "      --dims LIST        only these dimensions (skill-id,skill-content,tools,\n"
    "                         prompt,hooks or all), at --p (default 0.5)\n"
    "      --p P              probability used by --dims\n"
    "      --mix R            fraction of outputs kept original (default 0)\n"
    "      --harness-only     ignore trajectories; write K augmented harnesses\n"
    "      --bare             with --harness-only: bare compiled harnesses, no meta\n"
    "  -o FILE  --seed N  --skip-bad  --help  --version\n";

enum { OPT_VOCAB = 1, OPT_PSID, OPT_PSC, OPT_PTOOLS, OPT_PPROMPT, OPT_PHOOKS, OPT_DIMS, OPT_P,
       OPT_MIX, OPT_HONLY, OPT_BARE, OPT_BANK, OPT_STATS };

static const struct option long_opts[] = {
    { "harness", required_argument, NULL, 'H' },
    { "vocab", required_argument, NULL, OPT_VOCAB },
    { "p-skill-id", required_argument, NULL, OPT_PSID },
    { "p-skill-content", required_argument, NULL, OPT_PSC },
    { "p-tools", required_argument, NULL, OPT_PTOOLS },
    { "p-prompt", required_argument, NULL, OPT_PPROMPT },
    { "p-hooks", required_argument, NULL, OPT_PHOOKS },
    { "dims", required_argument, NULL, OPT_DIMS },
    { "p", required_argument, NULL, OPT_P },
    { "mix", required_argument, NULL, OPT_MIX },
    { "harness-only", no_argument, NULL, OPT_HONLY },
    { "bare", no_argument, NULL, OPT_BARE },
    { "bank", required_argument, NULL, OPT_BANK },
    { "stats", required_argument, NULL, OPT_STATS },
    { 0 },
};

static const cli_spec spec = { usage, "H:k:", long_opts };

/* Records augmented in parallel between writes. */
#define BATCH 256

/* No silent no-ops: say which dimensions did nothing and which texts had
 * no rewrite; with --stats, write the counts. */
static int report_stats(const hsa_stats *st, const hsa_opts *o, const char *path)
{
    for (int d = 0; d < HSA_NDIMS; d++)
        if (o->p[d] > 0 && st->variants && !st->ops[d])
            hat_warn("warning: dimension %s applied no operation in %ld variant%s: nothing it can "
                     "change in this harness", hsa_dim_names[d], st->variants,
                     st->variants == 1 ? "" : "s");
    long texts = 0, stuck = 0;
    for (int d = 0; d < HSA_NDIMS; d++) texts += st->texts[d], stuck += st->unrewritable[d];
    if (stuck) {
        const char *first = NULL, *k;
        json_t *v;
        json_object_foreach(st->stuck, k, v) { first = k; break; }
        hat_warn("warning: %ld of %ld texts drawn for rewriting have no rewrite (%zu distinct%s%s%s)",
                 stuck, texts, json_object_size(st->stuck), first ? ", e.g. \"" : "",
                 first ? first : "", first ? "\"" : "");
    }
    if (!path) return EXIT_OK;
    json_t *j = hsa_stats_json(st, o);
    hat_out *out = out_open(path);
    int rc = out && out_json(out, j) == 0 && out_close(out) == 0 ? EXIT_OK : EXIT_FAIL;
    json_decref(j);
    return rc;
}

/* Write a batch in input order; a bad record stops the run (its line
 * named) unless --skip-bad, which counts it.  Frees the lines. */
static int write_batch(hat_out *out, const char *name, size_t n, int K, char **lines,
                       const char **errs, const long *lineno, int skip_bad, long *bad)
{
    int rc = EXIT_OK;
    for (size_t j = 0; j < n; j++) {
        if (rc == EXIT_OK && errs[j]) {
            hat_errat(name, lineno[j], "%s", errs[j]);
            if (skip_bad) (*bad)++;
            else rc = EXIT_FAIL;
        }
        for (int k = 0; k < K; k++) {
            char *s = lines[j * (size_t)K + k];
            if (rc == EXIT_OK && !errs[j] && s &&
                (out_write(out, s, strlen(s)) < 0 || out_write(out, "\n", 1) < 0))
                rc = EXIT_FAIL;
            free(s);
        }
    }
    return rc;
}

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    cli_common cc = { 0 };
    hsa_opts o;
    hsa_opts_default(&o);
    const char *hpath = NULL, *vocab = "train", *dims = NULL, *bank = NULL, *stats = NULL;
    double pdims = 0.5, pdim[HSA_NDIMS];
    int pset[HSA_NDIMS] = { 0 }, honly = 0, bare = 0;
    long K = 1;
    int opt;
    while ((opt = cli_next(argc, argv, &spec, &cc)) != -1) {
        switch (opt) {
        case 'H': hpath = optarg; break;
        case 'k': K = cli_long(&spec, "-k", optarg, 1, 1000000); break;
        case OPT_VOCAB: vocab = optarg; break;
        case OPT_PSID: case OPT_PSC: case OPT_PTOOLS: case OPT_PPROMPT: case OPT_PHOOKS: {
            int d = opt - OPT_PSID;
            pdim[d] = cli_double(&spec, long_opts[d + 2].name, optarg, 0, 1);
            pset[d] = 1;
            break;
        }
        case OPT_DIMS: dims = optarg; break;
        case OPT_P: pdims = cli_double(&spec, "--p", optarg, 0, 1); break;
        case OPT_MIX: o.mix = cli_double(&spec, "--mix", optarg, 0, 1); break;
        case OPT_HONLY: honly = 1; break;
        case OPT_BARE: bare = 1; break;
        case OPT_BANK: bank = optarg; break;
        case OPT_STATS: stats = optarg; break;
        }
    }
    if (dims) {
        const char *bad;
        if (hsa_opts_dims(&o, dims, pdims, &bad) < 0)
            cli_usage_error(&spec, "--dims: unknown dimension '%s'", bad);
    }
    for (int d = 0; d < HSA_NDIMS; d++)
        if (pset[d]) o.p[d] = pdim[d];
    /* No FILE and a terminal on stdin: nothing to relabel, augment the harness. */
    if (optind == argc && hpath && isatty(0)) honly = 1;
    if (honly && !hpath) cli_usage_error(&spec, "--harness-only needs --harness");
    if (bare && !honly) cli_usage_error(&spec, "--bare needs --harness-only");

    json_t *deflt = NULL;
    if (hpath && !(deflt = harness_load_checked(hpath))) return EXIT_FAIL;
    hsa_vocab *v = hsa_vocab_load(vocab);
    if (!v) return EXIT_FAIL;
    if (bank && hsa_vocab_add_bank(v, bank) < 0) { hsa_vocab_free(v); return EXIT_FAIL; }
    hsa_batch *bt = hsa_batch_new();
    hat_out *out = out_open(cc.output);
    if (!out) return EXIT_FAIL;
    int rc = EXIT_OK;

    if (honly) {
        char **lines = xcalloc((size_t)K, sizeof *lines);
        const char *err;
        hsa_augment_batch(bt, v, &o, NULL, 1, deflt, cc.seed, 0, (int)K, lines, &err);
        for (long k = 0; k < K; k++) {
            json_t *r = lines[k] ? json_loads(lines[k], 0, NULL) : NULL;
            if (!r || out_json(out, bare ? json_object_get(r, "harness") : r) < 0) rc = EXIT_FAIL;
            json_decref(r);
            free(lines[k]);
        }
        free(lines);
    } else {
        uint64_t i = 0;
        int nfiles = optind < argc ? argc - optind : 1;
        json_t **recs = xmalloc(BATCH * sizeof *recs);
        long *lineno = xmalloc(BATCH * sizeof *lineno);
        char **lines = xmalloc(BATCH * (size_t)K * sizeof *lines);
        const char **errs = xmalloc(BATCH * sizeof *errs);
        for (int f = 0; f < nfiles && rc == EXIT_OK; f++) {
            const char *path = optind < argc ? argv[optind + f] : "-";
            hsa_reader *rd = hsa_reader_open(path);
            if (!rd) { rc = EXIT_FAIL; break; }
            int got = 1;
            long bad = 0, badlines = 0;
            while (got == 1 && rc == EXIT_OK) {
                size_t n = 0;
                const char *line;
                size_t len;
                while (n < BATCH && (got = hsa_reader_line(rd, &line, &len, &lineno[n])) == 1) {
                    if ((recs[n] = hsa_parse_record(rd, line, len))) n++;
                    else if (cc.skip_bad) badlines++;
                    else { got = -1; break; }
                }
                hsa_augment_batch(bt, v, &o, recs, n, deflt, cc.seed, i, (int)K, lines, errs);
                int wrc = write_batch(out, hsa_reader_name(rd), n, (int)K, lines, errs, lineno,
                                      cc.skip_bad, &bad);
                if (wrc != EXIT_OK) rc = wrc;
                for (size_t j = 0; j < n; j++) json_decref(recs[j]);
                i += n;
            }
            if (got < 0) rc = EXIT_FAIL;
            if (badlines) hat_errat(hsa_reader_name(rd), 0, "skipped %ld bad line%s", badlines,
                                    badlines == 1 ? "" : "s");
            if (bad) hat_errat(hsa_reader_name(rd), 0, "skipped %ld bad record%s", bad,
                               bad == 1 ? "" : "s");
            hsa_reader_close(rd);
        }
        free(recs); free(lineno); free(lines); free(errs);
    }
    if (rc == EXIT_OK && out_close(out) < 0) rc = EXIT_FAIL;
    else if (rc != EXIT_OK) out_abort(out);
    if (rc == EXIT_OK) rc = report_stats(hsa_batch_stats(bt), &o, stats);
    hsa_batch_free(bt);
    hsa_vocab_free(v);
    json_decref(deflt);
    return rc;
}
