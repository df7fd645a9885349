/* test_report.c — confidence intervals against hand-computed values, and
 * the report's arithmetic on crafted verdicts. */
#include "test.h"
#include "jsonl.h"
#include "report.h"
#include "util.h"

static void wilson_known_values(void)
{
    double lo, hi;
    report_wilson(8, 10, 1.96, &lo, &hi);          /* textbook: [0.4902, 0.9433] */
    CHECK_NEAR(lo, 0.4902, 1e-4);
    CHECK_NEAR(hi, 0.9433, 1e-4);
    report_wilson(0, 10, 1.96, &lo, &hi);          /* hi = z^2 / (n + z^2) */
    CHECK_NEAR(lo, 0, 1e-12);
    CHECK_NEAR(hi, 3.8416 / 13.8416, 1e-9);
    report_wilson(10, 10, 1.96, &lo, &hi);
    CHECK_NEAR(lo, 10 / 13.8416, 1e-9);
    CHECK_NEAR(hi, 1, 1e-12);
    report_wilson(0, 0, 1.96, &lo, &hi);
    CHECK(lo == 0 && hi == 0);
}

static void quantile_interpolates(void)
{
    double v[] = { 1, 2, 3, 4 };
    CHECK_NEAR(report_quantile(v, 4, 0.5), 2.5, 1e-12);
    CHECK_NEAR(report_quantile(v, 4, 0.025), 1.075, 1e-12);
    CHECK_NEAR(report_quantile(v, 4, 1.0), 4, 1e-12);
}

static void bootstrap_is_seeded_and_sane(void)
{
    double c[5] = { 0.7, 0.7, 0.7, 0.7, 0.7 }, lo, hi, lo2, hi2;
    report_bootstrap_mean(c, 5, 200, 1, &lo, &hi);
    CHECK_NEAR(lo, 0.7, 1e-12);
    CHECK_NEAR(hi, 0.7, 1e-12);
    double x[100];
    for (int i = 0; i < 100; i++) x[i] = i % 4 == 0;   /* mean 0.25 */
    report_bootstrap_mean(x, 100, 1000, 7, &lo, &hi);
    report_bootstrap_mean(x, 100, 1000, 7, &lo2, &hi2);
    CHECK(lo == lo2 && hi == hi2);
    CHECK(lo < 0.25 && hi > 0.25);
    /* about +-1.96 * sqrt(.25 * .75 / 100) = 0.085 */
    CHECK(hi - lo > 0.12 && hi - lo < 0.22);
}

static void add(report *r, const char *model, const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    char *err = NULL;
    CHECK(v != NULL);
    CHECK_EQ_INT(report_add_line(r, model, v, &err), 0);
    if (err) fprintf(stderr, "  %s\n", err);
    free(err);
    json_decref(v);
}

static double num(const json_t *rep, const char *model, const char *set, const char *key)
{
    return json_number_value(json_object_get(json_object_get(json_object_get(json_object_get(rep, "scores"), model), set), key));
}

static report *crafted(void)
{
    report *r = report_new();
    add(r, "A", "{\"id\":\"live-000000.r\",\"task_id\":\"live-000000\",\"intent\":\"price\",\"total\":1.0,\"pass\":true,\"reasons\":[],\"meta\":{\"hsa\":[],\"faults\":[]}}");
    add(r, "A", "{\"id\":\"live-000001.r\",\"task_id\":\"live-000001\",\"intent\":\"stock\",\"total\":0.5,\"pass\":false,\"reasons\":[],\"meta\":{\"hsa\":[],\"faults\":[\"timeout\"]}}");
    /* a rollout --judge line: the case id from meta.case */
    add(r, "A", "{\"id\":\"x.r\",\"task_id\":\"x\",\"meta\":{\"intent\":\"price\",\"hsa\":[{\"dim\":\"tools\",\"op\":\"rename\"}],\"case\":{\"id\":\"variant-000000\"}},\"verdict\":{\"total\":0.9,\"pass\":true,\"reasons\":[]}}");
    add(r, "A", "{\"id\":\"ifeval-000000\",\"instruction_id_list\":[\"punctuation:no_comma\",\"detectable_format:title\"],\"strict\":{\"follow_all_instructions\":true,\"follow_instruction_list\":[true,true]},\"loose\":{\"follow_all_instructions\":true,\"follow_instruction_list\":[true,true]}}");
    add(r, "A", "{\"id\":\"ifeval-000001\",\"instruction_id_list\":[\"punctuation:no_comma\",\"detectable_format:title\"],\"strict\":{\"follow_all_instructions\":false,\"follow_instruction_list\":[true,false]},\"loose\":{\"follow_all_instructions\":true,\"follow_instruction_list\":[true,true]}}");
    add(r, "B", "{\"task_id\":\"live-000000\",\"intent\":\"price\",\"total\":0.0,\"pass\":false,\"reasons\":[],\"meta\":{}}");
    return r;
}

static void scores_by_hand(void)
{
    report *r = crafted();
    json_t *rep = report_json(r, 100, 1);
    CHECK_NEAR(num(rep, "A", "live", "score"), 50, 1e-9);
    CHECK_NEAR(num(rep, "A", "live", "total"), 75, 1e-9);
    CHECK_EQ_INT((long)num(rep, "A", "live", "n"), 2);
    double lo, hi;
    report_wilson(1, 2, REPORT_Z95, &lo, &hi);
    CHECK_NEAR(num(rep, "A", "live", "lo"), 100 * lo, 1e-3);
    CHECK_NEAR(num(rep, "A", "live", "hi"), 100 * hi, 1e-3);
    CHECK_NEAR(num(rep, "A", "variant", "score"), 100, 1e-9);
    CHECK_NEAR(num(rep, "A", "ifeval", "score"), 50, 1e-9);
    CHECK_NEAR(num(rep, "A", "ifeval", "prompt_loose"), 100, 1e-9);
    CHECK_NEAR(num(rep, "A", "ifeval", "instruction_strict"), 75, 1e-9);
    CHECK(json_object_get(json_object_get(json_object_get(rep, "scores"), "A"), "robust") == NULL);
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(json_object_get(rep, "scores"), "A"), "mean")),
               (50 + 100 + 50) / 3.0, 1e-3);
    CHECK_NEAR(num(rep, "B", "live", "score"), 0, 1e-9);
    /* breakdowns: intent price = live-0 (pass) + variant-0 (pass) for A */
    const json_t *bd = json_object_get(rep, "breakdowns");
    const json_t *price = json_object_get(json_object_get(json_object_get(bd, "intent"), "price"), "A");
    CHECK_EQ_INT(json_integer_value(json_object_get(price, "n")), 2);
    CHECK_NEAR(json_number_value(json_object_get(price, "score")), 100, 1e-9);
    const json_t *to = json_object_get(json_object_get(json_object_get(bd, "fault"), "timeout"), "A");
    CHECK_NEAR(json_number_value(json_object_get(to, "score")), 0, 1e-9);
    const json_t *tools = json_object_get(json_object_get(json_object_get(bd, "hsa"), "tools"), "A");
    CHECK_EQ_INT(json_integer_value(json_object_get(tools, "n")), 1);
    const json_t *title = json_object_get(json_object_get(json_object_get(bd, "instruction"), "detectable_format"), "A");
    CHECK_NEAR(json_number_value(json_object_get(title, "score")), 50, 1e-9);
    char *md = report_markdown(rep);
    CHECK(strstr(md, "| A | 50.0 [") != NULL);
    CHECK(strstr(md, "| B | 0.0 [") != NULL);
    free(md);
    json_decref(rep);
    report_free(r);
}

static void missing_cases_count_as_failed(void)
{
    char *p = xasprintf("%s/cases.jsonl", test_tmpdir());
    FILE *f = fopen(p, "w");
    fputs("{\"id\":\"live-000000\",\"set\":\"live\",\"meta\":{\"intent\":\"price\"}}\n"
          "{\"id\":\"live-000001\",\"set\":\"live\",\"meta\":{\"intent\":\"stock\"}}\n"
          "{\"id\":\"live-000002\",\"set\":\"live\",\"meta\":{\"intent\":\"size\"}}\n", f);
    fclose(f);
    report *r = report_new();
    CHECK_EQ_INT(report_add_cases(r, p, 0), 0);
    add(r, "A", "{\"task_id\":\"live-000000\",\"total\":1.0,\"pass\":true,\"reasons\":[]}");
    /* A training task's verdict with --cases given: not "give --cases". */
    char *err = NULL;
    json_t *v = json_loads("{\"task_id\":\"train-1-000000\",\"total\":1,\"pass\":true}", 0, NULL);
    CHECK_EQ_INT(report_add_line(r, "A", v, &err), -1);
    CHECK(err && strstr(err, "not in --cases") && !strstr(err, "give --cases"));
    free(err);
    json_decref(v);
    json_t *rep = report_json(r, 50, 1);
    CHECK_EQ_INT((long)num(rep, "A", "live", "n"), 3);
    CHECK_EQ_INT((long)num(rep, "A", "live", "missing"), 2);
    CHECK_NEAR(num(rep, "A", "live", "score"), 100.0 / 3, 1e-3);
    CHECK_NEAR(num(rep, "A", "live", "total"), 100.0 / 3, 1e-3);
    json_decref(rep);
    report_free(r);
    free(p);
}

static void bad_lines_are_refused(void)
{
    report *r = report_new();
    char *err = NULL;
    json_t *v = json_loads("{\"task_id\":\"nowhere-1\",\"total\":1,\"pass\":true}", 0, NULL);
    CHECK_EQ_INT(report_add_line(r, "A", v, &err), -1);
    CHECK(err && strstr(err, "unknown set"));
    free(err);
    json_decref(v);
    v = json_loads("{\"task_id\":\"live-1\",\"pass\":true}", 0, NULL);
    err = NULL;
    CHECK_EQ_INT(report_add_line(r, "A", v, &err), -1);
    CHECK(err && strstr(err, "total"));
    free(err);
    json_decref(v);
    report_free(r);
}

int main(void)
{
    RUN(wilson_known_values);
    RUN(quantile_interpolates);
    RUN(bootstrap_is_seeded_and_sane);
    RUN(scores_by_hand);
    RUN(missing_cases_count_as_failed);
    RUN(bad_lines_are_refused);
    TEST_MAIN_END();
}
