/* metrics.c — the Prometheus text registry behind serve's /metrics (see
 * metrics.h).  Families and series are small arrays searched linearly:
 * serve has a few dozen series, and a lookup costs far less than the
 * request it counts. */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char   *labels;
    double  value;        /* counter/gauge; histogram: sum */
    double *counts;       /* histogram: per bucket, not cumulative (nb + 1) */
    double  count;
} series;

typedef struct {
    char   *name, *help;
    int     type, nb;
    double *bounds;
    series *s;
    int     ns;
} family;

struct metrics {
    pthread_mutex_t mu;
    family *f;
    int     nf;
};

metrics *metrics_new(void)
{
    metrics *mx = xcalloc(1, sizeof *mx);
    pthread_mutex_init(&mx->mu, NULL);
    return mx;
}

void metrics_free(metrics *mx)
{
    if (!mx) return;
    for (int i = 0; i < mx->nf; i++) {
        family *f = &mx->f[i];
        for (int j = 0; j < f->ns; j++) { free(f->s[j].labels); free(f->s[j].counts); }
        free(f->s); free(f->name); free(f->help); free(f->bounds);
    }
    free(mx->f);
    pthread_mutex_destroy(&mx->mu);
    free(mx);
}

/* Prometheus metric names: [a-zA-Z_:][a-zA-Z0-9_:]*. */
static int good_name(const char *s)
{
    if (!s || !*s || (*s >= '0' && *s <= '9')) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == ':')) return 0;
    return 1;
}

static family *find(metrics *mx, const char *name)
{
    for (int i = 0; i < mx->nf; i++)
        if (!strcmp(mx->f[i].name, name)) return &mx->f[i];
    return NULL;
}

int metrics_define(metrics *mx, const char *name, int type, const char *help,
                   const double *bounds, int nbounds)
{
    if (!good_name(name) || type < METRIC_COUNTER || type > METRIC_HISTOGRAM) return -1;
    if (type == METRIC_HISTOGRAM)
        for (int i = 1; i < nbounds; i++)
            if (!(bounds[i] > bounds[i - 1])) return -1;
    pthread_mutex_lock(&mx->mu);
    int rc = -1;
    if (!find(mx, name)) {
        mx->f = xrealloc(mx->f, (mx->nf + 1) * sizeof *mx->f);
        family *f = &mx->f[mx->nf++];
        memset(f, 0, sizeof *f);
        f->name = xstrdup(name);
        f->help = xstrdup(help ? help : "");
        f->type = type;
        if (type == METRIC_HISTOGRAM && nbounds > 0) {
            f->nb = nbounds;
            f->bounds = xmalloc(nbounds * sizeof *f->bounds);
            memcpy(f->bounds, bounds, nbounds * sizeof *f->bounds);
        }
        rc = 0;
    }
    pthread_mutex_unlock(&mx->mu);
    return rc;
}

static series *get_series(family *f, const char *labels)
{
    if (!labels) labels = "";
    for (int i = 0; i < f->ns; i++)
        if (!strcmp(f->s[i].labels, labels)) return &f->s[i];
    f->s = xrealloc(f->s, (f->ns + 1) * sizeof *f->s);
    series *s = &f->s[f->ns++];
    memset(s, 0, sizeof *s);
    s->labels = xstrdup(labels);
    if (f->type == METRIC_HISTOGRAM) s->counts = xcalloc(f->nb + 1, sizeof *s->counts);
    return s;
}

/* op: 0 add, 1 set, 2 observe. */
static int update(metrics *mx, const char *name, const char *labels, double v, int op, int type)
{
    pthread_mutex_lock(&mx->mu);
    family *f = find(mx, name);
    int rc = -1;
    if (f && f->type == type && !isnan(v) && !(op == 0 && v < 0)) {
        series *s = get_series(f, labels);
        if (op == 0) s->value += v;
        else if (op == 1) s->value = v;
        else {
            int b = 0;
            while (b < f->nb && v > f->bounds[b]) b++;
            s->counts[b] += 1;
            s->count += 1;
            s->value += v;
        }
        rc = 0;
    }
    pthread_mutex_unlock(&mx->mu);
    return rc;
}

int metrics_add(metrics *mx, const char *name, const char *labels, double v)
{
    pthread_mutex_lock(&mx->mu);
    family *f = find(mx, name);
    int type = f && f->type == METRIC_GAUGE ? METRIC_GAUGE : METRIC_COUNTER;   /* gauges may be added to */
    pthread_mutex_unlock(&mx->mu);
    if (type == METRIC_GAUGE) {
        pthread_mutex_lock(&mx->mu);
        get_series(f, labels)->value += v;
        pthread_mutex_unlock(&mx->mu);
        return 0;
    }
    return update(mx, name, labels, v, 0, METRIC_COUNTER);
}
int metrics_set(metrics *mx, const char *name, const char *labels, double v)
{
    return update(mx, name, labels, v, 1, METRIC_GAUGE);
}
int metrics_observe(metrics *mx, const char *name, const char *labels, double v)
{
    return update(mx, name, labels, v, 2, METRIC_HISTOGRAM);
}

double metrics_get(metrics *mx, const char *name, const char *labels, double *sum)
{
    double v = 0;
    if (sum) *sum = 0;
    pthread_mutex_lock(&mx->mu);
    family *f = find(mx, name);
    if (f)
        for (int i = 0; i < f->ns; i++)
            if (!strcmp(f->s[i].labels, labels ? labels : "")) {
                v = f->type == METRIC_HISTOGRAM ? f->s[i].count : f->s[i].value;
                if (sum && f->type == METRIC_HISTOGRAM) *sum = f->s[i].value;
            }
    pthread_mutex_unlock(&mx->mu);
    return v;
}

double metrics_quantile(metrics *mx, const char *name, const char *labels, double q)
{
    double r = NAN;
    pthread_mutex_lock(&mx->mu);
    family *f = find(mx, name);
    series *s = NULL;
    if (f && f->type == METRIC_HISTOGRAM)
        for (int i = 0; i < f->ns; i++)
            if (!strcmp(f->s[i].labels, labels ? labels : "")) s = &f->s[i];
    if (s && s->count > 0) {
        double rank = q * s->count, cum = 0;
        for (int b = 0; b <= f->nb; b++) {
            if (cum + s->counts[b] >= rank && s->counts[b] > 0) {
                if (b == f->nb) { r = f->nb ? f->bounds[f->nb - 1] : NAN; break; }
                double lo = b ? f->bounds[b - 1] : 0, hi = f->bounds[b];
                r = lo + (hi - lo) * (rank - cum) / s->counts[b];
                break;
            }
            cum += s->counts[b];
        }
    }
    pthread_mutex_unlock(&mx->mu);
    return r;
}

/* A number as Prometheus reads it: integers plainly, +Inf, else %.17g. */
static void put_num(sbuf *b, double v)
{
    if (isinf(v)) sbuf_puts(b, v > 0 ? "+Inf" : "-Inf");
    else if (v == (double)(long long)v && fabs(v) < 1e15) sbuf_printf(b, "%lld", (long long)v);
    else sbuf_printf(b, "%.17g", v);
}

/* name{labels[,extra]} */
static void put_series(sbuf *b, const char *name, const char *suffix, const char *labels,
                       const char *extra)
{
    sbuf_puts(b, name);
    sbuf_puts(b, suffix);
    int has = labels && *labels;
    if (has || extra) {
        sbuf_putc(b, '{');
        if (has) sbuf_puts(b, labels);
        if (has && extra) sbuf_putc(b, ',');
        if (extra) sbuf_puts(b, extra);
        sbuf_putc(b, '}');
    }
    sbuf_putc(b, ' ');
}

void metrics_render(metrics *mx, sbuf *b)
{
    static const char *const types[] = { "counter", "gauge", "histogram" };
    pthread_mutex_lock(&mx->mu);
    for (int i = 0; i < mx->nf; i++) {
        family *f = &mx->f[i];
        sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, types[f->type]);
        for (int j = 0; j < f->ns; j++) {
            series *s = &f->s[j];
            if (f->type != METRIC_HISTOGRAM) {
                put_series(b, f->name, "", s->labels, NULL);
                put_num(b, s->value);
                sbuf_putc(b, '\n');
                continue;
            }
            double cum = 0;
            for (int k = 0; k <= f->nb; k++) {
                char le[64];
                cum += s->counts[k];
                if (k < f->nb) snprintf(le, sizeof le, "le=\"%.6g\"", f->bounds[k]);
                else snprintf(le, sizeof le, "le=\"+Inf\"");
                put_series(b, f->name, "_bucket", s->labels, le);
                put_num(b, cum);
                sbuf_putc(b, '\n');
            }
            put_series(b, f->name, "_sum", s->labels, NULL);
            put_num(b, s->value);
            sbuf_putc(b, '\n');
            put_series(b, f->name, "_count", s->labels, NULL);
            put_num(b, s->count);
            sbuf_putc(b, '\n');
        }
    }
    pthread_mutex_unlock(&mx->mu);
}

void metrics_exp_bounds(double *b, int n, double start, double factor)
{
    for (int i = 0; i < n; i++, start *= factor) b[i] = start;
}
