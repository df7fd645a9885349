/* task-gen — viewer requests with gold labels from a world and phrasing banks. */
#include "cli.h"
#include "jsonl.h"
#include "tasks.h"
#include "util.h"
#include "world.h"

#include <stdlib.h>

static const char usage[] =
    "usage: task-gen --world FILE [-n N] [--split train|eval] [--faults F]\n"
    "                [--intent NAME] [--seed N] [-o FILE]\n"
    "Write N viewer requests with gold labels as tasks.jsonl (man 5 tasks.jsonl).\n"
    "  --world FILE   world.json from world-gen (required)\n"
    "  -n N           number of tasks (default 1000)\n"
    "  --split S      train or eval: which products and phrasing templates (default train)\n"
    "  --faults F     fraction of tasks with tool calls that get a fault (default 0.15)\n"
    "  --intent NAME  only this intent (default: the built-in mix of all 15)\n"
    "  --seed N       seed (default 1); task i depends only on (seed, i)\n";

int main(int argc, char **argv)
{
    enum { O_WORLD = 1, O_SPLIT, O_FAULTS, O_INTENT };
    static const struct option longs[] = {
        { "world", required_argument, NULL, O_WORLD }, { "split", required_argument, NULL, O_SPLIT },
        { "faults", required_argument, NULL, O_FAULTS }, { "intent", required_argument, NULL, O_INTENT }, { 0 } };
    cli_spec spec = { usage, "n:", longs };
    cli_common c = { 0 };
    const char *wpath = NULL, *split = "train", *intent = NULL;
    long n = 1000;
    double faults = 0.15;
    int opt;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case 'n': n = cli_long(&spec, "-n", optarg, 0, 1L << 40); break;
        case O_WORLD: wpath = optarg; break;
        case O_SPLIT: split = optarg; break;
        case O_FAULTS: faults = cli_double(&spec, "--faults", optarg, 0, 1); break;
        case O_INTENT: intent = optarg; break;
        }
    }
    if (optind < argc) cli_usage_error(&spec, "unexpected argument '%s'", argv[optind]);
    if (!wpath) cli_usage_error(&spec, "--world is required");
    if (!taskgen_split_known(split)) cli_usage_error(&spec, "--split: 'train' or 'eval', not '%s'", split);
    if (intent && !task_intent_known(intent)) cli_usage_error(&spec, "--intent: unknown intent '%s'", intent);
    world *w = world_load(wpath);
    if (!w) return EXIT_FAIL;
    taskgen *g = taskgen_new(w, split);
    if (!g) { world_free(w); return EXIT_FAIL; }
    hat_out *o = out_open(c.output);
    int rc = o ? 0 : -1;
    for (long i = 0; i < n && !rc; i++) {
        json_t *t = taskgen_make(g, c.seed, i, intent, faults);
        if (!t) { hat_errat(wpath, 0, "cannot compose task %ld (world too small?)", i); rc = -1; break; }
        rc = out_json(o, t);
        json_decref(t);
    }
    if (o) { if (rc) out_abort(o); else rc = out_close(o); }
    taskgen_free(g);
    world_free(w);
    return rc ? EXIT_FAIL : EXIT_OK;
}
