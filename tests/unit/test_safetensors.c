/* test_safetensors.c — round trips (F32, BF16), the 64-byte data offset,
 * and every malformed-file case the reader must refuse. */
#include "test.h"
#include "safetensors.h"
#include "util.h"

#include <stdint.h>

static unsigned char *sample(size_t *len, int dtype)
{
    static float a[6] = { 1, -2, 3.5f, 0.1f, 1e-3f, -7 }, b[3] = { 0.25f, 8, 1e6f };
    st_entry e[2] = { { "zeta", 2, { 2, 3 }, a }, { "alpha", 1, { 3 }, b } };
    json_t *meta = json_pack("{s:s}", "format", "pt");
    unsigned char *buf = st_serialize(e, 2, dtype, meta, len);
    json_decref(meta);
    return buf;
}

static st_file *parse_copy(const unsigned char *buf, size_t len)
{
    unsigned char *c = xmalloc(len + 1);
    memcpy(c, buf, len);
    return st_parse(c, len, "x.safetensors");
}

static void round_trip_f32(void)
{
    size_t len;
    unsigned char *buf = sample(&len, ST_F32);
    uint64_t hl = 0;
    memcpy(&hl, buf, 8);
    CHECK_EQ_INT((8 + hl) % 64, 0);                          /* data 64-byte aligned */
    const char *head = "{\"__metadata__\":{\"format\":\"pt\"},\"alpha\"";
    CHECK(!memcmp(buf + 8, head, strlen(head)));   /* sorted, meta first */
    st_file *f = parse_copy(buf, len);
    CHECK(f != NULL);
    if (f) {
        const st_tensor *t = st_find(f, "zeta");
        CHECK(t && t->ndim == 2 && t->shape[1] == 3 && t->dtype == ST_F32);
        float out[6];
        st_read_f32(f, t, out);
        CHECK_NEAR(out[3], 0.1f, 0);
        CHECK_STR(json_string_value(json_object_get(f->meta, "format")), "pt");
        st_close(f);
    }
    free(buf);
}

static void bf16_rounding(void)
{
    CHECK_EQ_INT(f32_to_bf16(1.0f), 0x3f80);
    CHECK_EQ_INT(f32_to_bf16(-2.0f), 0xc000);
    /* 1 + 2^-8 is a tie between 1 and 1+2^-7: round to even (1). */
    CHECK_EQ_INT(f32_to_bf16(1.00390625f), 0x3f80);
    CHECK_EQ_INT(f32_to_bf16(1.01171875f), 0x3f82);   /* 1 + 3*2^-8 ties up to even */
    CHECK_NEAR(bf16_to_f32(0x4049), 3.140625, 0);
    size_t len;
    unsigned char *buf = sample(&len, ST_BF16);
    st_file *f = parse_copy(buf, len);
    CHECK(f != NULL);
    if (f) {
        const st_tensor *t = st_find(f, "zeta");
        CHECK(t->dtype == ST_BF16 && t->end - t->begin == 12);
        float out[6];
        st_read_f32(f, t, out);
        CHECK_NEAR(out[2], 3.5, 0);
        CHECK_NEAR(out[3], 0.1, 1e-3);
        st_close(f);
    }
    free(buf);
}

/* Build a file from a header string and n data bytes. */
static st_file *from_header(const char *h, size_t data)
{
    size_t hl = strlen(h), len = 8 + hl + data;
    unsigned char *b = xcalloc(1, len + 1);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, h, hl);
    return st_parse(b, len, "bad.safetensors");
}

static void refuses_malformed(void)
{
    size_t len;
    unsigned char *buf = sample(&len, ST_F32);
    CHECK(parse_copy(buf, 5) == NULL);                          /* too short */
    CHECK(parse_copy(buf, len - 4) == NULL);                    /* truncated data */
    unsigned char *big = xcalloc(1, len + 4);
    memcpy(big, buf, len);
    CHECK(st_parse(big, len + 4, "x") == NULL);                 /* trailing bytes */
    free(buf);
    CHECK(from_header("[1]", 0) == NULL);                       /* not an object */
    CHECK(from_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16) == NULL);
    CHECK(from_header("{\"a\":{\"dtype\":\"I7\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8) == NULL);
    CHECK(from_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8) == NULL);
    CHECK(from_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12) == NULL); /* hole */
    CHECK(from_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12) == NULL); /* overlap */
    CHECK(from_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8) == NULL);
    st_file *ok = from_header("{\"a\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}", 8);
    CHECK(ok != NULL);
    st_close(ok);
    uint64_t huge = 1ull << 40;
    unsigned char hb[16] = { 0 };
    memcpy(hb, &huge, 8);
    CHECK(parse_copy(hb, 16) == NULL);                          /* header length past EOF */
}

int main(void)
{
    RUN(round_trip_f32);
    RUN(bf16_rounding);
    RUN(refuses_malformed);
    TEST_MAIN_END();
}
