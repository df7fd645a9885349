/* test_harness.c — the harness library: the three forms load to the same
 * object, unpack/pack round trips, lookups and rendering against known
 * text, every lint rule (by mutating the example), every diff kind, and
 * the hook formatters (wrap/unwrap inverse for both envelope styles). */
#include "test.h"
#include "harness.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *example(void) { return test_example_harness(); }

static char *tmp(const char *name) { return xasprintf("%s/%s", test_tmpdir(), name); }

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

/* The value at a JSON path like /skills/3/name (no escapes needed here). */
static json_t *at(json_t *v, const char *path)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save, *tok = strtok_r(buf, "/", &save); v && tok; tok = strtok_r(NULL, "/", &save))
        v = json_is_array(v) ? json_array_get(v, strtoul(tok, NULL, 10)) : json_object_get(v, tok);
    return v;
}

static void set(json_t *h, const char *parent, const char *key, json_t *v)
{
    json_t *p = at(h, parent);
    if (json_is_array(p)) json_array_set_new(p, strtoul(key, NULL, 10), v);
    else json_object_set_new(p, key, v);
}

static json_t *load_example(void)
{
    json_t *h = harness_load(example());
    if (!h) { fprintf(stderr, "cannot load %s\n", example()); exit(1); }
    return h;
}

static void loads_directory_and_looks_up(void)
{
    json_t *h = load_example();
    CHECK_EQ_INT(json_array_size(json_object_get(h, "skills")), 9);
    CHECK_EQ_INT(json_array_size(json_object_get(h, "tools")), 7);
    CHECK_EQ_INT(json_array_size(at(h, "/system_prompt/blocks")), 6);
    CHECK_STR(json_string_value(json_object_get(harness_skill_by_name(h, "price_promo"), "function")), "price");
    CHECK_STR(json_string_value(json_object_get(harness_skill_by_function(h, "clarify"), "kind")), "strategy");
    const json_t *t = harness_tool_by_function(h, "size.recommend");
    CHECK_STR(json_string_value(json_object_get(t, "name")), "recommend_size");
    CHECK(harness_tool_by_name(h, "recommend_size") == t);
    CHECK_STR(harness_param_name_for(t, "weight_kg"), "weight_kg");
    CHECK(harness_param_name_for(t, "order_id") == NULL);
    CHECK(harness_skill_by_name(h, "nope") == NULL);
    double v = 0;
    CHECK_EQ_INT(harness_param(h, "max_chars", &v), 0);
    CHECK_NEAR(v, 120, 0);
    CHECK_EQ_INT(harness_param(h, "max_turns", &v), 0);
    CHECK_NEAR(v, 6, 0);
    CHECK_EQ_INT(harness_param(h, "host", &v), -1);   /* a string param is not numeric */
    CHECK_EQ_INT(harness_param(h, "nope", &v), -1);
    CHECK_STR(harness_loader_name(h), "load_skill");
    CHECK_STR(harness_loader_argument(h), "skill");
    /* canonical key order of the compiled form */
    const char *k;
    json_t *x;
    const char *want[] = { "name", "version", "system_prompt", "skill_loader", "skills", "tools", "hooks" };
    size_t i = 0;
    json_object_foreach(h, k, x) { if (i < 7) CHECK_STR(k, want[i]); i++; }
    CHECK_EQ_INT(i, 7);
    json_decref(h);
}

static void renders_system_text_tools_and_skills(void)
{
    json_t *h = load_example();
    char *s = harness_system_text(h);
    CHECK(!strncmp(s, "You are Mia, the AI co-host of the Orange Live live stream.", 59));
    CHECK(strstr(s, "warm, quick and accurate.\n\nReply format:\n- Keep every reply within 120 characters.\n"
                    "- Use at most 1 emoji per reply.\n") != NULL);
    CHECK(strstr(s, "\n\nSkills you can load with load_skill (load one reply skill before your final reply):\n"
                    "- price_promo: Quote live prices") != NULL);
    CHECK(str_endswith(s, "\n- clarify: Ask one short question when the viewer's request is ambiguous."));
    CHECK(strchr(s, '{') == NULL);   /* every placeholder filled */
    free(s);

    json_t *tools = harness_tools(h);
    CHECK_EQ_INT(json_array_size(tools), 8);
    CHECK_STR(json_string_value(at(tools, "/0/function/name")), "get_product");
    CHECK_STR(json_string_value(at(tools, "/7/function/name")), "load_skill");
    CHECK_STR(json_string_value(at(tools, "/7/type")), "function");
    CHECK_STR(json_string_value(at(tools, "/7/function/parameters/required/0")), "skill");
    CHECK_STR(json_string_value(at(tools, "/7/function/parameters/properties/skill/type")), "string");
    char *dump = json_compact(tools);
    CHECK(strstr(dump, "x-function") == NULL);
    CHECK(strstr(dump, "\"minimum\":50") != NULL);   /* other schema keys kept */
    free(dump);
    json_decref(tools);

    char *t = harness_skill_text(h, harness_skill_by_name(h, "clarify"));
    CHECK_STR(t, "# clarify\n- Ask exactly one clarifying question.\n"
                 "- Offer two or three concrete options when you can.");
    free(t);
    json_decref(h);
}

/* skill_loader.line writes each skill's line: the default's bytes when
 * absent, the template's with both filled when given, and a literal
 * brace in a description is kept as it is. */
static void skill_line_template(void)
{
    json_t *h = load_example();
    char *before = harness_system_text(h);
    set(h, "/skill_loader", "line", json_string("- {name}: {description}"));
    char *same = harness_system_text(h);
    CHECK_STR(same, before);
    set(h, "/skill_loader", "line", json_string("- {description} -> {name}"));
    set(h, "/skills/0", "description", json_string("Prices {now}."));
    char *s = harness_system_text(h);
    CHECK(strstr(s, "(load one reply skill before your final reply):\n- Prices {now}. -> price_promo\n") != NULL);
    CHECK(str_endswith(s, "\n- Ask one short question when the viewer's request is ambiguous. -> clarify"));
    CHECK(strstr(s, ": Quote live prices") == NULL);
    free(before);
    free(same);
    free(s);
    json_decref(h);
}

static void fill_replaces_only_known_placeholders(void)
{
    json_t *vars = json_pack("{s:s,s:i,s:f}", "a", "x", "n", 42, "r", 2.5);
    char *s = harness_fill("{a}-{n}-{r} {missing} {not a name} {} {{a}}", vars);
    CHECK_STR(s, "x-42-2.5 {missing} {not a name} {} {x}");
    free(s);
    json_decref(vars);
}

static int run(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void three_forms_load_the_same(void)
{
    json_t *h = load_example();
    const char *top = getenv("HAT_TOP") ? getenv("HAT_TOP") : ".";
    char *tgz = tmp("h.tar.gz"), *flat = tmp("flat.tar"), *js = tmp("h.json");
    char *cmd = xasprintf("tar -C '%s/examples' -czf '%s' harness && tar -C '%s/examples/harness' -cf '%s' .",
                          top, tgz, top, flat);
    CHECK_EQ_INT(run(cmd), 0);
    json_dump_file(h, js, HAT_JSON_FLAGS);
    const char *paths[] = { tgz, flat, js };
    for (int i = 0; i < 3; i++) {
        json_t *o = NULL;
        json_t *g = harness_load_ex(paths[i], &o);
        CHECK(g && json_equal(g, h));
        CHECK(o && json_object_get(o, "") != NULL);
        if (i == 0) {
            char *w = xasprintf("%s:harness/skills/size_advisor/SKILL.md", tgz);
            CHECK_STR(harness_origin(o, "/skills/2/rules/0"), w);
            free(w);
        }
        json_decref(g);
        json_decref(o);
    }
    json_t *o = NULL;
    json_t *g = harness_load_ex(example(), &o);
    char *want = xasprintf("%s/prompt/20-reply_format.md", example());
    CHECK_STR(harness_origin(o, "/system_prompt/blocks/1/params/max_chars"), want);
    free(want);
    want = xasprintf("%s/harness.json", example());
    CHECK_STR(harness_origin(o, "/hooks/error_format"), want);
    free(want);
    json_decref(g);
    json_decref(o);
    free(cmd);
    free(tgz);
    free(flat);
    free(js);
    json_decref(h);
}

static void unpack_then_pack_is_exact(void)
{
    json_t *h = load_example();
    char *d = tmp("unpacked");
    CHECK_EQ_INT(harness_unpack(h, d), 0);
    char *cmd = xasprintf("diff -r '%s' '%s' >&2", example(), d);
    CHECK_EQ_INT(run(cmd), 0);   /* the example is in canonical form, byte for byte */
    json_t *g = harness_load(d);
    CHECK(g && json_equal(g, h));
    char *a = json_compact(h), *b = json_compact(g);
    CHECK_STR(a, b);
    /* values that need quoting in front matter survive too */
    json_object_set_new(json_object_get(h, "skills") ? (json_t *)harness_skill_by_name(h, "clarify") : h,
                        "description", json_string("true"));
    set(h, "/skills/0", "description", json_string("  padded: \"quoted\"  "));
    set(h, "/system_prompt/blocks/0", "text", json_string("two\n\nparagraphs"));
    char *d2 = tmp("unpacked2");
    CHECK_EQ_INT(harness_unpack(h, d2), 0);
    json_t *g2 = harness_load(d2);
    CHECK(g2 && json_equal(g2, h));
    /* what the directory form cannot hold is refused, not mangled */
    set(h, "/skills/1/rules", "0", json_string("two\nlines"));
    char *d3 = tmp("unpacked3");
    CHECK_EQ_INT(harness_unpack(h, d3), -1);
    free(d3);
    free(a);
    free(b);
    free(cmd);
    free(d);
    free(d2);
    json_decref(g);
    json_decref(g2);
    json_decref(h);
}

/* A copy of the example directory to break. */
static char *copy_example(const char *name)
{
    char *d = tmp(name);
    char *cmd = xasprintf("rm -rf '%s' && cp -R '%s' '%s'", d, example(), d);
    if (run(cmd)) exit(1);
    free(cmd);
    return d;
}

/* The first problem whose file ends with `file`; NULL if none. */
static json_t *problem_in(json_t *problems, const char *file)
{
    size_t i;
    json_t *p;
    json_array_foreach(problems, i, p)
        if (str_endswith(json_string_value(json_object_get(p, "file")), file)) return p;
    return NULL;
}

static void load_errors_name_file_and_line(void)
{
    char *d = copy_example("broken");
    char *f = xasprintf("%s/prompt/20-reply_format.md", d);
    put(f, "---\nid: reply_format\nparams: {\"max_chars\": {\"value\": 120,}}\n---\nReply.\n");
    char *g = xasprintf("%s/tools/order_status.json", d);
    put(g, "{\n  \"name\": \"order_status\",\n  \"function\": \n}\n");
    char *s = xasprintf("%s/skills/clarify/SKILL.md", d);
    put(s, "---\nname: clarify\nfunction: clarify\nkind: strategy\ndescription: x\n---\n- ok\nnot a rule\n");
    char *extra = xasprintf("%s/prompt/70-extra.md", d);
    put(extra, "---\nid: extra\n---\nUnlisted.\n");
    json_t *problems = json_array(), *o = NULL;
    json_t *h = harness_load_problems(d, &o, problems);
    CHECK(h != NULL);
    json_t *p = problem_in(problems, "prompt/20-reply_format.md");
    CHECK(p && json_integer_value(json_object_get(p, "line")) == 3);
    CHECK(p && strstr(json_string_value(json_object_get(p, "message")), "bad JSON value"));
    p = problem_in(problems, "tools/order_status.json");
    CHECK(p && json_integer_value(json_object_get(p, "line")) == 4);
    p = problem_in(problems, "skills/clarify/SKILL.md");
    CHECK(p && json_integer_value(json_object_get(p, "line")) == 8);
    CHECK(p && strstr(json_string_value(json_object_get(p, "message")), "rule line"));
    p = problem_in(problems, "prompt/70-extra.md");
    CHECK(p && strstr(json_string_value(json_object_get(p, "message")), "not listed"));
    /* the broken files are listed and have a file: their own problem is
     * the one reported, not a second, false "listed but has no file" */
    CHECK(problem_in(problems, "harness.json") == NULL);
    CHECK_EQ_INT(json_array_size(problems), 4);
    /* harness_load refuses the lot */
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");
    CHECK(harness_load(d) == NULL);
    char *nx = tmp("does-not-exist");
    CHECK(harness_load(nx) == NULL);
    free(nx);
    fclose(stderr);
    stderr = saved;
    json_decref(h);
    json_decref(o);
    json_decref(problems);
    free(d); free(f); free(g); free(s); free(extra);
}

/* ---- lint ---------------------------------------------------------------- */

static int lint_has(const json_t *h, const char *sev, const char *path, const char *msg)
{
    json_t *ps = harness_lint(h, NULL);
    size_t i;
    json_t *p;
    int found = 0;
    json_array_foreach(ps, i, p)
        found |= !strcmp(json_string_value(json_object_get(p, "path")), path) &&
                 !strcmp(json_string_value(json_object_get(p, "severity")), sev) &&
                 strstr(json_string_value(json_object_get(p, "message")), msg) != NULL;
    if (!found) {
        char *s = json_compact(ps);
        fprintf(stderr, "  wanted %s %s '%s' in %s\n", sev, path, msg, s);
        free(s);
    }
    json_decref(ps);
    return found;
}

typedef struct {
    const char *parent, *key, *value;   /* value as JSON; NULL deletes */
    const char *sev, *path, *msg;
} mutation;

static const mutation LINT_CASES[] = {
    { "/skills/1", "name", "\"price_promo\"", "error", "/skills/1/name", "duplicate skill name" },
    { "/tools/1", "name", "\"get_product\"", "error", "/tools/1/name", "duplicate tool name" },
    { "/tools/2", "name", "\"load_skill\"", "error", "/tools/2/name", "skill loader" },
    { "/skills/0", "function", "\"haggle\"", "error", "/skills/0/function", "unknown skill function" },
    { "/tools/0", "function", "\"product.search\"", "error", "/tools/0/function", "unknown tool function" },
    { "/tools/5/parameters/properties/height_cm", "x-function", "\"height\"", "error",
      "/tools/5/parameters/properties/height_cm/x-function", "unknown x-function" },
    { "/tools/5/parameters/properties", "height_cm", NULL, "error", "/tools/5/parameters/properties",
      "no property with x-function \"height_cm\"" },
    { "/tools/5/parameters/properties/height_cm", "type", "\"string\"", "error",
      "/tools/5/parameters/properties/height_cm/type", "height_cm of size.recommend is a integer" },
    { "/tools/0/parameters", "type", "\"array\"", "error", "/tools/0/parameters/type", "must be of type object" },
    { "/tools/0/parameters", "properties", "[]", "error", "/tools/0/parameters/properties", "must be an object" },
    { "/tools/0/parameters/required", "0", "\"sku\"", "error", "/tools/0/parameters/required/0",
      "\"sku\" is not a property" },
    { "/tools/0/parameters/properties/product", "type", NULL, "error",
      "/tools/0/parameters/properties/product", "property without type" },
    { "/tools/0/parameters/properties/product", "type", "\"text\"", "error",
      "/tools/0/parameters/properties/product/type", "unknown type \"text\"" },
    { "/system_prompt/blocks/1/params/max_chars", "value", "300", "error",
      "/system_prompt/blocks/1/params/max_chars/value", "outside [60, 200]" },
    { "/system_prompt/blocks/1/params/max_chars", "min", "500", "error",
      "/system_prompt/blocks/1/params/max_chars", "min 500 > max 200" },
    { "/system_prompt/blocks/1", "text", "\"Within {limit} chars:\"", "error",
      "/system_prompt/blocks/1/text", "placeholder {limit} has no param" },
    { "/system_prompt/blocks/1/items", "0", "\"Keep it short.\"", "warning",
      "/system_prompt/blocks/1/params/max_chars", "declared but not used" },
    { "/system_prompt/blocks/2", "id", "\"persona\"", "error", "/system_prompt/blocks/2",
      "duplicate block id \"persona\"" },
    { "/system_prompt/blocks/3", "params", "{\"max_chars\": {\"value\": 1, \"min\": 0, \"max\": 2}}", "error",
      "/system_prompt/blocks/3/params/max_chars", "also declared" },
    { "/system_prompt/blocks/4", "text", "\"\"", "error", "/system_prompt/blocks/3", "" /* dummy, replaced */ },
    { "/skills/3", "kind", "\"answer\"", "error", "/skills/3/kind", "kind must be reply or strategy" },
    { "/skills/6", "kind", "\"reply\"", "warning", "/skills/6/kind", "is a strategy skill" },
    { "/skills/3", "rules", "[]", "error", "/skills/3/rules", "empty rules" },
    { "/skills/3/rules", "1", "\"\"", "error", "/skills/3/rules/1", "empty rule" },
    { "/skills/3", "description", "\"\"", "error", "/skills/3/description", "is empty" },
    { "/tools/3", "description", "7", "error", "/tools/3/description", "must be a string" },
    { "/hooks", "tool_retry", "{\"max_retries\": \"two\"}", "error", "/hooks/tool_retry/max_retries",
      "non-negative integer" },
    { "/hooks/tool_retry/retry_on", "0", "\"lost\"", "error", "/hooks/tool_retry/retry_on/0", "unknown fault" },
    { "/hooks", "mood_check", "{}", "warning", "/hooks/mood_check", "unknown hook" },
    { "/hooks/result_envelope", "style", "\"boxed\"", "error", "/hooks/result_envelope/style",
      "unknown envelope style" },
    { "/hooks/result_envelope", "data_key", "\"ok\"", "error", "/hooks/result_envelope/data_key", "same key as ok_key" },
    { "/hooks", "error_format", "\"failed: {code}\"", "error", "/hooks/error_format", "has no {message}" },
    { "/hooks/reply_filter", "on_violation", "\"No {word}!\"", "error", "/hooks/reply_filter/on_violation",
      "placeholder {word} is not one this hook fills" },
    { "/hooks/tool_args_check", "message", "\"Bad {tool}: {reason}\"", "error",
      "/hooks/tool_args_check/message", "placeholder {reason}" },
    { "/hooks/input_check/patterns", "1", "\"(unclosed\"", "error", "/hooks/input_check/patterns/1",
      "bad regex at offset 9: missing closing parenthesis" },
    { "/hooks/reply_format", "max_chars_param", "\"max_len\"", "error", "/hooks/reply_format/max_chars_param",
      "no prompt param \"max_len\"" },
    { "/hooks", "reply_filter", "[]", "error", "/hooks/reply_filter", "hook must be an object" },
    { "/skill_loader", "name", "\"\"", "error", "/skill_loader/name", "is empty" },
    { "/skill_loader", "preamble", "\"Use {tool}:\"", "error", "/skill_loader/preamble", "placeholder {tool}" },
    { "/skill_loader", "line", "\"- {description}\"", "error", "/skill_loader/line", "must hold {name}" },
    { "/skill_loader", "line", "\"- {name} ({tool})\"", "error", "/skill_loader/line", "placeholder {tool}" },
    { "/skill_loader", "line", "[]", "error", "/skill_loader/line", "must be a string" },
    { "", "name", "3", "error", "/name", "non-empty string name" },
};

static void example_lints_clean(void)
{
    json_t *h = load_example();
    json_t *ps = harness_lint(h, NULL);
    CHECK_EQ_INT(json_array_size(ps), 0);
    if (json_array_size(ps)) { char *s = json_compact(ps); fprintf(stderr, "  %s\n", s); free(s); }
    json_decref(ps);
    json_decref(h);
}

static void each_lint_rule_fires(void)
{
    json_t *base = load_example();
    for (size_t i = 0; i < sizeof LINT_CASES / sizeof *LINT_CASES; i++) {
        const mutation *m = &LINT_CASES[i];
        json_t *h = json_deep_copy(base);
        if (!strcmp(m->msg, "")) {   /* emptying a block's text and items */
            set(h, "/system_prompt/blocks/4", "text", json_string(""));
            json_object_del(at(h, "/system_prompt/blocks/4"), "items");
            CHECK(lint_has(h, "error", "/system_prompt/blocks/4/text", "empty text"));
            json_decref(h);
            continue;
        }
        json_t *p = m->parent[0] ? at(h, m->parent) : h;
        if (m->value) set(h, m->parent, m->key, json_loads(m->value, JSON_DECODE_ANY, NULL));
        else if (json_is_array(p)) json_array_remove(p, strtoul(m->key, NULL, 10));
        else json_object_del(p, m->key);
        if (!lint_has(h, m->sev, m->path, m->msg)) {
            t_failed_here = 1;
            fprintf(stderr, "  lint case %zu (%s %s) did not fire\n", i, m->parent, m->key);
        }
        json_decref(h);
    }
    /* no reply skill at all */
    json_t *h = json_deep_copy(base);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(h, "skills"), i, s) json_object_set_new(s, "kind", json_string("strategy"));
    CHECK(lint_has(h, "error", "/skills", "no reply skill"));
    json_decref(h);
    json_decref(base);
}

static void lint_names_the_source_file(void)
{
    char *d = copy_example("lintfile");
    char *f = xasprintf("%s/skills/engagement/SKILL.md", d);
    put(f, "---\nname: engagement\nfunction: chitchat\nkind: reply\ndescription: Greet.\n---\n- Hi.\n");
    json_t *problems = json_array(), *o = NULL;
    json_t *h = harness_load_problems(d, &o, problems);
    CHECK_EQ_INT(json_array_size(problems), 0);
    json_t *ps = harness_lint(h, o);
    CHECK_EQ_INT(json_array_size(ps), 1);
    json_t *p = json_array_get(ps, 0);
    CHECK_STR(json_string_value(json_object_get(p, "file")), f);
    CHECK_STR(json_string_value(json_object_get(p, "path")), "/skills/7/function");
    CHECK_STR(json_string_value(json_object_get(p, "message")), "unknown skill function \"chitchat\"");
    json_decref(ps);
    json_decref(h);
    json_decref(o);
    json_decref(problems);
    free(f);
    free(d);
}

/* ---- diff ---------------------------------------------------------------- */

static int diff_has(const json_t *a, const json_t *b, const char *kind, const char *where)
{
    json_t *d = harness_diff(a, b);
    size_t i;
    json_t *c;
    int found = 0;
    json_array_foreach(d, i, c)
        found |= !strcmp(json_string_value(json_object_get(c, "change")), kind) &&
                 !strcmp(json_string_value(json_object_get(c, "at")), where);
    if (!found) {
        char *s = json_compact(d);
        fprintf(stderr, "  wanted %s at %s in %s\n", kind, where, s);
        free(s);
    }
    json_decref(d);
    return found;
}

static const mutation DIFF_CASES[] = {
    { "/skills/0", "name", "\"quote_helper\"", "skill_renamed", "price", NULL },
    { "/skills/0", "description", "\"Prices.\"", "skill_description", "price", NULL },
    { "/skills/0/rules", "1", "\"Check coupons.\"", "rule_changed", "price", NULL },
    { "/skills/0/rules", "3", "\"New rule.\"", "rule_added", "price", NULL },
    { "/skills/0/rules", "1", NULL, "rule_removed", "price", NULL },
    { "/skills/6", "kind", "\"reply\"", "skill_kind", "compliance", NULL },
    { "/skills", "8", NULL, "skill_removed", "clarify", NULL },
    { "/tools/0", "name", "\"find_item\"", "tool_renamed", "product.lookup", NULL },
    { "/tools/0", "description", "\"Find.\"", "tool_description", "product.lookup", NULL },
    { "/tools/0/parameters/properties/product", "description", "\"Id.\"", "param_schema",
      "product.lookup/product", NULL },
    { "/tools/0/parameters/required", "0", NULL, "tool_schema", "product.lookup", NULL },
    { "/tools/1/parameters/properties", "variant", NULL, "param_removed", "inventory.check/variant", NULL },
    { "/tools", "6", NULL, "tool_removed", "faq.search", NULL },
    { "/system_prompt/blocks/0", "text", "\"You are {host}.\"", "block_text", "persona", NULL },
    { "/system_prompt/blocks/1/items", "0", "\"Short replies.\"", "item_changed", "reply_format", NULL },
    { "/system_prompt/blocks/1/params/max_chars", "value", "80", "param_value", "reply_format/max_chars", NULL },
    { "/system_prompt/blocks/1/params/max_chars", "max", "300", "param_range", "reply_format/max_chars", NULL },
    { "/system_prompt/blocks/1/params", "max_lines", "{\"value\": 2, \"min\": 1, \"max\": 3}",
      "prompt_param_added", "reply_format/max_lines", NULL },
    { "/system_prompt/blocks", "5", NULL, "block_removed", "conversation", NULL },
    { "/hooks/tool_retry", "max_retries", "3", "hook_changed", "tool_retry", NULL },
    { "/hooks", "factual_risk", NULL, "hook_removed", "factual_risk", NULL },
    { "/hooks", "mood_check", "{}", "hook_added", "mood_check", NULL },
    { "/skill_loader", "name", "\"use_skill\"", "loader_renamed", "skill_loader", NULL },
    { "/skill_loader", "argument", "\"name\"", "loader_changed", "argument", NULL },
    { "", "version", "\"2026.12.1\"", "version_changed", "version", NULL },
};

static void diff_detects_each_change(void)
{
    json_t *a = load_example();
    json_t *same = harness_diff(a, a);
    CHECK_EQ_INT(json_array_size(same), 0);
    json_decref(same);
    for (size_t i = 0; i < sizeof DIFF_CASES / sizeof *DIFF_CASES; i++) {
        const mutation *m = &DIFF_CASES[i];
        json_t *b = json_deep_copy(a);
        json_t *p = m->parent[0] ? at(b, m->parent) : b;
        if (m->value) {
            json_t *v = json_loads(m->value, JSON_DECODE_ANY, NULL);
            if (json_is_array(p) && strtoul(m->key, NULL, 10) >= json_array_size(p)) json_array_append_new(p, v);
            else set(b, m->parent, m->key, v);
        } else if (json_is_array(p)) json_array_remove(p, strtoul(m->key, NULL, 10));
        else json_object_del(p, m->key);
        if (!diff_has(a, b, m->sev, m->path)) {
            t_failed_here = 1;
            fprintf(stderr, "  diff case %zu (%s) not detected\n", i, m->sev);
        }
        json_decref(b);
    }
    /* Rules both reordered and reworded pair by wording, not by position. */
    {
        json_t *b2 = json_deep_copy(a);
        json_t *rules = json_object_get((json_t *)harness_skill_by_function(b2, "price"), "rules");
        json_t *r0 = json_incref(json_array_get(rules, 0));
        json_array_remove(rules, 0);
        json_array_append_new(rules, json_string("Quote the live price and the list price from the product lookup tool only."));
        json_decref(r0);
        json_t *d2 = harness_diff(a, b2);
        int changed = 0, reordered = 0;
        size_t k;
        json_t *c;
        json_array_foreach(d2, k, c) {
            const char *kind = json_string_value(json_object_get(c, "change"));
            if (!strcmp(kind, "rule_changed")) {
                changed++;
                CHECK(strstr(json_string_value(json_object_get(c, "from")), "Quote the live price") != NULL);
            }
            reordered += !strcmp(kind, "rules_reordered");
        }
        CHECK_EQ_INT(changed, 1);
        CHECK_EQ_INT(reordered, 1);
        json_decref(d2);
        json_decref(b2);
    }
    /* renames are not add+remove; reorders are reorders */
    json_t *b = json_deep_copy(a);
    json_object_set_new((json_t *)harness_skill_by_function(b, "size"), "name", json_string("fit_finder"));
    json_t *d = harness_diff(a, b);
    CHECK_EQ_INT(json_array_size(d), 1);
    char *t = harness_diff_text(json_array_get(d, 0));
    CHECK_STR(t, "skill_renamed size: \"size_advisor\" -> \"fit_finder\"");
    free(t);
    json_decref(d);
    json_decref(b);
    b = json_deep_copy(a);
    json_t *sk = json_object_get(b, "skills");
    json_t *first = json_incref(json_array_get(sk, 0));
    json_array_remove(sk, 0);
    json_array_append_new(sk, first);
    json_t *rules = at(b, "/skills/0/rules");
    json_t *r0 = json_incref(json_array_get(rules, 0));
    json_array_remove(rules, 0);
    json_array_append_new(rules, r0);
    json_t *blocks = at(b, "/system_prompt/blocks");
    json_t *b0 = json_incref(json_array_get(blocks, 0));
    json_array_remove(blocks, 0);
    json_array_append_new(blocks, b0);
    json_t *props = at(b, "/tools/5/parameters/properties");
    json_t *w = json_incref(json_object_get(props, "weight_kg"));
    json_object_del(props, "weight_kg");
    json_object_set_new(props, "body_weight", w);
    json_array_set_new(at(b, "/tools/5/parameters/required"), 2, json_string("body_weight"));
    CHECK(diff_has(a, b, "skills_reordered", ""));
    CHECK(diff_has(a, b, "rules_reordered", "stock"));
    CHECK(diff_has(a, b, "blocks_reordered", ""));
    CHECK(diff_has(a, b, "param_renamed", "size.recommend/weight_kg"));
    d = harness_diff(a, b);
    CHECK_EQ_INT(json_array_size(d), 4);   /* the renamed param's required entry is no schema change */
    json_decref(d);
    json_decref(b);
    json_decref(a);
}

/* ---- hooks ----------------------------------------------------------------- */

static void hooks_format_wrap_and_unwrap(void)
{
    json_t *h = load_example();
    char *e = harness_format_error(h, "get_product", "timeout", "upstream timed out");
    CHECK_STR(e, "ERROR 504: upstream timed out");
    json_t *result = json_pack("{s:s,s:f}", "id", "P012", "price", 99.5);
    char *w = harness_wrap_result(h, result);
    CHECK_STR(w, "{\"ok\":true,\"data\":{\"id\":\"P012\",\"price\":99.5}}");
    json_t *back = NULL;
    char *err = NULL;
    CHECK_EQ_INT(harness_unwrap(h, w, &back, &err), 1);
    CHECK(json_equal(back, result));
    json_decref(back);
    char *we = harness_wrap_error(h, e);
    CHECK_STR(we, "{\"ok\":false,\"error\":\"ERROR 504: upstream timed out\"}");
    CHECK_EQ_INT(harness_unwrap(h, we, &back, &err), 0);
    CHECK_STR(err, e);
    free(err);
    CHECK_EQ_INT(harness_unwrap(h, "{\"status\":\"fine\"}", &back, &err), -1);
    CHECK_EQ_INT(harness_unwrap(h, "not json", &back, &err), -1);
    free(w);
    free(we);

    /* plain style with renamed keys irrelevant; a different error format */
    json_t *hooks = json_object_get(h, "hooks");
    json_object_set_new(hooks, "result_envelope", json_pack("{s:s}", "style", "plain"));
    json_object_set_new(hooks, "error_format", json_string("[{tool}] failed ({code}): {message}"));
    char *e2 = harness_format_error(h, "get_product", "permission_denied", "no access");
    CHECK_STR(e2, "[get_product] failed (403): no access");
    w = harness_wrap_result(h, result);
    CHECK_STR(w, "{\"id\":\"P012\",\"price\":99.5}");
    CHECK_EQ_INT(harness_unwrap(h, w, &back, &err), 1);
    CHECK(json_equal(back, result));
    json_decref(back);
    we = harness_wrap_error(h, e2);
    CHECK_STR(we, e2);
    CHECK_EQ_INT(harness_unwrap(h, we, &back, &err), 0);
    CHECK_STR(err, e2);
    free(err);
    /* a JSON-looking error still reads as an error when it fits the format */
    char *e3 = harness_format_error(h, "x", "empty", "0");
    CHECK_EQ_INT(harness_unwrap(h, e3, &back, &err), 0);
    free(err);
    free(e3);
    /* wrapped with other keys */
    json_object_set_new(hooks, "result_envelope",
                        json_pack("{s:s,s:s,s:s,s:s}", "style", "wrapped", "ok_key", "success",
                                  "data_key", "result", "error_key", "reason"));
    free(w);
    w = harness_wrap_result(h, result);
    CHECK_STR(w, "{\"success\":true,\"result\":{\"id\":\"P012\",\"price\":99.5}}");
    CHECK_EQ_INT(harness_unwrap(h, w, &back, &err), 1);
    CHECK(json_equal(back, result));
    json_decref(back);
    CHECK_EQ_INT(harness_unwrap(h, "{\"ok\":true,\"data\":1}", &back, &err), -1);
    free(w);
    free(we);
    free(e);
    free(e2);

    json_t *vars = json_pack("{s:s,s:s}", "tool", "get_product", "error", "product is required");
    char *m = harness_hook_message(h, "tool_args_check", "message", vars);
    CHECK_STR(m, "Invalid arguments for get_product: product is required");
    free(m);
    CHECK(harness_hook_message(h, "nope", "message", vars) == NULL);
    json_t *code = json_pack("{s:s}", "code", "1");
    m = harness_hook_message(h, "error_format", NULL, code);
    CHECK(m && !strncmp(m, "[{tool}] failed (1)", 19));
    free(m);
    json_decref(code);
    json_decref(vars);
    json_decref(result);
    json_decref(h);
}

int main(void)
{
    RUN(loads_directory_and_looks_up);
    RUN(renders_system_text_tools_and_skills);
    RUN(skill_line_template);
    RUN(fill_replaces_only_known_placeholders);
    RUN(three_forms_load_the_same);
    RUN(unpack_then_pack_is_exact);
    RUN(load_errors_name_file_and_line);
    RUN(example_lints_clean);
    RUN(each_lint_rule_fires);
    RUN(lint_names_the_source_file);
    RUN(diff_detects_each_change);
    RUN(hooks_format_wrap_and_unwrap);
    TEST_MAIN_END();
}
