/* safetensors.h — reading and writing the safetensors format
 * (https://github.com/huggingface/safetensors): an 8-byte little-endian
 * header length, a JSON header {name: {dtype, shape, data_offsets}} with
 * an optional "__metadata__" object of strings, then the tensor bytes.
 *
 * Reading checks everything the format promises and refuses files that
 * break it, naming the file and the tensor: short files, header length
 * past the end, bad JSON or duplicate names, unknown dtypes, offsets
 * that do not match dtype x shape, holes, overlaps, trailing bytes.
 * F32, BF16, F16 and F64 are read (converted to float32 on request).
 *
 * Writing: tensors sorted by name, compact JSON, "__metadata__" first
 * (as the official writer does), the header padded with spaces so the
 * data starts on a 64-byte boundary (mmap-friendly).  F32 or BF16
 * (round to nearest even). */
#ifndef HAT_SAFETENSORS_H
#define HAT_SAFETENSORS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum st_dtype { ST_F32, ST_BF16, ST_F16, ST_F64 };

#define ST_MAX_DIMS 8

typedef struct {
    char    *name;
    int      dtype;
    int      ndim;
    int64_t  shape[ST_MAX_DIMS];
    size_t   numel;
    size_t   begin, end;         /* byte offsets into the data area */
} st_tensor;

typedef struct {
    char          *name;         /* for messages */
    unsigned char *buf;          /* the whole file (owned) */
    size_t         size;
    size_t         data_start;   /* 8 + header length */
    st_tensor     *t;
    int            n;
    json_t        *meta;         /* __metadata__ or NULL */
} st_file;

/* Parse a file already in memory; takes ownership of buf (malloc'd).
 * Returns NULL after a diagnostic "prog: NAME: message". */
st_file *st_parse(unsigned char *buf, size_t size, const char *name);
st_file *st_open(const char *path);
void     st_close(st_file *f);
const st_tensor *st_find(const st_file *f, const char *name);
const char *st_dtype_name(int dtype);
int      st_dtype_size(int dtype);
/* Convert a tensor to float32 into out (numel floats). */
void     st_read_f32(const st_file *f, const st_tensor *t, float *out);

/* What to write: name, shape and float32 data. */
typedef struct {
    const char  *name;
    int          ndim;
    int64_t      shape[ST_MAX_DIMS];
    const float *data;
} st_entry;

/* Serialise to a malloc'd buffer (*len bytes).  dtype ST_F32 or ST_BF16;
 * meta may be NULL (string values only). */
unsigned char *st_serialize(const st_entry *e, int n, int dtype, const json_t *meta, size_t *len);
/* Serialise and write atomically.  0 or -1 (reported). */
int st_save(const char *path, const st_entry *e, int n, int dtype, const json_t *meta);

uint16_t f32_to_bf16(float x);
float    bf16_to_f32(uint16_t h);

#endif
