/* ckpt — inspect and convert checkpoints: info, export --hf, import, convert. */
#include "ckpt.h"
#include "cli.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: ckpt info CKPT...\n"
    "       ckpt export --hf DIR [--dtype f32|bf16] CKPT\n"
    "       ckpt import DIR -o OUT.ckpt\n"
    "       ckpt convert --dtype f32|bf16 CKPT -o OUT.ckpt\n"
    "Inspect and convert checkpoints (man 5 ckpt).  CKPT is a .ckpt file or a\n"
    "Hugging Face model directory.\n"
    "  info      one JSON line per checkpoint: sizes, dtype, config, training state\n"
    "  export    write a Hugging Face directory (config.json, model.safetensors,\n"
    "            generation_config.json; tokenizer.json and tokenizer_config.json\n"
    "            with hat's chat template); training state is left out\n"
    "  import    bundle a Hugging Face directory into one .ckpt\n"
    "  convert   rewrite with the weights stored as f32 or bf16\n"
    "  --hf DIR          export target directory\n"
    "  --dtype f32|bf16  storage type of the weights\n"
    "  -o FILE           output checkpoint\n";

enum { O_HF = 1, O_DTYPE };

static int info(const char *path, hat_out *o)
{
    ckpt k;
    if (ckpt_load(&k, path)) return -1;
    json_t *j = json_object();
    json_object_set_new(j, "path", json_string(path));
    json_object_set_new(j, "params", json_integer((json_int_t)k.m->n_params));
    json_object_set_new(j, "tensors", json_integer(k.m->n_tensors));
    json_object_set_new(j, "dtype", json_string(st_dtype_name(k.dtype)));
    json_object_set_new(j, "tokenizer", json_boolean(k.tokenizer != NULL));
    json_object_set_new(j, "optimizer", json_boolean(k.opt_m != NULL));
    json_t *step = k.state ? json_object_get(k.state, "step") : NULL;
    json_object_set_new(j, "step", step ? json_incref(step) : json_null());
    json_object_set_new(j, "config", model_config_json(&k.m->cfg));
    int rc = out_json(o, j);
    json_decref(j);
    ckpt_free(&k);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "hf", required_argument, NULL, O_HF }, { "dtype", required_argument, NULL, O_DTYPE }, { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *hf = NULL;
    int dtype = -1, opt;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        if (opt == O_HF) hf = optarg;
        else if (opt == O_DTYPE) {
            if (!strcmp(optarg, "f32")) dtype = ST_F32;
            else if (!strcmp(optarg, "bf16")) dtype = ST_BF16;
            else cli_usage_error(&spec, "--dtype: must be f32 or bf16");
        }
    }
    if (optind >= argc) cli_usage_error(&spec, "missing command");
    const char *cmd = argv[optind++];
    int nargs = argc - optind;
    char **args = argv + optind;

    if (!strcmp(cmd, "info")) {
        if (nargs < 1) cli_usage_error(&spec, "info: missing CKPT");
        hat_out *o = out_open(c.output);
        if (!o) return EXIT_FAIL;
        int rc = 0;
        for (int i = 0; i < nargs && !rc; i++) rc = info(args[i], o);
        if (rc) { out_abort(o); return EXIT_FAIL; }
        return out_close(o) ? EXIT_FAIL : EXIT_OK;
    }
    int is_export = !strcmp(cmd, "export"), is_import = !strcmp(cmd, "import"),
        is_convert = !strcmp(cmd, "convert");
    if (!is_export && !is_import && !is_convert) cli_usage_error(&spec, "unknown command '%s'", cmd);
    if (nargs != 1) cli_usage_error(&spec, "%s: needs exactly one checkpoint argument", cmd);
    if (is_export && !hf) cli_usage_error(&spec, "export: --hf DIR is required");
    if (!is_export && (!c.output || is_stdio_path(c.output)))
        cli_usage_error(&spec, "%s: -o OUT.ckpt is required", cmd);
    if (is_convert && dtype < 0) cli_usage_error(&spec, "convert: --dtype is required");
    if (is_import && !ckpt_is_dir(args[0]))
        cli_usage_error(&spec, "import: '%s' is not a directory", args[0]);

    ckpt k;
    if (ckpt_load(&k, args[0])) return EXIT_FAIL;
    if (dtype < 0) dtype = k.dtype == ST_BF16 ? ST_BF16 : ST_F32;
    int rc = is_export ? ckpt_export_hf(&k, hf, dtype) : ckpt_save(&k, c.output, dtype);
    ckpt_free(&k);
    return rc ? EXIT_FAIL : EXIT_OK;
}
