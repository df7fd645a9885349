/* test_jsonl.c — reading, error reporting, --skip-bad, .gz, atomic output. */
#include "test.h"
#include "jsonl.h"
#include "util.h"

#include <sys/stat.h>
#include <unistd.h>

static char *tmp(const char *name) { return xasprintf("%s/%s", test_tmpdir(), name); }

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

static void reads_values_and_counts_lines(void)
{
    char *p = tmp("a.jsonl");
    put(p, "{\"a\":1}\n\n  \n[2]\r\n\"x\"");   /* blank lines, CRLF, no final newline */
    jsonl_reader *r = jsonl_open(p, 0);
    json_t *v;
    CHECK_EQ_INT(jsonl_next(r, &v), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(v, "a")), 1);
    json_decref(v);
    CHECK_EQ_INT(jsonl_next(r, &v), 1);
    CHECK_EQ_INT(jsonl_line(r), 4);
    CHECK(json_is_array(v));
    json_decref(v);
    CHECK_EQ_INT(jsonl_next(r, &v), 1);
    CHECK_STR(json_string_value(v), "x");
    json_decref(v);
    CHECK_EQ_INT(jsonl_next(r, &v), 0);
    CHECK_EQ_INT(jsonl_close(r), 0);
    free(p);
}

static void bad_line_stops_or_is_skipped(void)
{
    char *p = tmp("bad.jsonl");
    put(p, "{\"a\":1}\n{\"a\":\n{\"a\":3}\n");
    json_t *v;
    jsonl_reader *r = jsonl_open(p, 0);
    CHECK_EQ_INT(jsonl_next(r, &v), 1);
    json_decref(v);
    CHECK_EQ_INT(jsonl_next(r, &v), -1);
    CHECK_EQ_INT(jsonl_line(r), 2);
    jsonl_close(r);

    r = jsonl_open(p, 1);
    int n = 0;
    while (jsonl_next(r, &v) == 1) { n++; json_decref(v); }
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(jsonl_skipped(r), 1);
    jsonl_close(r);
    free(p);
}

static void long_lines_grow_the_buffer(void)
{
    char *p = tmp("long.jsonl");
    FILE *f = fopen(p, "wb");
    fputs("{\"s\":\"", f);
    for (int i = 0; i < 300000; i++) fputc('a' + i % 26, f);
    fputs("\"}\n{\"t\":1}\n", f);
    fclose(f);
    jsonl_reader *r = jsonl_open(p, 0);
    json_t *v;
    CHECK_EQ_INT(jsonl_next(r, &v), 1);
    CHECK_EQ_INT(json_string_length(json_object_get(v, "s")), 300000);
    json_decref(v);
    CHECK_EQ_INT(jsonl_next(r, &v), 1);
    CHECK_EQ_INT(jsonl_line(r), 2);
    json_decref(v);
    jsonl_close(r);
    free(p);
}

static void gz_round_trip_keeps_order_and_utf8(void)
{
    char *p = tmp("rt.jsonl.gz");
    hat_out *o = out_open(p);
    json_t *v = json_pack("{s:s, s:i, s:f}", "z", "直播间 😍", "a", 5, "m", 129.9);
    CHECK_EQ_INT(out_json(o, v), 0);
    CHECK_EQ_INT(out_close(o), 0);
    size_t len;
    char *text = read_file(p, &len);
    CHECK_STR(text, "{\"z\":\"直播间 😍\",\"a\":5,\"m\":129.9}\n");
    free(text);
    jsonl_reader *r = jsonl_open(p, 0);
    json_t *w;
    CHECK_EQ_INT(jsonl_next(r, &w), 1);
    CHECK(json_equal(v, w));
    json_decref(w);
    jsonl_close(r);
    json_decref(v);
    free(p);
}

static void aborted_output_keeps_the_old_file(void)
{
    char *p = tmp("keep.jsonl");
    put(p, "old\n");
    hat_out *o = out_open(p);
    out_puts(o, "new half-written");
    out_abort(o);
    size_t len;
    char *text = read_file(p, &len);
    CHECK_STR(text, "old\n");
    free(text);
    /* No temporary file is left behind. */
    char *cmd = xasprintf("ls -a %s | grep -c tmp >/dev/null", test_tmpdir());
    CHECK(system(cmd) != 0);
    free(cmd);
    CHECK_EQ_INT(write_file_atomic(p, "new\n", 4), 0);
    text = read_file(p, &len);
    CHECK_STR(text, "new\n");
    free(text);
    free(p);
}

static void unwritable_directory_is_an_error(void)
{
    hat_out *o = out_open("/nonexistent-dir/x.jsonl");
    CHECK(o == NULL);
}

static void write_error_is_reported(void)
{
    if (access("/dev/full", W_OK) != 0) return;
    FILE *saved = stdout;
    stdout = fopen("/dev/full", "w");
    hat_out *o = out_open(NULL);
    for (int i = 0; i < 1000; i++) out_puts(o, "0123456789abcdef0123456789abcdef");
    CHECK_EQ_INT(out_close(o), -1);
    fclose(stdout);
    stdout = saved;
}

int main(void)
{
    RUN(reads_values_and_counts_lines);
    RUN(bad_line_stops_or_is_skipped);
    RUN(long_lines_grow_the_buffer);
    RUN(gz_round_trip_keeps_order_and_utf8);
    RUN(aborted_output_keeps_the_old_file);
    RUN(unwritable_directory_is_an_error);
    RUN(write_error_is_reported);
    TEST_MAIN_END();
}
