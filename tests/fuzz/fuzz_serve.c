/* fuzz_serve.c — serve's request handling without the network: the first
 * byte picks the endpoint (chat or agent), the rest is the body.  Parsing
 * must answer 0 or a 4xx status with a message, never crash; an accepted
 * chat request must render to a prompt that ends with its forced prefix;
 * the streaming cut points must stay inside the text; the error body must
 * be JSON. */
#include "fuzz.h"
#include "serve.h"

#include <jansson.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static const serve_limits L = { 1u << 16, 16, 64, 8, 4, 1024 };
    int kind = data[0] & 1 ? SERVE_CHAT : SERVE_AGENT;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    serve_request r;
    char *err = NULL;
    int st = serve_parse(kind, body, len, &L, &r, &err);
    FUZZ_ASSERT(st == 0 || (st >= 400 && st < 500));
    FUZZ_ASSERT((st == 0) == (err == NULL));
    if (st) {
        char *e = serve_error_body(st, err);
        json_t *v = json_loads(e, 0, NULL);
        FUZZ_ASSERT(json_is_object(json_object_get(v, "error")));
        json_decref(v);
        free(e);
    } else if (kind == SERVE_CHAT) {
        char *e2 = NULL, *p = serve_chat_prompt(&r, &e2), *pre = serve_forced_prefix(&r);
        FUZZ_ASSERT(p && str_endswith(p, pre));
        free(p);
        free(pre);
        free(e2);
    } else FUZZ_ASSERT(json_is_object(r.task));
    free(err);
    serve_request_clear(&r);
    /* the body as generated text: cut points within it */
    size_t start, end = serve_stream_ready(body, len, NULL, data[0] & 2, &start);
    FUZZ_ASSERT(start <= end || end == 0);
    FUZZ_ASSERT(end <= len);
    FUZZ_ASSERT(serve_find_stop(body, len, NULL) == len);
    char *path = fuzz_cstr((const uint8_t *)body, len < 64 ? len : 64);
    int route = serve_route(data[0] & 4 ? "GET" : "POST", path);
    FUZZ_ASSERT((route >= SERVE_CHAT && route <= SERVE_METRICS) || route == -404 || route == -405);
    free(path);
    return 0;
}
