/* loadgen.c — the HTTP client (libcurl, one easy handle per request) and
 * the statistics of loadgen (see loadgen.h). */
#include "loadgen.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int lg_url_check(const char *url, char **err)
{
    *err = NULL;
    CURLU *u = curl_url();
    CURLUcode rc = curl_url_set(u, CURLUPART_URL, url, 0);
    char *scheme = NULL;
    if (!rc) rc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
    if (rc) *err = xstrdup(curl_url_strerror(rc));
    else if (strcmp(scheme, "http") && strcmp(scheme, "https"))
        *err = xasprintf("scheme '%s' is not http or https", scheme);
    curl_free(scheme);
    curl_url_cleanup(u);
    return *err ? -1 : 0;
}

void lg_global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

void lg_response_free(lg_response *r)
{
    free(r->error);
    sbuf_free(&r->body);
    memset(r, 0, sizeof *r);
}

typedef struct {
    lg_response *r;
    double t0;
} sink;

/* Body bytes as they arrive: the first one times the first token of a
 * stream (Server-Sent Events) or the whole answer of a plain response. */
static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    sink *k = ctx;
    if (!k->r->t_first) k->r->t_first = hat_now() - k->t0;
    sbuf_add(&k->r->body, p, size * n);
    return size * n;
}

void lg_post(const char *base, const char *path, const char *token, const char *body, size_t len,
             double timeout_s, lg_response *r)
{
    memset(r, 0, sizeof *r);
    sbuf_init(&r->body);
    CURL *c = curl_easy_init();
    if (!c) { r->error = xstrdup("curl_easy_init failed"); return; }
    char *url = xasprintf("%s%s", base, path);
    char *auth = token ? xasprintf("Authorization: Bearer %s", token) : NULL;
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    if (auth) hdr = curl_slist_append(hdr, auth);
    sink k = { r, hat_now() };
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &k);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);        /* threads: no SIGALRM timeouts */
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    CURLcode rc = curl_easy_perform(c);
    r->t_total = hat_now() - k.t0;
    if (rc != CURLE_OK) {
        r->error = xstrdup(curl_easy_strerror(rc));
        r->status = 0;
    } else {
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        r->status = (int)status;
        if (!r->t_first) r->t_first = r->t_total;
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    free(auth);
    free(url);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double lg_percentile(double *v, size_t n, double p)
{
    if (!n) return NAN;
    qsort(v, n, sizeof *v, cmp_d);
    double rank = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)floor(rank), hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (v[hi] - v[lo]) * (rank - (double)lo);
}

static json_t *ms(double s) { return isnan(s) ? json_null() : json_real(round(s * 1e6) / 1e3); }

json_t *lg_report(const lg_sample *s, size_t n, double duration, double budget)
{
    double *lat = xmalloc((n + 1) * sizeof *lat), *ttft = xmalloc((n + 1) * sizeof *ttft);
    size_t ok = 0, over = 0;
    long tokens = 0;
    double sum = 0, max = 0;
    json_t *errors = json_object();
    for (size_t i = 0; i < n; i++) {
        if (s[i].status != 200) {
            char k[16];
            if (s[i].status) snprintf(k, sizeof k, "%d", s[i].status); else snprintf(k, sizeof k, "transport");
            json_object_set_new(errors, k, json_integer(json_integer_value(json_object_get(errors, k)) + 1));
            continue;
        }
        lat[ok] = s[i].latency;
        ttft[ok] = s[i].ttft;
        sum += s[i].latency;
        if (s[i].latency > max) max = s[i].latency;
        over += s[i].latency > budget;
        tokens += s[i].tokens;
        ok++;
    }
    json_t *o = json_pack("{s:I,s:I,s:o,s:f,s:f}", "requests", (json_int_t)n, "ok", (json_int_t)ok, "errors", errors,
                          "duration_s", round(duration * 1e3) / 1e3, "rps", duration > 0 ? round(n / duration * 100) / 100 : 0.0);
    json_object_set_new(o, "latency_ms", json_pack("{s:o,s:o,s:o,s:o,s:o}", "p50", ms(lg_percentile(lat, ok, 50)),
                        "p95", ms(lg_percentile(lat, ok, 95)), "p99", ms(lg_percentile(lat, ok, 99)),
                        "mean", ms(ok ? sum / ok : NAN), "max", ms(ok ? max : NAN)));
    json_object_set_new(o, "ttft_ms", json_pack("{s:o,s:o,s:o}", "p50", ms(lg_percentile(ttft, ok, 50)),
                        "p95", ms(lg_percentile(ttft, ok, 95)), "p99", ms(lg_percentile(ttft, ok, 99))));
    json_object_set_new(o, "tokens", json_integer(tokens));
    json_object_set_new(o, "tokens_per_s", json_real(duration > 0 ? round(tokens / duration * 10) / 10 : 0));
    json_object_set_new(o, "budget_s", json_real(budget));
    /* errors count as over the budget: they did not answer within it */
    json_object_set_new(o, "over_budget", json_real(n ? round((double)(over + n - ok) / n * 1e4) / 1e4 : 0));
    free(lat);
    free(ttft);
    return o;
}

void lg_table(sbuf *b, const json_t *r)
{
    const json_t *l = json_object_get(r, "latency_ms"), *t = json_object_get(r, "ttft_ms");
    sbuf_printf(b, "requests %lld  ok %lld  duration %.2f s  %.2f req/s\n",
                json_integer_value(json_object_get(r, "requests")), json_integer_value(json_object_get(r, "ok")),
                json_number_value(json_object_get(r, "duration_s")), json_number_value(json_object_get(r, "rps")));
    sbuf_printf(b, "%-14s %10s %10s %10s %10s %10s\n", "", "p50", "p95", "p99", "mean", "max");
    sbuf_printf(b, "%-14s %10.1f %10.1f %10.1f %10.1f %10.1f\n", "latency ms", json_number_value(json_object_get(l, "p50")),
                json_number_value(json_object_get(l, "p95")), json_number_value(json_object_get(l, "p99")),
                json_number_value(json_object_get(l, "mean")), json_number_value(json_object_get(l, "max")));
    sbuf_printf(b, "%-14s %10.1f %10.1f %10.1f\n", "ttft ms", json_number_value(json_object_get(t, "p50")),
                json_number_value(json_object_get(t, "p95")), json_number_value(json_object_get(t, "p99")));
    sbuf_printf(b, "tokens %lld  %.1f tokens/s  over %.0f s budget: %.2f%%\n", json_integer_value(json_object_get(r, "tokens")),
                json_number_value(json_object_get(r, "tokens_per_s")), json_number_value(json_object_get(r, "budget_s")),
                100 * json_number_value(json_object_get(r, "over_budget")));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(r, "errors"), k, v)
        sbuf_printf(b, "errors %-9s %lld\n", k, json_integer_value(v));
}
