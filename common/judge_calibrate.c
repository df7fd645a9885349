/* judge_calibrate.c — fitting the judge's weights and pass threshold to
 * human labels, and the agreement statistics reported on a held-out part
 * (accuracy, Cohen's kappa, confusion matrices, Spearman's rho).
 *
 * Two kinds of labels (man 1 judge, CALIBRATION):
 *   overall 1..5               target (overall - 1) / 4; a verdict passes
 *                              for the human when overall >= 4
 *   accuracy 0|1 and
 *   effectiveness 0|.5|1       target (accuracy + effectiveness) / 2; the
 *                              human pass is both at 1
 * The weights are the non-negative least-squares fit of the target on the
 * component scores (the CoT penalty enters negatively), solved by cyclic
 * coordinate descent on the 5x5 normal equations: small, exact enough and
 * deterministic.  The threshold is then the cut of the fitted total that
 * agrees best (kappa, then accuracy) with the human pass on the fit part. */
#include "judge.h"
#include "rng.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- statistics --------------------------------------------------------------- */

double judge_kappa(const int *a, const int *b, size_t n, int k)
{
    if (!n || k < 1) return 0;
    double *ra = xcalloc((size_t)k, sizeof *ra), *rb = xcalloc((size_t)k, sizeof *rb), po = 0, pe = 0;
    for (size_t i = 0; i < n; i++) {
        po += a[i] == b[i];
        if (a[i] >= 0 && a[i] < k) ra[a[i]]++;
        if (b[i] >= 0 && b[i] < k) rb[b[i]]++;
    }
    po /= (double)n;
    for (int c = 0; c < k; c++) pe += ra[c] / (double)n * rb[c] / (double)n;
    free(ra);
    free(rb);
    if (pe >= 1 - 1e-12) return po >= 1 - 1e-12 ? 1 : 0;
    return (po - pe) / (1 - pe);
}

typedef struct { double v; size_t i; } ranked;

static int cmp_ranked(const void *a, const void *b)
{
    double x = ((const ranked *)a)->v, y = ((const ranked *)b)->v;
    if (x < y) return -1;
    if (x > y) return 1;
    size_t i = ((const ranked *)a)->i, j = ((const ranked *)b)->i;
    return i < j ? -1 : i > j;
}

/* Ranks 1..n with ties given their average rank. */
static void ranks(const double *x, size_t n, double *r)
{
    ranked *t = xmalloc(n * sizeof *t);
    for (size_t i = 0; i < n; i++) { t[i].v = x[i]; t[i].i = i; }
    qsort(t, n, sizeof *t, cmp_ranked);
    for (size_t i = 0; i < n; ) {
        size_t j = i;
        while (j + 1 < n && t[j + 1].v == t[i].v) j++;
        double avg = (double)(i + j) / 2 + 1;
        for (size_t k = i; k <= j; k++) r[t[k].i] = avg;
        i = j + 1;
    }
    free(t);
}

double judge_spearman(const double *x, const double *y, size_t n)
{
    if (n < 2) return 0;
    double *rx = xmalloc(n * sizeof *rx), *ry = xmalloc(n * sizeof *ry);
    ranks(x, n, rx);
    ranks(y, n, ry);
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < n; i++) { mx += rx[i]; my += ry[i]; }
    mx /= (double)n;
    my /= (double)n;
    for (size_t i = 0; i < n; i++) {
        sxy += (rx[i] - mx) * (ry[i] - my);
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
    }
    free(rx);
    free(ry);
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0;
}

/* ---- fitting ------------------------------------------------------------------- */

static int has_overall(const judge_case *c) { return c->overall >= 1; }

static double target(const judge_case *c, int overall)
{
    return overall ? (c->overall - 1) / 4 : (c->accuracy + c->effectiveness) / 2;
}

static int human_pass(const judge_case *c, int overall)
{
    return overall ? c->overall >= 4 : c->accuracy >= 1 && c->effectiveness >= 1;
}

/* Feature i of a case: the component score, the CoT penalty negated. */
static double feature(const judge_case *c, int i)
{
    return i == JUDGE_COT ? -c->score[i] : c->score[i];
}

static double total_of(const double *w, const judge_case *c)
{
    double t = 0;
    for (int i = 0; i < JUDGE_NCOMP; i++) t += w[i] * feature(c, i);
    return t;
}

/* Non-negative least squares by cyclic coordinate descent.  A feature that
 * never varies from 0 keeps its prior weight (fitted[i] = 0). */
static void nnls(const judge_case *const *cs, size_t n, int overall, double *w, int *fitted)
{
    double G[JUDGE_NCOMP][JUDGE_NCOMP] = { { 0 } }, b[JUDGE_NCOMP] = { 0 };
    for (size_t k = 0; k < n; k++) {
        double y = target(cs[k], overall);
        for (int i = 0; i < JUDGE_NCOMP; i++) {
            b[i] += feature(cs[k], i) * y;
            for (int j = 0; j < JUDGE_NCOMP; j++) G[i][j] += feature(cs[k], i) * feature(cs[k], j);
        }
    }
    for (int i = 0; i < JUDGE_NCOMP; i++) {
        fitted[i] = G[i][i] > 1e-12;
        if (fitted[i]) w[i] = 0.2;
    }
    for (int it = 0; it < 5000; it++) {
        double moved = 0;
        for (int i = 0; i < JUDGE_NCOMP; i++) {
            if (!fitted[i]) continue;
            double r = b[i];
            for (int j = 0; j < JUDGE_NCOMP; j++)
                if (j != i) r -= G[i][j] * (fitted[j] ? w[j] : 0);
            double nw = r / G[i][i];
            if (nw < 0) nw = 0;
            moved = fmax(moved, fabs(nw - w[i]));
            w[i] = nw;
        }
        if (moved < 1e-12) break;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The cut of the total that agrees best with the human pass. */
static double fit_threshold(const judge_case *const *cs, size_t n, int overall, const double *w)
{
    double *t = xmalloc((n + 1) * sizeof *t);
    int *h = xmalloc(n * sizeof *h), *p = xmalloc(n * sizeof *p);
    for (size_t k = 0; k < n; k++) { t[k] = total_of(w, cs[k]); h[k] = human_pass(cs[k], overall); }
    qsort(t, n, sizeof *t, cmp_double);
    double best = t[0] - 1e-6, bk = -2, ba = -1;
    for (size_t c = 0; c <= n; c++) {
        if (c > 0 && c < n && t[c] == t[c - 1]) continue;
        double thr = c == 0 ? t[0] - 1e-6 : c == n ? t[n - 1] + 1e-6 : (t[c - 1] + t[c]) / 2;
        double agree = 0;
        for (size_t k = 0; k < n; k++) {
            p[k] = total_of(w, cs[k]) >= thr;
            agree += p[k] == h[k];
        }
        double kap = judge_kappa(p, h, n, 2);
        if (kap > bk + 1e-12 || (fabs(kap - bk) <= 1e-12 && agree > ba)) { bk = kap; ba = agree; best = thr; }
    }
    free(t);
    free(h);
    free(p);
    return best;
}

/* ---- reporting ------------------------------------------------------------------ */

static json_t *confusion(const int *judge_c, const int *human_c, size_t n, int k)
{
    json_t *rows = json_array();
    for (int h = 0; h < k; h++) {
        json_t *row = json_array();
        for (int j = 0; j < k; j++) {
            long c = 0;
            for (size_t i = 0; i < n; i++) c += human_c[i] == h && judge_c[i] == j;
            json_array_append_new(row, json_integer(c));
        }
        json_array_append_new(rows, row);
    }
    return rows;
}

/* {"accuracy","kappa","confusion"} of judge classes against human ones;
 * confusion rows are the human class, columns the judge's. */
static json_t *agreement(const int *jc, const int *hc, size_t n, int k, json_t *labels)
{
    double a = 0;
    for (size_t i = 0; i < n; i++) a += jc[i] == hc[i];
    return json_pack("{s:f,s:f,s:o,s:o}", "accuracy", n ? a / (double)n : 0, "kappa",
                     judge_kappa(jc, hc, n, k), "labels", labels, "confusion", confusion(jc, hc, n, k));
}

static int eff_class(double e) { return e >= 0.75 ? 2 : e >= 0.25 ? 1 : 0; }

static json_t *report_part(const judge_case *const *cs, size_t n, int overall, const double *w, double thr)
{
    int *jc = xmalloc((n + 1) * sizeof *jc), *hc = xmalloc((n + 1) * sizeof *hc);
    double *tot = xmalloc((n + 1) * sizeof *tot), *hum = xmalloc((n + 1) * sizeof *hum);
    json_t *r = json_object();
    for (size_t i = 0; i < n; i++) {
        tot[i] = total_of(w, cs[i]);
        hum[i] = overall ? cs[i]->overall : target(cs[i], 0);
        jc[i] = tot[i] >= thr;
        hc[i] = human_pass(cs[i], overall);
    }
    json_object_set_new(r, "pass", agreement(jc, hc, n, 2, json_pack("[b,b]", 0, 1)));
    json_object_set_new(r, "spearman", json_real(judge_spearman(tot, hum, n)));
    if (overall) {
        for (size_t i = 0; i < n; i++) {
            long c = lround(1 + 4 * tot[i]);
            jc[i] = (int)(c < 1 ? 1 : c > 5 ? 5 : c) - 1;
            hc[i] = (int)lround(cs[i]->overall) - 1;
        }
        json_object_set_new(r, "overall", agreement(jc, hc, n, 5, json_pack("[i,i,i,i,i]", 1, 2, 3, 4, 5)));
    } else {
        for (size_t i = 0; i < n; i++) { jc[i] = cs[i]->score[JUDGE_ACCURACY] >= 0.5; hc[i] = cs[i]->accuracy >= 0.5; }
        json_object_set_new(r, "accuracy", agreement(jc, hc, n, 2, json_pack("[i,i]", 0, 1)));
        for (size_t i = 0; i < n; i++) { jc[i] = eff_class(cs[i]->score[JUDGE_EFFECTIVENESS]); hc[i] = eff_class(cs[i]->effectiveness); }
        json_object_set_new(r, "effectiveness", agreement(jc, hc, n, 3, json_pack("[f,f,f]", 0.0, 0.5, 1.0)));
    }
    free(jc);
    free(hc);
    free(tot);
    free(hum);
    return r;
}

json_t *judge_calibrate(const json_t *config, const judge_case *cases, size_t n,
                        double holdout, uint64_t seed, json_t **report, char **err)
{
    *err = NULL;
    *report = NULL;
    /* One kind of label per run: overall when any case has it. */
    int overall = 0;
    for (size_t i = 0; i < n; i++) overall |= has_overall(&cases[i]);
    const judge_case **use = xmalloc((n + 1) * sizeof *use);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (overall ? has_overall(&cases[i]) : cases[i].accuracy >= 0 && cases[i].effectiveness >= 0) use[m++] = &cases[i];
    size_t nh = (size_t)llround((double)m * holdout);
    if (holdout > 0 && nh == 0) nh = 1;
    if (m < 4 || m - nh < 3) {
        *err = xasprintf("%zu labelled cases: too few to fit (need at least 3 to fit and 1 to report)", m);
        free(use);
        return NULL;
    }
    rng_t r;
    rng_derive(&r, seed, 0x6a756467);   /* "judg" */
    rng_shuffle(&r, use, m, sizeof *use);
    size_t nt = m - nh;
    double w[JUDGE_NCOMP];
    int fitted[JUDGE_NCOMP];
    const json_t *cw = json_object_get(config, "weights");
    for (int i = 0; i < JUDGE_NCOMP; i++) w[i] = json_number_value(json_object_get(cw, judge_comp_names[i]));
    nnls(use, nt, overall, w, fitted);
    double thr = fit_threshold(use, nt, overall, w);

    json_t *out = json_deep_copy(config);
    json_t *weights = json_object(), *unfitted = json_array();
    for (int i = 0; i < JUDGE_NCOMP; i++) {
        json_object_set_new(weights, judge_comp_names[i], json_real(round(w[i] * 1e6) / 1e6));
        if (!fitted[i]) json_array_append_new(unfitted, json_string(judge_comp_names[i]));
    }
    json_object_set_new(out, "weights", weights);
    json_t *pass = json_object_get(out, "pass");
    if (!json_is_object(pass)) { pass = json_object(); json_object_set_new(out, "pass", pass); }
    json_object_set_new(pass, "threshold", json_real(round(thr * 1e6) / 1e6));
    json_object_set_new(out, "calibration", json_pack("{s:s,s:I,s:I,s:I,s:f}", "mode", overall ? "overall" : "components",
                        "cases", (json_int_t)m, "train", (json_int_t)nt, "seed", (json_int_t)seed, "holdout", holdout));

    const judge_case **rep = nh ? use + nt : use;
    json_t *rp = report_part(rep, nh ? nh : nt, overall, w, thr);
    *report = json_pack("{s:s,s:I,s:I,s:b,s:O,s:f,s:o}", "mode", overall ? "overall" : "components",
                        "train", (json_int_t)nt, "heldout", (json_int_t)nh, "on_train", nh == 0,
                        "weights", weights, "threshold", thr, "unfitted", unfitted);
    json_object_update(*report, rp);
    json_decref(rp);
    free(use);
    return out;
}
