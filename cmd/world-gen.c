/* world-gen — generate a simulated shop and live stream as world.json. */
#include "cli.h"
#include "jsonl.h"
#include "util.h"
#include "world.h"

#include <stdlib.h>

static const char usage[] =
    "usage: world-gen [--seed N] [--products N] [-o FILE]\n"
    "Generate a live-commerce world (products, coupons, orders, stream state,\n"
    "compliance rules) as one compact JSON object (man 5 world.json).\n"
    "  --products N   number of products (default 120, at least 5)\n"
    "  --seed N       seed (default 1); same seed, same bytes\n"
    "  -o FILE        output file (default stdout)\n";

int main(int argc, char **argv)
{
    static const struct option longs[] = { { "products", required_argument, NULL, 'p' }, { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    long n = 120;
    int opt;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1)
        if (opt == 'p') n = cli_long(&spec, "--products", optarg, 5, 100000);
    if (optind < argc) cli_usage_error(&spec, "unexpected argument '%s'", argv[optind]);
    json_t *w = world_generate(c.seed, (int)n);
    if (!w) return EXIT_FAIL;
    hat_out *o = out_open(c.output);
    if (!o) { json_decref(w); return EXIT_FAIL; }
    int rc = out_json(o, w);
    json_decref(w);
    if (rc) { out_abort(o); return EXIT_FAIL; }
    return out_close(o) ? EXIT_FAIL : EXIT_OK;
}
