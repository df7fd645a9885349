/* report — verdicts of several models → the four-set table (Markdown and
 * JSON) and plots through gnuplot. */
#include "cli.h"
#include "jsonl.h"
#include "report.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: report [--cases FILE] --model NAME=FILE[,FILE...]... [--json FILE] [--plots DIR]\n"
    "              [--metrics NAME=FILE]... [--metric KEY] [--bootstrap B] [--seed N]\n"
    "              [--skip-bad] [-o FILE] [VERDICTS...]\n"
    "Per-set scores 0-100 with 95% confidence intervals, breakdowns per intent, fault\n"
    "type, HSA dimension, robustness kind and IFEval category; Markdown on -o/stdout.\n"
    "  --cases FILE          cases.jsonl: sets and meta; cases without a verdict count failed\n"
    "  --model NAME=FILES    verdicts of a model: judge(1), rollout --judge or ifeval(1) lines\n"
    "                        (repeatable; plain VERDICTS files form the model \"model\")\n"
    "  --json FILE           the report as one JSON object\n"
    "  --plots DIR           scores.{png,svg} and, with --metrics, curves.{png,svg} (gnuplot)\n"
    "  --metrics NAME=FILE   a training run's metrics JSONL for the curves (repeatable)\n"
    "  --metric KEY          the metric to plot against step (default loss)\n"
    "  --bootstrap B         bootstrap resamples for the mean-total interval (default 1000)\n"
    "  --seed N              bootstrap seed (default 1)\n"
    "  --skip-bad            skip bad verdict lines and report the count\n"
    "  -o FILE               the Markdown report (default stdout; atomic)\n";

enum { O_CASES = 1, O_MODEL, O_JSON, O_PLOTS, O_METRICS, O_METRIC, O_BOOT };

/* NAME=FILE[,FILE...] → name and a list; 0 or -1. */
static int split_spec(const char *arg, char **name, char **files)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) return -1;
    *name = xstrndup(arg, (size_t)(eq - arg));
    *files = xstrdup(eq + 1);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "cases", required_argument, NULL, O_CASES }, { "model", required_argument, NULL, O_MODEL },
        { "json", required_argument, NULL, O_JSON }, { "plots", required_argument, NULL, O_PLOTS },
        { "metrics", required_argument, NULL, O_METRICS }, { "metric", required_argument, NULL, O_METRIC },
        { "bootstrap", required_argument, NULL, O_BOOT }, { 0, 0, 0, 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *cases = NULL, *jpath = NULL, *plots = NULL, *metric = "loss";
    const char *models[256], *metrics[64];
    int nmodels = 0, nmetrics = 0, B = 1000, opt;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case O_CASES: cases = optarg; break;
        case O_MODEL:
            if (nmodels == 256) cli_usage_error(&spec, "too many --model options");
            if (!strchr(optarg, '=')) cli_usage_error(&spec, "--model wants NAME=FILE, not '%s'", optarg);
            models[nmodels++] = optarg;
            break;
        case O_JSON: jpath = optarg; break;
        case O_PLOTS: plots = optarg; break;
        case O_METRICS:
            if (nmetrics == 64) cli_usage_error(&spec, "too many --metrics options");
            if (!strchr(optarg, '=')) cli_usage_error(&spec, "--metrics wants NAME=FILE, not '%s'", optarg);
            metrics[nmetrics++] = optarg;
            break;
        case O_METRIC: metric = optarg; break;
        case O_BOOT: B = (int)cli_long(&spec, "--bootstrap", optarg, 1, 1000000); break;
        }
    }
    if (!nmodels && optind == argc && !nmetrics) cli_usage_error(&spec, "no verdicts: give --model NAME=FILE");

    report *r = report_new();
    int rc = EXIT_FAIL;
    json_t *rep = NULL;
    char *md = NULL, *err = NULL;
    if (cases && report_add_cases(r, cases, c.skip_bad)) goto done;
    for (int i = 0; i < nmodels; i++) {
        char *name, *files, *save = NULL;
        if (split_spec(models[i], &name, &files)) { hat_warn("--model %s: want NAME=FILE", models[i]); goto done; }
        int bad = 0;
        for (char *f = strtok_r(files, ",", &save); f && !bad; f = strtok_r(NULL, ",", &save))
            bad = report_add_verdicts(r, name, f, c.skip_bad);
        free(name);
        free(files);
        if (bad) goto done;
    }
    for (int i = optind; i < argc; i++)
        if (report_add_verdicts(r, "model", argv[i], c.skip_bad)) goto done;
    for (int i = 0; i < nmetrics; i++) {
        char *name, *file;
        if (split_spec(metrics[i], &name, &file)) { hat_warn("--metrics %s: want NAME=FILE", metrics[i]); goto done; }
        int bad = report_add_metrics(r, name, file, metric);
        free(name);
        free(file);
        if (bad) goto done;
    }
    rep = report_json(r, B, c.seed);
    md = report_markdown(rep);
    if (jpath) {
        hat_out *o = out_open(jpath);
        if (!o) goto done;
        if (out_json(o, rep)) { out_abort(o); goto done; }
        if (out_close(o)) goto done;
    }
    hat_out *o = out_open(c.output);
    if (!o) goto done;
    if (out_puts(o, md)) { out_abort(o); goto done; }
    if (out_close(o)) goto done;
    if (plots && report_plots(r, rep, plots, &err)) { hat_warn("%s", err); goto done; }
    rc = EXIT_OK;
done:
    free(err);
    free(md);
    json_decref(rep);
    report_free(r);
    return rc;
}
