/*
 * logdoctor.formats._speedups: the record decoder of v2 record batches in C.
 *
 * The layout of a record (K:clients/src/main/java/org/apache/kafka/common/record/DefaultRecord.java):
 *   varint length, int8 attributes, varlong timestampDelta, varint offsetDelta,
 *   varint keyLength + key (negative = null), varint valueLength + value (negative = null),
 *   varint headerCount, headers (varint keyLength >= 0 + utf-8 key, varint valueLength + value).
 * Varints follow K:clients/.../common/utils/ByteUtils.java (at most 5 bytes for an int32, 10 for an
 * int64; the last byte must not have its high bit set; bits beyond the width are dropped).
 *
 * The pure-Python twin in v2_twin.py gives identical results; tests compare them.
 * Errors are raised as RecordError(code, position, record_index); batch_v2.py turns them into
 * logdoctor.errors.CorruptRecordError with the file name and byte position.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <dirent.h>
#include <sys/stat.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

/* error codes, mirrored in v2_twin.py (RECORD_ERRORS) */
enum {
    E_OK = 0,
    E_FEWER_RECORDS = 1,    /* the records end before the declared count */
    E_OVERLONG_VARINT = 2,  /* a varint longer than 5 (varlong: 10) bytes */
    E_BAD_LENGTH = 3,       /* record length negative or past the end of the records */
    E_FIELD_OVERRUN = 4,    /* a field runs past the record's declared length */
    E_BAD_HEADER_COUNT = 5, /* negative header count, or more headers than bytes left */
    E_BAD_HEADER_KEY = 6,   /* negative header key length */
    E_LENGTH_MISMATCH = 7,  /* the fields end before the record's declared length */
    E_TRAILING = 8,         /* bytes remain after the declared record count */
    E_TRUNCATED_LENGTH = 9, /* the record length varint itself runs past the end */
    E_BAD_COUNT = 10,       /* negative record count */
};

static PyObject *RecordError;

/* Slot offsets of logdoctor.formats.record_types.Record / Header (slots dataclasses). */
static PyTypeObject *record_type = NULL;
static PyTypeObject *header_type = NULL;
static Py_ssize_t rec_off[7]; /* offset, timestamp, key, value, headers, timestamp_type, sequence */
static Py_ssize_t hdr_off[2]; /* key, value */
static PyObject *ts_types[2] = {NULL, NULL}; /* TimestampType.CREATE_TIME, LOG_APPEND_TIME */

typedef struct {
    int64_t ts_delta;
    int32_t offset_delta;
    Py_ssize_t key_pos;
    int32_t key_len;
    Py_ssize_t value_pos;
    int32_t value_len;
    int32_t header_count;
    Py_ssize_t headers_pos;
    Py_ssize_t end; /* the record's end (its length checked against the end of the buffer) */
} rec_t;

/* Unsigned varint of at most 5 bytes, bits beyond 32 dropped. Returns E_OK, E_FIELD_OVERRUN (EOF)
 * or E_OVERLONG_VARINT. */
static inline int
read_uvarint32(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t end, uint32_t *out)
{
    uint32_t r = 0;
    Py_ssize_t i = *pos;
    for (int n = 0; n < 5; n++) {
        if (i >= end)
            return E_FIELD_OVERRUN;
        uint8_t b = p[i++];
        if (n == 4) {
            if (b & 0x80)
                return E_OVERLONG_VARINT;
            r |= (uint32_t)b << 28;
            break;
        }
        r |= (uint32_t)(b & 0x7f) << (7 * n);
        if (!(b & 0x80))
            break;
    }
    *pos = i;
    *out = r;
    return E_OK;
}

static inline int
read_varint32(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t end, int32_t *out)
{
    uint32_t u;
    int rc = read_uvarint32(p, pos, end, &u);
    if (rc)
        return rc;
    *out = (int32_t)((u >> 1) ^ (~(u & 1) + 1));
    return E_OK;
}

static inline int
read_varint64(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t end, int64_t *out)
{
    uint64_t r = 0;
    Py_ssize_t i = *pos;
    for (int n = 0; n < 10; n++) {
        if (i >= end)
            return E_FIELD_OVERRUN;
        uint8_t b = p[i++];
        if (n == 9) {
            if (b & 0x80)
                return E_OVERLONG_VARINT;
            r |= (uint64_t)b << 63;
            break;
        }
        r |= (uint64_t)(b & 0x7f) << (7 * n);
        if (!(b & 0x80))
            break;
    }
    *pos = i;
    *out = (int64_t)((r >> 1) ^ (~(r & 1) + 1));
    return E_OK;
}

/* One header at *pos of a record ending at rend: varint keyLength >= 0 + key, varint valueLength +
 * value (negative = null). On success *kpos / *vpos are where the key and value start and *pos is
 * past the header; else the error code, with *errpos at the varint whose length is wrong.
 *
 * Every pass over the headers goes through here: the first (parse_record, which checks the record)
 * and the second (build_headers, decode_batch_columns, which copy them). The second pass cannot
 * trust what the first one saw: the buffer may be a live broker's segment (mmap) whose bytes change
 * between the two, so each length is checked against rend again and the batch fails with the error
 * the first pass gives for the same bytes. */
static inline int
next_header(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t rend, int32_t *kl, Py_ssize_t *kpos, int32_t *vl,
            Py_ssize_t *vpos, Py_ssize_t *errpos)
{
    Py_ssize_t i = *pos;
    int rc = read_varint32(p, &i, rend, kl);
    if (rc) {
        *errpos = *pos;
        return rc;
    }
    if (*kl < 0) {
        *errpos = *pos;
        return E_BAD_HEADER_KEY;
    }
    if (*kl > rend - i) {
        *errpos = *pos;
        return E_FIELD_OVERRUN;
    }
    *kpos = i;
    i += *kl;
    Py_ssize_t field = i;
    rc = read_varint32(p, &i, rend, vl);
    if (rc) {
        *errpos = field;
        return rc;
    }
    *vpos = i;
    if (*vl >= 0) {
        if (*vl > rend - i) {
            *errpos = field;
            return E_FIELD_OVERRUN;
        }
        i += *vl;
    }
    *pos = i;
    return E_OK;
}

/* Parse one record starting at *pos; on success *pos is the record's end. *errpos gets the
 * position of the problem. Headers are validated (walked) but not materialised. */
static int
parse_record(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t end, rec_t *rec, Py_ssize_t *errpos)
{
    Py_ssize_t start = *pos;
    Py_ssize_t i = start;
    int32_t length;
    int rc;

    if (start >= end) {
        *errpos = start;
        return E_FEWER_RECORDS;
    }
    rc = read_varint32(p, &i, end, &length);
    if (rc) {
        *errpos = start;
        return rc == E_FIELD_OVERRUN ? E_TRUNCATED_LENGTH : rc;
    }
    if (length < 0 || length > end - i) {
        *errpos = start;
        return E_BAD_LENGTH;
    }
    Py_ssize_t rend = i + length;
    Py_ssize_t field = i;
#define CHECK(expr)            \
    do {                       \
        rc = (expr);           \
        if (rc) {              \
            *errpos = field;   \
            return rc;         \
        }                      \
    } while (0)
    /* attributes (unused) */
    if (i >= rend) {
        *errpos = i;
        return E_FIELD_OVERRUN;
    }
    i++;
    field = i;
    CHECK(read_varint64(p, &i, rend, &rec->ts_delta));
    field = i;
    CHECK(read_varint32(p, &i, rend, &rec->offset_delta));
    field = i;
    CHECK(read_varint32(p, &i, rend, &rec->key_len));
    if (rec->key_len >= 0) {
        if (rec->key_len > rend - i) {
            *errpos = field;
            return E_FIELD_OVERRUN;
        }
        rec->key_pos = i;
        i += rec->key_len;
    }
    field = i;
    CHECK(read_varint32(p, &i, rend, &rec->value_len));
    if (rec->value_len >= 0) {
        if (rec->value_len > rend - i) {
            *errpos = field;
            return E_FIELD_OVERRUN;
        }
        rec->value_pos = i;
        i += rec->value_len;
    }
    field = i;
    CHECK(read_varint32(p, &i, rend, &rec->header_count));
    if (rec->header_count < 0 || rec->header_count > rend - i) {
        *errpos = field;
        return E_BAD_HEADER_COUNT;
    }
    rec->headers_pos = i;
    rec->end = rend;
    for (int32_t h = 0; h < rec->header_count; h++) {
        int32_t kl, vl;
        Py_ssize_t kpos, vpos;
        rc = next_header(p, &i, rend, &kl, &kpos, &vl, &vpos, errpos);
        if (rc)
            return rc;
    }
#undef CHECK
    if (i != rend) {
        *errpos = i;
        return E_LENGTH_MISMATCH;
    }
    *pos = rend;
    return E_OK;
}

/* Java's DefaultRecordBatch.incrementSequence with int32 wrap-around. */
static inline int32_t
increment_sequence(int32_t seq, int32_t inc)
{
    int32_t limit = (int32_t)((uint32_t)INT32_MAX - (uint32_t)inc);
    if (seq > limit)
        return (int32_t)((uint32_t)inc - ((uint32_t)INT32_MAX - (uint32_t)seq) - 1u);
    return (int32_t)((uint32_t)seq + (uint32_t)inc);
}

static PyObject *
raise_record_error(int code, Py_ssize_t pos, Py_ssize_t index)
{
    PyObject *args = Py_BuildValue("(inn)", code, pos, index);
    if (args) {
        PyErr_SetObject(RecordError, args);
        Py_DECREF(args);
    }
    return NULL;
}

static int
lookup_slot(PyTypeObject *type, const char *name, Py_ssize_t *offset)
{
    PyObject *d = PyDict_GetItemString(type->tp_dict, name);
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", type->tp_name, name);
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    if (m->type != T_OBJECT_EX || (m->flags & READONLY)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", type->tp_name, name);
        return -1;
    }
    *offset = m->offset;
    return 0;
}

static PyObject *
configure(PyObject *self, PyObject *args)
{
    PyObject *rt, *ht;
    static const char *rnames[7] = {"offset", "timestamp", "key", "value", "headers", "timestamp_type",
                                    "sequence"};
    static const char *hnames[2] = {"key", "value"};
    PyObject *create_time = NULL, *log_append_time = NULL;
    if (!PyArg_ParseTuple(args, "O!O!|OO", &PyType_Type, &rt, &PyType_Type, &ht, &create_time,
                          &log_append_time))
        return NULL;
    for (int k = 0; k < 7; k++)
        if (lookup_slot((PyTypeObject *)rt, rnames[k], &rec_off[k]) < 0)
            return NULL;
    for (int k = 0; k < 2; k++)
        if (lookup_slot((PyTypeObject *)ht, hnames[k], &hdr_off[k]) < 0)
            return NULL;
    Py_INCREF(rt);
    Py_INCREF(ht);
    Py_XSETREF(record_type, (PyTypeObject *)rt);
    Py_XSETREF(header_type, (PyTypeObject *)ht);
    if (create_time && log_append_time) {
        Py_XSETREF(ts_types[0], Py_NewRef(create_time));
        Py_XSETREF(ts_types[1], Py_NewRef(log_append_time));
    }
    Py_RETURN_NONE;
}

#define SET_SLOT(obj, off, val) (*(PyObject **)((char *)(obj) + (off)) = (val))

static PyObject *
bytes_or_none(const uint8_t *p, Py_ssize_t pos, int32_t len)
{
    if (len < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p + pos, len);
}

/* The headers of record index (checked by parse_record) as a tuple of Header objects: a second pass
 * over the bytes, whose lengths are checked again (next_header). */
static PyObject *
build_headers(const uint8_t *p, const rec_t *rec, Py_ssize_t index)
{
    int32_t count = rec->header_count;
    Py_ssize_t i = rec->headers_pos;
    PyObject *tuple = PyTuple_New(count);
    if (tuple == NULL)
        return NULL;
    for (int32_t h = 0; h < count; h++) {
        int32_t kl, vl;
        Py_ssize_t kpos, vpos, errpos;
        int rc = next_header(p, &i, rec->end, &kl, &kpos, &vl, &vpos, &errpos);
        if (rc) {
            Py_DECREF(tuple);
            return raise_record_error(rc, errpos, index);
        }
        PyObject *key = PyUnicode_DecodeUTF8((const char *)p + kpos, kl, "replace");
        PyObject *value = bytes_or_none(p, vpos, vl);
        PyObject *hdr = (key && value) ? header_type->tp_alloc(header_type, 0) : NULL;
        if (hdr == NULL) {
            Py_XDECREF(key);
            Py_XDECREF(value);
            Py_DECREF(tuple);
            return NULL;
        }
        SET_SLOT(hdr, hdr_off[0], key);
        SET_SLOT(hdr, hdr_off[1], value);
        PyTuple_SET_ITEM(tuple, h, hdr);
    }
    return tuple;
}

/* Records are read once, front to back, mostly from memory rather than cache (a segment is
 * far larger than the caches): ask for the bytes a few records ahead while this one is copied. */
#define PREFETCH_DISTANCE 2048
static inline void
prefetch_ahead(const uint8_t *p, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t *done)
{
    Py_ssize_t to = pos + PREFETCH_DISTANCE;
    if (to > end)
        to = end;
    Py_ssize_t i = *done > pos ? *done : pos;
    for (; i < to; i += 64)
        __builtin_prefetch(p + i);
    *done = i;
}

/* The records of one records section as a list of Record objects (created with the type's
 * tp_alloc and their slots set directly: no __init__ call per record). */
static PyObject *
build_records(const uint8_t *p, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int64_t base_offset,
              int64_t base_timestamp, int use_lat, int64_t lat, int32_t base_sequence, PyObject *ts_type)
{
    if (count < 0)
        return raise_record_error(E_BAD_COUNT, pos, 0);
    /* a record takes at least 7 bytes: more than that cannot be there (and is not allocated) */
    Py_ssize_t cap = count <= (end - pos) / 7 + 1 ? count : (end - pos) / 7 + 1;
    PyObject *list = PyList_New(cap);
    if (list == NULL)
        return NULL;
    PyObject *ts_obj = NULL; /* consecutive records often share a timestamp: share the int too */
    Py_ssize_t prefetched = pos;
    int64_t ts_prev = 0;
    if (use_lat) {
        ts_obj = PyLong_FromLongLong(lat);
        if (ts_obj == NULL)
            goto fail;
        ts_prev = lat;
    }
    for (Py_ssize_t n = 0; n < count; n++) {
        rec_t rec;
        Py_ssize_t errpos;
        int rc = parse_record(p, &pos, end, &rec, &errpos);
        if (rc) {
            raise_record_error(rc, errpos, n);
            goto fail;
        }
        prefetch_ahead(p, pos, end, &prefetched);
        if (n >= cap) { /* unreachable: parse_record failed before (each record is >= 7 bytes) */
            PyErr_SetString(PyExc_RuntimeError, "record count bound");
            goto fail;
        }
        int64_t ts = use_lat ? lat : (int64_t)((uint64_t)base_timestamp + (uint64_t)rec.ts_delta);
        if (ts_obj == NULL || ts != ts_prev) {
            Py_XDECREF(ts_obj);
            ts_obj = PyLong_FromLongLong(ts);
            if (ts_obj == NULL)
                goto fail;
            ts_prev = ts;
        }
        PyObject *o = PyLong_FromLongLong((long long)((uint64_t)base_offset + (uint64_t)(int64_t)rec.offset_delta));
        PyObject *key = bytes_or_none(p, rec.key_pos, rec.key_len);
        PyObject *value = bytes_or_none(p, rec.value_pos, rec.value_len);
        PyObject *headers = rec.header_count ? build_headers(p, &rec, n) : PyTuple_New(0);
        PyObject *seq = PyLong_FromLong(base_sequence >= 0 ? increment_sequence(base_sequence, rec.offset_delta)
                                                            : -1);
        PyObject *r = (o && key && value && headers && seq) ? record_type->tp_alloc(record_type, 0) : NULL;
        if (r == NULL) {
            Py_XDECREF(o);
            Py_XDECREF(key);
            Py_XDECREF(value);
            Py_XDECREF(headers);
            Py_XDECREF(seq);
            goto fail;
        }
        SET_SLOT(r, rec_off[0], o);
        SET_SLOT(r, rec_off[1], Py_NewRef(ts_obj));
        SET_SLOT(r, rec_off[2], key);
        SET_SLOT(r, rec_off[3], value);
        SET_SLOT(r, rec_off[4], headers);
        SET_SLOT(r, rec_off[5], Py_NewRef(ts_type));
        SET_SLOT(r, rec_off[6], seq);
        PyList_SET_ITEM(list, n, r);
    }
    if (pos != end) {
        raise_record_error(E_TRAILING, pos, count);
        goto fail;
    }
    Py_XDECREF(ts_obj);
    return list;
fail:
    Py_XDECREF(ts_obj);
    Py_DECREF(list);
    return NULL;
}

/* decode_records(data, pos, end, count, base_offset, base_timestamp, log_append_time | None,
 *                base_sequence, timestamp_type) -> list[Record] */
static PyObject *
decode_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, end, count;
    long long base_offset, base_timestamp;
    PyObject *lat_obj, *ts_type, *result = NULL;
    int base_sequence;
    long long lat = 0;

    if (record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*nnnLLOiO", &view, &pos, &end, &count, &base_offset, &base_timestamp,
                          &lat_obj, &base_sequence, &ts_type))
        return NULL;
    int use_lat = lat_obj != Py_None;
    if (use_lat) {
        lat = PyLong_AsLongLong(lat_obj);
        if (lat == -1 && PyErr_Occurred())
            goto done;
    }
    if (pos < 0 || end > view.len || pos > end) {
        PyErr_SetString(PyExc_ValueError, "bad bounds");
        goto done;
    }
    result = build_records((const uint8_t *)view.buf, pos, end, count, base_offset, base_timestamp, use_lat, lat,
                           base_sequence, ts_type);
done:
    PyBuffer_Release(&view);
    return result;
}

/* ------------------------------------------------------------------------------------------
 * Batches read straight from the segment buffer: the 61-byte header is read here (big-endian,
 * K:clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java), so a caller
 * hands over (buffer, batch start) and nothing per record or per field crosses into Python.
 */

typedef struct {
    int64_t base_offset;
    int32_t length;
    int16_t attributes;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int32_t base_sequence;
    int32_t record_count;
} batch_hdr_t;

static inline uint32_t
be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline uint64_t
be64(const uint8_t *p)
{
    return ((uint64_t)be32(p) << 32) | (uint64_t)be32(p + 4);
}

/* The size of the records section (after the 61-byte header): length counts the bytes after the
 * 12-byte offset + length prefix. In Py_ssize_t: length + 12 overflows an int32 near INT32_MAX. */
static inline Py_ssize_t
records_size(const batch_hdr_t *h)
{
    return (Py_ssize_t)h->length + 12 - 61;
}

/* The header of the batch at start; -1 with ValueError when the buffer cannot hold the batch
 * (callers pass batches that iter_batches/parse already framed: this is a guard, not a check). */
static int
read_batch_header(const uint8_t *p, Py_ssize_t len, Py_ssize_t start, batch_hdr_t *h)
{
    if (start < 0 || start > len - 61) {
        PyErr_SetString(PyExc_ValueError, "batch start outside the buffer");
        return -1;
    }
    const uint8_t *b = p + start;
    h->base_offset = (int64_t)be64(b);
    h->length = (int32_t)be32(b + 8);
    h->attributes = (int16_t)(((uint16_t)b[21] << 8) | b[22]);
    h->base_timestamp = (int64_t)be64(b + 27);
    h->max_timestamp = (int64_t)be64(b + 35);
    h->base_sequence = (int32_t)be32(b + 53);
    h->record_count = (int32_t)be32(b + 57);
    if (h->length < 61 - 12 || (Py_ssize_t)h->length > len - start - 12) {
        PyErr_SetString(PyExc_ValueError, "batch length outside the buffer");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * lz4: Kafka's frame (K:clients/src/main/java/org/apache/kafka/common/compress/Lz4BlockInputStream.java)
 * walked here, blocks decoded by LZ4_decompress_safe of the lz4 package's own library (its address
 * is handed over by native.py through configure_lz4, so the blocks are decoded by exactly the code
 * that codecs.py uses). The walk accepts exactly what codecs._lz4_decompress accepts for magic 2,
 * except frames with block checksums: anything else returns -1 and the caller falls back to
 * codecs.py, which raises the typed error (or decodes the frame).
 */
typedef int (*lz4_decompress_safe_t)(const char *src, char *dst, int compressed_size, int dst_capacity);
static lz4_decompress_safe_t lz4_decompress_safe = NULL;

/* The most bytes one records section may decompress to: codecs.MAX_DECOMPRESSED (see there; set by
 * configure_limits). A frame that decodes to more is left to codecs.py, which stops at the same
 * limit and raises the typed error. */
static Py_ssize_t max_decompressed = 0x7FFFFFFF - 61;

/* The most bytes decode_batch_columns decompresses one lz4 records section to in its scratch buffer:
 * codecs.WINDOW (set by configure_window). A larger section is left to the Python path, which reads its
 * records a window at a time (batch_v2.SectionTooLargeError, as gzip and zstd sections): a batch that
 * decompresses to 1 GiB is never whole in memory (issue 48). batch_records keeps max_decompressed. */
static Py_ssize_t max_window = (Py_ssize_t)8 << 20;

#define XXH_P1 0x9E3779B1u
#define XXH_P2 0x85EBCA77u
#define XXH_P3 0xC2B2AE3Du
#define XXH_P4 0x27D4EB2Fu
#define XXH_P5 0x165667B1u

static inline uint32_t
rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

/* xxHash32 (seed 0) of fewer than 16 bytes: all a frame descriptor can be. */
static uint32_t
xxh32_small(const uint8_t *b, Py_ssize_t n)
{
    uint32_t h = XXH_P5 + (uint32_t)n;
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint32_t lane = (uint32_t)b[i] | ((uint32_t)b[i + 1] << 8) | ((uint32_t)b[i + 2] << 16) |
                        ((uint32_t)b[i + 3] << 24);
        h = rotl32(h + lane * XXH_P3, 17) * XXH_P4;
    }
    for (; i < n; i++)
        h = rotl32(h + b[i] * XXH_P5, 11) * XXH_P1;
    h ^= h >> 15;
    h *= XXH_P2;
    h ^= h >> 13;
    h *= XXH_P3;
    h ^= h >> 16;
    return h;
}

typedef struct {
    char *p;
    Py_ssize_t cap;
} scratch_t;

static int
scratch_reserve(scratch_t *s, Py_ssize_t need)
{
    if (need <= s->cap)
        return 0;
    Py_ssize_t cap = s->cap * 2 > need ? s->cap * 2 : need;
    char *q = PyMem_RawRealloc(s->p, (size_t)cap);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    s->p = q;
    s->cap = cap;
    return 0;
}

/* Decompress a Kafka lz4 frame into s; *out_len = bytes written. 0 ok, 1 not for this decoder
 * (corrupt, or a feature left to codecs.py), 2 more than ``window`` bytes (left to the windowed Python
 * path; the scratch never holds more than window plus one block), -1 with a Python exception (memory). */
static int
lz4_frame_decode(const uint8_t *d, Py_ssize_t n, scratch_t *s, Py_ssize_t *out_len, Py_ssize_t window)
{
    if (lz4_decompress_safe == NULL || n < 7)
        return 1;
    if (d[0] != 0x04 || d[1] != 0x22 || d[2] != 0x4D || d[3] != 0x18)
        return 1;
    uint8_t flg = d[4], bd = d[5];
    if ((flg & 0x03) || !(flg & 0x20) || (flg >> 6) != 1 || (flg & 0x10))
        return 1; /* reserved bits, dependent blocks, version, block checksums (codecs.py) */
    int bsid = (bd >> 4) & 7;
    if ((bd & 0x8F) || bsid < 4)
        return 1;
    Py_ssize_t max_block = (Py_ssize_t)1 << (2 * bsid + 8);
    int content_checksum = flg & 0x04;
    Py_ssize_t pos = 6 + ((flg & 0x08) ? 8 : 0);
    if (pos >= n)
        return 1;
    if (d[pos] != ((xxh32_small(d + 4, pos - 4) >> 8) & 0xFF))
        return 1;
    pos++;
    Py_ssize_t out = 0;
    for (;;) {
        if (n - pos < 4)
            return 1;
        uint32_t word = (uint32_t)d[pos] | ((uint32_t)d[pos + 1] << 8) | ((uint32_t)d[pos + 2] << 16) |
                        ((uint32_t)d[pos + 3] << 24);
        Py_ssize_t size = (Py_ssize_t)(word & 0x7FFFFFFFu);
        if (size == 0) {
            if (content_checksum && n - pos - 4 < 4)
                return 1;
            break; /* the end mark; the content checksum is not verified (as Java) */
        }
        if (size > max_block || size > n - pos - 4)
            return 1;
        /* out <= max_decompressed here: the scratch never grows past it by more than one block */
        if (scratch_reserve(s, out + max_block) < 0)
            return -1;
        if (word & 0x80000000u) {
            memcpy(s->p + out, d + pos + 4, (size_t)size);
            out += size;
        } else {
            int got = lz4_decompress_safe((const char *)d + pos + 4, s->p + out, (int)size, (int)max_block);
            if (got < 0)
                return 1;
            out += got;
        }
        if (out > max_decompressed)
            return 1; /* a decompression bomb: codecs.py raises the typed error */
        if (out > window)
            return 2; /* more than a window: read a window at a time by the Python path */
        pos += 4 + size;
    }
    *out_len = out;
    return 0;
}

/* configure_window(window) -> the previous value (see max_window) */
static PyObject *
configure_window(PyObject *self, PyObject *arg)
{
    Py_ssize_t v = PyLong_AsSsize_t(arg);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    if (v < 0) {
        PyErr_SetString(PyExc_ValueError, "window must be >= 0");
        return NULL;
    }
    Py_ssize_t old = max_window;
    max_window = v;
    return PyLong_FromSsize_t(old);
}

/* configure_limits(max_decompressed) -> the previous value */
static PyObject *
configure_limits(PyObject *self, PyObject *arg)
{
    Py_ssize_t v = PyLong_AsSsize_t(arg);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    if (v < 0) {
        PyErr_SetString(PyExc_ValueError, "max_decompressed must be >= 0");
        return NULL;
    }
    Py_ssize_t old = max_decompressed;
    max_decompressed = v;
    return PyLong_FromSsize_t(old);
}

static PyObject *
configure_lz4(PyObject *self, PyObject *arg)
{
    if (arg == Py_None) {
        lz4_decompress_safe = NULL;
        Py_RETURN_NONE;
    }
    void *addr = PyLong_AsVoidPtr(arg);
    if (addr == NULL && PyErr_Occurred())
        return NULL;
    lz4_decompress_safe = (lz4_decompress_safe_t)addr;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------
 * batch_records(buf, start) -> list[Record] | None
 *
 * The records of the batch at buf[start:], uncompressed or lz4 (decompressed here). None when
 * the batch needs the Python path: another codec, or an lz4 frame this decoder leaves to
 * codecs.py (which then raises the typed error or decodes it). RecordError(code, pos, index)
 * as decode_records, positions in buf (uncompressed) or in the decompressed records (lz4).
 */
static PyObject *
batch_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start;
    batch_hdr_t h;
    scratch_t s = {NULL, 0};
    PyObject *result = NULL;

    if (record_type == NULL || ts_types[0] == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*n", &view, &start))
        return NULL;
    const uint8_t *buf = (const uint8_t *)view.buf;
    if (read_batch_header(buf, view.len, start, &h) < 0)
        goto done;
    int codec = h.attributes & 0x07;
    const uint8_t *p;
    Py_ssize_t pos, end;
    if (codec == 0) {
        p = buf;
        pos = start + 61;
        end = start + 12 + (Py_ssize_t)h.length;
    } else if (codec == 3) {
        Py_ssize_t out_len = 0;
        int rc = lz4_frame_decode(buf + start + 61, records_size(&h), &s, &out_len, PY_SSIZE_T_MAX);
        if (rc < 0)
            goto done;
        if (rc > 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        p = (const uint8_t *)s.p;
        pos = 0;
        end = out_len;
    } else {
        result = Py_NewRef(Py_None);
        goto done;
    }
    int use_lat = (h.attributes & 0x08) != 0;
    result = build_records(p, pos, end, h.record_count, h.base_offset, h.base_timestamp, use_lat,
                           h.max_timestamp, h.base_sequence, ts_types[use_lat]);
done:
    PyMem_RawFree(s.p);
    PyBuffer_Release(&view);
    return result;
}

/* ------------------------------------------------------------------------------------------
 * decode_batch_columns(buf, starts, sections, payload) -> tuple
 *
 * The records of many batches of one buffer as Arrow-ready columns, in one pass, each key and
 * value copied once (from the segment, or from the decompressed records section).
 *   starts:   sequence of batch start positions in buf (batches already framed by the walker);
 *   sections: None, or a sequence as long as starts: None (read the batch from buf, decompressing
 *             lz4 here) or the decompressed records section (other codecs, from codecs.py);
 *   payload:  false to walk and check the records and return offsets/timestamps only.
 * Returns (n, offsets i64[n], timestamps i64[n], timestamp_types i8[n],
 *          key_nulls, key_validity bitmap, key_offsets i64[n+1], key_data,
 *          value_nulls, value_validity, value_offsets i64[n+1], value_data,
 *          header_list_offsets i64[n+1], nh, header_key_offsets i64[nh+1], header_key_data,
 *          header_value_nulls, header_value_validity, header_value_offsets i64[nh+1], header_value_data)
 * with every buffer a bytearray (native byte order; validity bitmaps LSB-first, 1 = not null).
 * Errors: RecordError(code, pos, record_index, batch_index); code E_CODEC means "decompress this
 * batch with codecs.py" (a frame this decoder leaves to it).
 */
#define E_CODEC 100
#define E_WINDOW 101 /* an lz4 section of more than max_window bytes: read it a window at a time */

typedef struct {
    PyObject *obj;
    char *p;
    Py_ssize_t len, cap;
} gbuf_t;

static int
gb_init(gbuf_t *g, Py_ssize_t cap)
{
    g->obj = PyByteArray_FromStringAndSize(NULL, cap);
    if (g->obj == NULL)
        return -1;
    g->p = PyByteArray_AS_STRING(g->obj);
    g->len = 0;
    g->cap = cap;
    return 0;
}

static int
gb_grow(gbuf_t *g, Py_ssize_t extra)
{
    Py_ssize_t need = g->len + extra;
    Py_ssize_t cap = g->cap * 2 > need ? g->cap * 2 : need;
    if (PyByteArray_Resize(g->obj, cap) < 0)
        return -1;
    g->p = PyByteArray_AS_STRING(g->obj);
    g->cap = cap;
    return 0;
}

static inline int
gb_reserve(gbuf_t *g, Py_ssize_t extra)
{
    return extra <= g->cap - g->len ? 0 : gb_grow(g, extra);
}

static inline void
gb_put_i64(gbuf_t *g, int64_t v)
{
    memcpy(g->p + g->len, &v, 8);
    g->len += 8;
}

static inline void
gb_put_bit(gbuf_t *g, Py_ssize_t i, int v)
{
    uint8_t *b = (uint8_t *)g->p + (i >> 3);
    if ((i & 7) == 0)
        *b = 0;
    *b |= (uint8_t)((v != 0) << (i & 7));
    g->len = (i >> 3) + 1;
}

enum {
    G_OFFSETS, G_TIMESTAMPS, G_TSTYPES,
    G_KEY_VALID, G_KEY_OFFS, G_KEY_DATA,
    G_VAL_VALID, G_VAL_OFFS, G_VAL_DATA,
    G_LIST_OFFS,
    G_HK_OFFS, G_HK_DATA,
    G_HV_VALID, G_HV_OFFS, G_HV_DATA,
    G_COUNT
};

static PyObject *
raise_batch_error(int code, Py_ssize_t pos, Py_ssize_t index, Py_ssize_t batch)
{
    PyObject *args = Py_BuildValue("(innn)", code, pos, index, batch);
    if (args) {
        PyErr_SetObject(RecordError, args);
        Py_DECREF(args);
    }
    return NULL;
}

static PyObject *
decode_batch_columns(PyObject *self, PyObject *args)
{
    Py_buffer view;
    PyObject *starts_obj, *sections_obj;
    int payload;
    PyObject *starts = NULL, *sections = NULL, *result = NULL;
    gbuf_t g[G_COUNT];
    scratch_t s = {NULL, 0};
    Py_buffer sec;
    int have_sec = 0;

    memset(g, 0, sizeof g);
    if (!PyArg_ParseTuple(args, "y*OOp", &view, &starts_obj, &sections_obj, &payload))
        return NULL;
    starts = PySequence_Fast(starts_obj, "starts must be a sequence");
    if (starts == NULL)
        goto done;
    Py_ssize_t nb = PySequence_Fast_GET_SIZE(starts);
    if (sections_obj != Py_None) {
        sections = PySequence_Fast(sections_obj, "sections must be a sequence or None");
        if (sections == NULL)
            goto done;
        if (PySequence_Fast_GET_SIZE(sections) != nb) {
            PyErr_SetString(PyExc_ValueError, "sections and starts differ in length");
            goto done;
        }
    }
    /* Size the buffers from the headers first, so that they are not grown (and copied) as they
     * fill: a batch's records take at most its (decompressed) records section, and at least 7 bytes
     * each. lz4 sections are guessed at 4x their compressed size (grown if that is short). */
    Py_ssize_t est_span = 0, est_count = 0; /* saturate at EST_MAX: a guess, never an overflow */
#define EST_MAX (PY_SSIZE_T_MAX / 16)
    {
        const uint8_t *hb = (const uint8_t *)view.buf;
        for (Py_ssize_t b = 0; b < nb; b++) {
            Py_ssize_t start = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(starts, b));
            if (start == -1 && PyErr_Occurred())
                goto done;
            batch_hdr_t h;
            if (read_batch_header(hb, view.len, start, &h) < 0)
                goto done;
            if (h.record_count <= 0)
                continue;
            PyObject *section = sections ? PySequence_Fast_GET_ITEM(sections, b) : Py_None;
            Py_ssize_t span = records_size(&h);
            if (section != Py_None) {
                span = PyObject_Length(section);
                if (span < 0)
                    goto done;
            } else if ((h.attributes & 0x07) != 0) { /* lz4: at most max_decompressed */
                span = span < max_decompressed / 4 ? span * 4 : max_decompressed;
            }
            if (span > EST_MAX)
                span = EST_MAX;
            Py_ssize_t bound = span / 7 + 1;
            Py_ssize_t c = h.record_count < bound ? h.record_count : bound;
            est_count = est_count < EST_MAX - c ? est_count + c : EST_MAX;
            est_span = est_span < EST_MAX - span ? est_span + span : EST_MAX;
        }
    }
    {
        Py_ssize_t caps[G_COUNT];
        caps[G_OFFSETS] = caps[G_TIMESTAMPS] = est_count * 8;
        caps[G_TSTYPES] = est_count;
        if (payload) {
            caps[G_KEY_VALID] = caps[G_VAL_VALID] = est_count / 8 + 1;
            caps[G_KEY_OFFS] = caps[G_VAL_OFFS] = caps[G_LIST_OFFS] = (est_count + 1) * 8;
            caps[G_KEY_DATA] = est_span / 8 + 64; /* keys are usually small: grown when not */
            caps[G_VAL_DATA] = est_span;
        } else {
            caps[G_KEY_VALID] = caps[G_VAL_VALID] = caps[G_KEY_DATA] = caps[G_VAL_DATA] = 0;
            caps[G_KEY_OFFS] = caps[G_VAL_OFFS] = caps[G_LIST_OFFS] = 8;
        }
        caps[G_HK_OFFS] = caps[G_HV_OFFS] = 64;
        caps[G_HK_DATA] = caps[G_HV_DATA] = caps[G_HV_VALID] = 64;
        for (int k = 0; k < G_COUNT; k++)
            if (gb_init(&g[k], caps[k] > 8 ? caps[k] : 8) < 0)
                goto done;
    }
#undef EST_MAX
    gb_put_i64(&g[G_KEY_OFFS], 0);
    gb_put_i64(&g[G_VAL_OFFS], 0);
    gb_put_i64(&g[G_LIST_OFFS], 0);
    gb_put_i64(&g[G_HK_OFFS], 0);
    gb_put_i64(&g[G_HV_OFFS], 0);

    const uint8_t *buf = (const uint8_t *)view.buf;
    Py_ssize_t n = 0, nh = 0, key_nulls = 0, val_nulls = 0, hv_nulls = 0;
    int64_t kd = 0, vd = 0, hkd = 0, hvd = 0;
    for (Py_ssize_t b = 0; b < nb; b++) {
        Py_ssize_t start = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(starts, b));
        if (start == -1 && PyErr_Occurred())
            goto done;
        batch_hdr_t h;
        if (read_batch_header(buf, view.len, start, &h) < 0)
            goto done;
        if (h.record_count == 0)
            continue; /* DefaultRecordBatch.iterator: no records, the bytes are not looked at */
        int codec = h.attributes & 0x07;
        PyObject *section = sections ? PySequence_Fast_GET_ITEM(sections, b) : Py_None;
        const uint8_t *p;
        Py_ssize_t pos, end;
        if (section != Py_None) {
            if (PyObject_GetBuffer(section, &sec, PyBUF_SIMPLE) < 0)
                goto done;
            have_sec = 1;
            p = (const uint8_t *)sec.buf;
            pos = 0;
            end = sec.len;
        } else if (codec == 0) {
            p = buf;
            pos = start + 61;
            end = start + 12 + (Py_ssize_t)h.length;
        } else if (codec == 3) {
            Py_ssize_t out_len = 0;
            int rc = lz4_frame_decode(buf + start + 61, records_size(&h), &s, &out_len, max_window);
            if (rc < 0)
                goto done;
            if (rc > 0) {
                raise_batch_error(rc == 2 ? E_WINDOW : E_CODEC, 0, 0, b);
                goto done;
            }
            p = (const uint8_t *)s.p;
            pos = 0;
            end = out_len;
        } else {
            PyErr_Format(PyExc_ValueError, "batch %zd: codec %d needs a decompressed section", b, codec);
            goto done;
        }
        Py_ssize_t count = h.record_count;
        if (count < 0) {
            raise_batch_error(E_BAD_COUNT, pos, 0, b);
            goto done;
        }
        Py_ssize_t span = end - pos;
        if (count > span / 7 + 1) { /* more records than bytes for them: find the exact error */
            for (Py_ssize_t r = 0;; r++) {
                rec_t rec;
                Py_ssize_t errpos;
                int rc = parse_record(p, &pos, end, &rec, &errpos);
                if (rc) {
                    raise_batch_error(rc, errpos, r, b);
                    goto done;
                }
            }
        }
        if (gb_reserve(&g[G_OFFSETS], count * 8) < 0 || gb_reserve(&g[G_TIMESTAMPS], count * 8) < 0 ||
            gb_reserve(&g[G_TSTYPES], count) < 0)
            goto done;
        if (payload &&
            (gb_reserve(&g[G_KEY_VALID], count / 8 + 2) < 0 || gb_reserve(&g[G_KEY_OFFS], count * 8) < 0 ||
             gb_reserve(&g[G_VAL_VALID], count / 8 + 2) < 0 ||
             gb_reserve(&g[G_VAL_OFFS], count * 8) < 0 || gb_reserve(&g[G_VAL_DATA], span) < 0 ||
             gb_reserve(&g[G_LIST_OFFS], count * 8) < 0))
            goto done;
        int use_lat = (h.attributes & 0x08) != 0;
        Py_ssize_t prefetched = pos;
        memset(g[G_TSTYPES].p + g[G_TSTYPES].len, use_lat, (size_t)count);
        g[G_TSTYPES].len += count;
        for (Py_ssize_t r = 0; r < count; r++) {
            rec_t rec;
            Py_ssize_t errpos;
            int rc = parse_record(p, &pos, end, &rec, &errpos);
            if (rc) {
                raise_batch_error(rc, errpos, r, b);
                goto done;
            }
            prefetch_ahead(p, pos, end, &prefetched);
            gb_put_i64(&g[G_OFFSETS], (int64_t)((uint64_t)h.base_offset + (uint64_t)(int64_t)rec.offset_delta));
            gb_put_i64(&g[G_TIMESTAMPS],
                       use_lat ? h.max_timestamp : (int64_t)((uint64_t)h.base_timestamp + (uint64_t)rec.ts_delta));
            if (!payload) {
                n++;
                continue;
            }
            gb_put_bit(&g[G_KEY_VALID], n, rec.key_len >= 0);
            if (rec.key_len > 0) {
                if (gb_reserve(&g[G_KEY_DATA], rec.key_len) < 0)
                    goto done;
                memcpy(g[G_KEY_DATA].p + g[G_KEY_DATA].len, p + rec.key_pos, (size_t)rec.key_len);
                g[G_KEY_DATA].len += rec.key_len;
                kd += rec.key_len;
            } else if (rec.key_len < 0) {
                key_nulls++;
            }
            gb_put_i64(&g[G_KEY_OFFS], kd);
            gb_put_bit(&g[G_VAL_VALID], n, rec.value_len >= 0);
            if (rec.value_len > 0) {
                memcpy(g[G_VAL_DATA].p + g[G_VAL_DATA].len, p + rec.value_pos, (size_t)rec.value_len);
                g[G_VAL_DATA].len += rec.value_len;
                vd += rec.value_len;
            } else if (rec.value_len < 0) {
                val_nulls++;
            }
            gb_put_i64(&g[G_VAL_OFFS], vd);
            if (rec.header_count > 0) {
                Py_ssize_t hc = rec.header_count;
                /* the keys and values of the headers lie within the record's header bytes (each
                 * length is checked against the record's end again below): that much room is enough */
                Py_ssize_t hspan = rec.end - rec.headers_pos;
                if (gb_reserve(&g[G_HK_OFFS], hc * 8) < 0 || gb_reserve(&g[G_HV_OFFS], hc * 8) < 0 ||
                    gb_reserve(&g[G_HV_VALID], hc / 8 + 2) < 0 || gb_reserve(&g[G_HK_DATA], hspan) < 0 ||
                    gb_reserve(&g[G_HV_DATA], hspan) < 0)
                    goto done;
                Py_ssize_t i = rec.headers_pos;
                for (Py_ssize_t k = 0; k < hc; k++) {
                    int32_t kl, vl;
                    Py_ssize_t kpos, vpos;
                    /* the second pass: the bytes may have changed since parse_record checked them */
                    rc = next_header(p, &i, rec.end, &kl, &kpos, &vl, &vpos, &errpos);
                    if (rc) {
                        raise_batch_error(rc, errpos, r, b);
                        goto done;
                    }
                    memcpy(g[G_HK_DATA].p + g[G_HK_DATA].len, p + kpos, (size_t)kl);
                    g[G_HK_DATA].len += kl;
                    hkd += kl;
                    gb_put_i64(&g[G_HK_OFFS], hkd);
                    gb_put_bit(&g[G_HV_VALID], nh, vl >= 0);
                    if (vl > 0) {
                        memcpy(g[G_HV_DATA].p + g[G_HV_DATA].len, p + vpos, (size_t)vl);
                        g[G_HV_DATA].len += vl;
                        hvd += vl;
                    } else if (vl < 0) {
                        hv_nulls++;
                    }
                    gb_put_i64(&g[G_HV_OFFS], hvd);
                    nh++;
                }
            }
            gb_put_i64(&g[G_LIST_OFFS], (int64_t)nh);
            n++;
        }
        if (pos != end) {
            raise_batch_error(E_TRAILING, pos, count, b);
            goto done;
        }
        if (have_sec) {
            PyBuffer_Release(&sec);
            have_sec = 0;
        }
    }
    for (int k = 0; k < G_COUNT; k++)
        if (PyByteArray_Resize(g[k].obj, g[k].len) < 0)
            goto done;
    result = Py_BuildValue("(nOOOnOOOnOOOOnOOnOOO)", n, g[G_OFFSETS].obj, g[G_TIMESTAMPS].obj,
                           g[G_TSTYPES].obj, key_nulls, g[G_KEY_VALID].obj, g[G_KEY_OFFS].obj,
                           g[G_KEY_DATA].obj, val_nulls, g[G_VAL_VALID].obj, g[G_VAL_OFFS].obj,
                           g[G_VAL_DATA].obj, g[G_LIST_OFFS].obj, nh, g[G_HK_OFFS].obj, g[G_HK_DATA].obj,
                           hv_nulls, g[G_HV_VALID].obj, g[G_HV_OFFS].obj, g[G_HV_DATA].obj);
done:
    if (have_sec)
        PyBuffer_Release(&sec);
    for (int k = 0; k < G_COUNT; k++)
        Py_XDECREF(g[k].obj);
    PyMem_RawFree(s.p);
    Py_XDECREF(starts);
    Py_XDECREF(sections);
    PyBuffer_Release(&view);
    return result;
}


/* ------------------------------------------------------------------------------------------
 * walk_v2(buf, pos, limit, source, base_position, max_batches) -> (list[RecordBatchV2], pos)
 *
 * The walker's fast lane (records.iter_batches): from pos, as long as the entry there is a whole
 * v2 batch whose size field holds the 61-byte header (exactly the entries iter_batches accepts as
 * v2 without an error), make its RecordBatchV2 (slots set from the header bytes, as
 * RecordBatchV2.__init__ sets them from HEADER.unpack_from) and go on. Stops at the first other
 * entry (legacy, bad, partial, end of data) and returns its position: iter_batches deals with it.
 */
static PyTypeObject *batch_v2_type = NULL;
enum {
    B_BUF, B_START, B_ATTRIBUTES, B_BASE_OFFSET, B_BASE_SEQUENCE, B_BASE_TIMESTAMP, B_LAST_OFFSET_DELTA,
    B_LENGTH, B_MAGIC, B_MAX_TIMESTAMP, B_PLE, B_POSITION, B_PRODUCER_EPOCH, B_PRODUCER_ID,
    B_RECORD_COUNT, B_SIZE, B_SOURCE, B_STORED_CRC, B_COUNT
};
static Py_ssize_t batch_off[B_COUNT];

static PyObject *
configure_batch(PyObject *self, PyObject *arg)
{
    static const char *names[B_COUNT] = {
        "_buf", "_start", "attributes", "base_offset", "base_sequence", "base_timestamp", "last_offset_delta",
        "length", "magic", "max_timestamp", "partition_leader_epoch", "position", "producer_epoch",
        "producer_id", "record_count", "size", "source", "stored_crc"};
    if (!PyType_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "configure_batch(RecordBatchV2)");
        return NULL;
    }
    for (int k = 0; k < B_COUNT; k++)
        if (lookup_slot((PyTypeObject *)arg, names[k], &batch_off[k]) < 0)
            return NULL;
    Py_INCREF(arg);
    Py_XSETREF(batch_v2_type, (PyTypeObject *)arg);
    Py_RETURN_NONE;
}

static PyObject *
walk_v2(PyObject *self, PyObject *args)
{
    PyObject *bufobj, *source, *base_obj;
    Py_ssize_t pos, limit, max_batches;
    long long base_position;
    Py_buffer view;

    if (batch_v2_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure_batch() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OnnOOn", &bufobj, &pos, &limit, &source, &base_obj, &max_batches))
        return NULL;
    int overflow = 0;
    base_position = PyLong_AsLongLongAndOverflow(base_obj, &overflow);
    if (base_position == -1 && PyErr_Occurred())
        return NULL;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *list = PyList_New(0);
    if (list == NULL)
        goto fail;
    if (limit > view.len)
        limit = view.len;
    /* positions are base_position + pos: where that leaves int64, the Python walk (exact ints) goes on */
    if (overflow || base_position > LLONG_MAX - (long long)view.len)
        max_batches = 0;
    const uint8_t *p = (const uint8_t *)view.buf;
    while (PyList_GET_SIZE(list) < max_batches && pos >= 0 && limit - pos >= 61) {
        const uint8_t *b = p + pos;
        int32_t length = (int32_t)be32(b + 8);
        if (b[16] != 2 || length < 61 - 12 || (Py_ssize_t)length > limit - pos - 12)
            break;
        PyObject *o = batch_v2_type->tp_alloc(batch_v2_type, 0);
        if (o == NULL)
            goto fail;
        PyObject *v[B_COUNT];
        v[B_BUF] = Py_NewRef(bufobj);
        v[B_START] = PyLong_FromSsize_t(pos);
        v[B_ATTRIBUTES] = PyLong_FromLong((int16_t)(((uint16_t)b[21] << 8) | b[22]));
        v[B_BASE_OFFSET] = PyLong_FromLongLong((int64_t)be64(b));
        v[B_BASE_SEQUENCE] = PyLong_FromLong((int32_t)be32(b + 53));
        v[B_BASE_TIMESTAMP] = PyLong_FromLongLong((int64_t)be64(b + 27));
        v[B_LAST_OFFSET_DELTA] = PyLong_FromLong((int32_t)be32(b + 23));
        v[B_LENGTH] = PyLong_FromLong(length);
        v[B_MAGIC] = PyLong_FromLong(2);
        v[B_MAX_TIMESTAMP] = PyLong_FromLongLong((int64_t)be64(b + 35));
        v[B_PLE] = PyLong_FromLong((int32_t)be32(b + 12));
        v[B_POSITION] = PyLong_FromLongLong(base_position + (long long)pos);
        v[B_PRODUCER_EPOCH] = PyLong_FromLong((int16_t)(((uint16_t)b[51] << 8) | b[52]));
        v[B_PRODUCER_ID] = PyLong_FromLongLong((int64_t)be64(b + 43));
        v[B_RECORD_COUNT] = PyLong_FromLong((int32_t)be32(b + 57));
        v[B_SIZE] = PyLong_FromSsize_t((Py_ssize_t)length + 12);
        v[B_SOURCE] = Py_NewRef(source);
        v[B_STORED_CRC] = PyLong_FromUnsignedLong(be32(b + 17));
        int ok = 1;
        for (int k = 0; k < B_COUNT; k++) {
            if (v[k] == NULL)
                ok = 0;
            SET_SLOT(o, batch_off[k], v[k]); /* NULL slots are fine for the dealloc */
        }
        if (!ok || PyList_Append(list, o) < 0) {
            Py_DECREF(o);
            goto fail;
        }
        Py_DECREF(o);
        pos += (Py_ssize_t)length + 12;
    }
    PyBuffer_Release(&view);
    PyObject *result = Py_BuildValue("(Nn)", list, pos);
    return result;
fail:
    Py_XDECREF(list);
    PyBuffer_Release(&view);
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * recover_v2: the fast lane of recovery.rebuild_indexes (LogSegment.recover, see recovery.py).
 *
 * From pos, for as long as the entry there is a v2 batch that rebuild_indexes' Python walk would
 * accept and process without anything but header arithmetic, do exactly what that walk does for it:
 * CRC-32C check (ensureValid), relative offset within int32, maxTimestampSoFar, the
 * index.interval.bytes rule with its OffsetEntry/TimeEntry (maybeAppend), validBytes, the leader
 * epoch cache, and the start of a transaction (ProducerAppendInfo). Stops, without touching the
 * state, at the first entry that is anything else: not a whole v2 batch (what walk_v2 refuses), a
 * bad CRC, a control batch with a producer id (needs its marker record), a non-transactional batch
 * of a producer with an open transaction, an offset outside int32 of the base offset, or an index
 * entry whose offset would not grow. recovery.py lets its Python walk deal with that entry (which
 * raises the same typed error, or processes it) and calls back here for the rest.
 *
 * CRC-32C is computed by the crc32c package's own library (its address is handed over by
 * native.py through configure_crc32c, checked here against the standard check value), so the
 * checksums are exactly those of logdoctor.formats.crc.
 */
typedef uint32_t (*crc32c_fn_t)(uint32_t crc, const unsigned char *data, unsigned long length);
static crc32c_fn_t crc32c_fn = NULL;

static PyTypeObject *offset_entry_type = NULL; /* logdoctor.formats.index.OffsetEntry */
static PyTypeObject *time_entry_type = NULL;   /* logdoctor.formats.index.TimeEntry */
static Py_ssize_t oe_off[2];                   /* offset, position */
static Py_ssize_t te_off[2];                   /* timestamp, offset */

static inline uint32_t
crc32c_of(const uint8_t *p, Py_ssize_t n)
{
    return crc32c_fn(0xffffffffu, p, (unsigned long)n) ^ 0xffffffffu;
}

static PyObject *
configure_crc32c(PyObject *self, PyObject *arg)
{
    /* crc32c_fn is only ever set to a function that passed the check below, never NULL in between: a walk
     * thread may be using it without the GIL while another thread configures the same function again
     * (checks.walk_ahead, then formats.native) */
    void *addr = arg == Py_None ? NULL : PyLong_AsVoidPtr(arg);
    if (addr == NULL && PyErr_Occurred())
        return NULL;
    crc32c_fn_t fn = (crc32c_fn_t)addr;
    /* the CRC-32C check value (RFC 3720 B.4 / the CRC catalogue) and an empty input */
    if (fn == NULL || (fn(0xffffffffu, (const unsigned char *)"123456789", 9) ^ 0xffffffffu) != 0xE3069283u ||
        (fn(0xffffffffu, (const unsigned char *)"", 0) ^ 0xffffffffu) != 0u) {
        crc32c_fn = NULL;
        Py_RETURN_FALSE;
    }
    crc32c_fn = fn;
    Py_RETURN_TRUE;
}

static PyObject *
configure_recovery(PyObject *self, PyObject *args)
{
    PyObject *oe, *te;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &oe, &PyType_Type, &te))
        return NULL;
    if (lookup_slot((PyTypeObject *)oe, "offset", &oe_off[0]) < 0 ||
        lookup_slot((PyTypeObject *)oe, "position", &oe_off[1]) < 0 ||
        lookup_slot((PyTypeObject *)te, "timestamp", &te_off[0]) < 0 ||
        lookup_slot((PyTypeObject *)te, "offset", &te_off[1]) < 0)
        return NULL;
    Py_INCREF(oe);
    Py_XSETREF(offset_entry_type, (PyTypeObject *)oe);
    Py_INCREF(te);
    Py_XSETREF(time_entry_type, (PyTypeObject *)te);
    Py_RETURN_NONE;
}

/* A two-slot entry object (OffsetEntry / TimeEntry) appended to list; 0 or -1 with an exception. */
static int
append_entry(PyObject *list, PyTypeObject *type, const Py_ssize_t *off, int64_t a, int64_t b)
{
    PyObject *o = type->tp_alloc(type, 0);
    if (o == NULL)
        return -1;
    PyObject *va = PyLong_FromLongLong(a);
    PyObject *vb = PyLong_FromLongLong(b);
    SET_SLOT(o, off[0], va);
    SET_SLOT(o, off[1], vb);
    int rc = (va == NULL || vb == NULL) ? -1 : PyList_Append(list, o);
    Py_DECREF(o);
    return rc;
}

/* What the GIL-free loop of recover_v2 collects, turned into Python objects once it has the GIL again:
 * (a, b) pairs that grow by doubling (PyMem_Raw*: callable without the GIL). */
typedef struct {
    int64_t a, b;
} pair64_t;

typedef struct {
    pair64_t *v;
    Py_ssize_t n, cap;
} pairs_t;

/* Room for one more pair: 0, or -1 when out of memory. */
static inline int
pairs_reserve(pairs_t *s)
{
    if (s->n < s->cap)
        return 0;
    Py_ssize_t cap = s->cap ? s->cap * 2 : 256;
    if ((size_t)cap > PY_SSIZE_T_MAX / sizeof(pair64_t))
        return -1;
    pair64_t *v = (pair64_t *)PyMem_RawRealloc(s->v, (size_t)cap * sizeof(pair64_t));
    if (v == NULL)
        return -1;
    s->v = v;
    s->cap = cap;
    return 0;
}

/* Appends (a, b) after pairs_reserve made room. */
static inline void
pairs_push(pairs_t *s, int64_t a, int64_t b)
{
    s->v[s->n].a = a;
    s->v[s->n].b = b;
    s->n++;
}

/* The producer ids with an open transaction (ProducerStateManager's currentTxnFirstOffset per producer):
 * an open-addressing set of int64s, so the loop needs no dict. Half full at most. */
typedef struct {
    int64_t *keys;
    uint8_t *used;
    size_t cap, n;
} pidset_t;

static inline size_t
pid_hash(int64_t k, size_t mask)
{
    uint64_t x = (uint64_t)k; /* splitmix64's finaliser */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return (size_t)(x ^ (x >> 31)) & mask;
}

static int
pidset_has(const pidset_t *s, int64_t k)
{
    if (s->n == 0)
        return 0;
    size_t mask = s->cap - 1;
    for (size_t i = pid_hash(k, mask); s->used[i]; i = (i + 1) & mask)
        if (s->keys[i] == k)
            return 1;
    return 0;
}

static int pidset_add(pidset_t *s, int64_t k);

static int
pidset_grow(pidset_t *s)
{
    size_t cap = s->cap ? s->cap * 2 : 16;
    pidset_t t = {(int64_t *)PyMem_RawCalloc(cap, sizeof(int64_t)), (uint8_t *)PyMem_RawCalloc(cap, 1), cap, 0};
    if (t.keys == NULL || t.used == NULL) {
        PyMem_RawFree(t.keys);
        PyMem_RawFree(t.used);
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++)
        if (s->used[i])
            pidset_add(&t, s->keys[i]); /* fits: t is at most a quarter full */
    PyMem_RawFree(s->keys);
    PyMem_RawFree(s->used);
    *s = t;
    return 0;
}

/* Room for one more key: 0, or -1 when out of memory. */
static inline int
pidset_reserve(pidset_t *s)
{
    return 2 * (s->n + 1) > s->cap ? pidset_grow(s) : 0;
}

/* Adds k (not already there); 0, or -1 when out of memory. */
static int
pidset_add(pidset_t *s, int64_t k)
{
    if (pidset_reserve(s) < 0)
        return -1;
    size_t mask = s->cap - 1, i = pid_hash(k, mask);
    while (s->used[i])
        i = (i + 1) & mask;
    s->used[i] = 1;
    s->keys[i] = k;
    s->n++;
    return 0;
}

static void
pidset_free(pidset_t *s)
{
    PyMem_RawFree(s->keys);
    PyMem_RawFree(s->used);
}

/* recover_v2(buf, pos, limit, base_offset, interval, valid_bytes, last_index_entry, max_ts,
 *            max_ts_offset, last_time_ts, has_entry, last_entry_offset, latest_epoch,
 *            current, ongoing, offsets, times, epochs[, crc_checked_until])
 *   -> (pos, valid_bytes, last_index_entry, max_ts, max_ts_offset, last_time_ts, batches, last_offset)
 * latest_epoch: the leader-epoch cache's latest epoch (-1 for none); interval >= -1.
 * crc_checked_until: a batch ending at or before this position had its CRC checked already (by
 * crc_check_v2, on other threads): it is not checked again. 0 (the default): every batch is checked.
 *
 * The walk itself runs without the GIL over the held buffer (threads rebuild several segments at
 * once): the producer ids of `current` are copied into a C set first, and what the walk decides (index
 * entries, leader epochs, transactions started) is collected in C arrays and applied to the Python
 * lists and dicts, in batch order, once it has the GIL again. */
static PyObject *
recover_v2(PyObject *self, PyObject *args)
{
    PyObject *bufobj, *current, *ongoing, *offsets, *times, *epochs;
    Py_ssize_t pos, limit, valid_bytes, last_index_entry;
    long long base_offset, interval, max_ts, max_ts_offset, last_time_ts, last_entry_offset, latest_epoch;
    Py_ssize_t crc_checked_until = 0;
    int has_entry;
    Py_buffer view;

    if (crc32c_fn == NULL || offset_entry_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure_crc32c/configure_recovery were not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OnnLLnnLLLpLLO!O!O!O!O!|n", &bufobj, &pos, &limit, &base_offset, &interval,
                          &valid_bytes, &last_index_entry, &max_ts, &max_ts_offset, &last_time_ts, &has_entry,
                          &last_entry_offset, &latest_epoch, &PyDict_Type, &current, &PyDict_Type, &ongoing,
                          &PyList_Type, &offsets, &PyList_Type, &times, &PyList_Type, &epochs,
                          &crc_checked_until))
        return NULL;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (limit > view.len)
        limit = view.len;
    /* valid_bytes grows by at most the buffer's length; valid_bytes - last_index_entry stays >= 0 */
    if (last_index_entry < 0 || valid_bytes < last_index_entry || valid_bytes > PY_SSIZE_T_MAX - view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "bad valid_bytes / last_index_entry");
        return NULL;
    }
    pidset_t open_pids = {NULL, NULL, 0, 0};
    pairs_t offs = {NULL, 0, 0}, tims = {NULL, 0, 0}, eps = {NULL, 0, 0}, txns = {NULL, 0, 0};
    PyObject *key, *value, *result = NULL;
    Py_ssize_t it = 0;
    while (PyDict_Next(current, &it, &key, &value)) {
        int overflow = 0;
        long long k = PyLong_Check(key) ? PyLong_AsLongLongAndOverflow(key, &overflow) : 0;
        if (k == -1 && PyErr_Occurred())
            goto done;
        /* a key that is no int64 equals no batch's producer id: it changes no decision */
        if (PyLong_Check(key) && !overflow && pidset_add(&open_pids, (int64_t)k) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    const uint8_t *p = (const uint8_t *)view.buf;
    Py_ssize_t count = 0;
    int64_t last_offset = 0;
    int nomem = 0;

    Py_BEGIN_ALLOW_THREADS
    while (pos >= 0 && limit - pos >= 61) {
        const uint8_t *b = p + pos;
        int32_t length = (int32_t)be32(b + 8);
        /* exactly the entries walk_v2 turns into batches: the rest is iter_batches' business */
        if (b[16] != 2 || length < 61 - 12 || (Py_ssize_t)length > limit - pos - 12)
            break;
        Py_ssize_t size = (Py_ssize_t)length + 12;
        /* ensureValid: CrcMismatchError (unless crc_check_v2 checked this batch already) */
        if (pos + size > crc_checked_until && crc32c_of(b + 21, size - 21) != be32(b + 17))
            break;
        int16_t attributes = (int16_t)(((uint16_t)b[21] << 8) | b[22]);
        int64_t base = (int64_t)be64(b);
        int64_t last = (int64_t)((uint64_t)base + (uint64_t)(int64_t)(int32_t)be32(b + 23)); /* wraps */
        int64_t pid = (int64_t)be64(b + 43);
        int txn_start = 0;
        if (pid >= 0) {
            if (attributes & 0x20) /* control batch: the marker record decides */
                break;
            int transactional = (attributes & 0x10) != 0;
            int in_current = pidset_has(&open_pids, pid);
            if (in_current && !transactional) /* InvalidTxnStateException */
                break;
            txn_start = transactional && !in_current;
        }
        /* LogSegmentOffsetOverflowException: last - base_offset outside 0..INT32_MAX */
        if (last < base_offset || (uint64_t)last - (uint64_t)base_offset > 0x7FFFFFFFu)
            break;
        int64_t batch_max_ts = (int64_t)be64(b + 35);
        int64_t new_max_ts = max_ts, new_max_ts_offset = max_ts_offset;
        if (batch_max_ts > max_ts) {
            new_max_ts = batch_max_ts;
            new_max_ts_offset = last;
        }
        int index = (long long)(valid_bytes - last_index_entry) > interval;
        if (index && has_entry && last <= last_entry_offset) /* offset index must grow */
            break;
        /* the batch is accepted: commit it (room first, so that running out of memory commits nothing) */
        int32_t epoch = (int32_t)be32(b + 12);
        int new_epoch = epoch >= 0 && (long long)epoch > latest_epoch;
        if ((index && (pairs_reserve(&offs) < 0 || pairs_reserve(&tims) < 0)) ||
            (new_epoch && pairs_reserve(&eps) < 0) ||
            (txn_start && (pairs_reserve(&txns) < 0 || pidset_reserve(&open_pids) < 0))) {
            nomem = 1;
            break;
        }
        if (index) {
            pairs_push(&offs, last, (int64_t)valid_bytes);
            if (new_max_ts > last_time_ts) { /* TimeIndex.maybeAppend */
                pairs_push(&tims, new_max_ts, new_max_ts_offset);
                last_time_ts = new_max_ts;
            }
            last_index_entry = valid_bytes;
            has_entry = 1;
            last_entry_offset = last;
        }
        max_ts = new_max_ts;
        max_ts_offset = new_max_ts_offset;
        valid_bytes += size;
        count++;
        last_offset = last;
        if (new_epoch) {
            pairs_push(&eps, epoch, base);
            latest_epoch = epoch;
        }
        if (txn_start) { /* a transaction starts at this batch's base offset */
            pairs_push(&txns, pid, base);
            pidset_add(&open_pids, pid); /* has room: reserved above */
        }
        pos += size;
    }
    Py_END_ALLOW_THREADS

    if (nomem) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < offs.n; i++)
        if (append_entry(offsets, offset_entry_type, oe_off, offs.v[i].a, offs.v[i].b) < 0)
            goto done;
    for (Py_ssize_t i = 0; i < tims.n; i++)
        if (append_entry(times, time_entry_type, te_off, tims.v[i].a, tims.v[i].b) < 0)
            goto done;
    for (Py_ssize_t i = 0; i < eps.n; i++) {
        PyObject *t = Py_BuildValue("(iL)", (int)eps.v[i].a, (long long)eps.v[i].b);
        int rc = t == NULL ? -1 : PyList_Append(epochs, t);
        Py_XDECREF(t);
        if (rc < 0)
            goto done;
    }
    for (Py_ssize_t i = 0; i < txns.n; i++) {
        PyObject *pid_obj = PyLong_FromLongLong(txns.v[i].a);
        PyObject *base_obj = PyLong_FromLongLong(txns.v[i].b);
        int rc = (pid_obj == NULL || base_obj == NULL || PyDict_SetItem(current, pid_obj, base_obj) < 0 ||
                  PyDict_SetItem(ongoing, base_obj, pid_obj) < 0)
                     ? -1
                     : 0;
        Py_XDECREF(pid_obj);
        Py_XDECREF(base_obj);
        if (rc < 0)
            goto done;
    }
    if (count == 0)
        result = Py_BuildValue("(nnnLLLnO)", pos, valid_bytes, last_index_entry, max_ts, max_ts_offset,
                               last_time_ts, count, Py_None);
    else
        result = Py_BuildValue("(nnnLLLnL)", pos, valid_bytes, last_index_entry, max_ts, max_ts_offset,
                               last_time_ts, count, (long long)last_offset);
done:
    pidset_free(&open_pids);
    PyMem_RawFree(offs.v);
    PyMem_RawFree(tims.v);
    PyMem_RawFree(eps.v);
    PyMem_RawFree(txns.v);
    PyBuffer_Release(&view);
    return result;
}

/* ------------------------------------------------------------------------------------------
 * scan_v2: the fast lane of checks.state.segment_walk.walk (the --deep walk of a segment), with the GIL
 * released.
 *
 * From pos, for as long as the entry there is a whole v2 batch (what walk_v2 accepts: magic 2, size
 * at least 61, inside limit) whose CRC-32C matches (with verify_crc) and whose base offset is above the
 * previous batch's last offset, do what the Python walk does for it: count it and its records
 * (max(0, recordCount)), keep the first batch's base and last offsets, the last offset (base +
 * lastOffsetDelta, Java's long arithmetic), the largest maxTimestamp (strictly larger wins, as
 * LogSegment.recover) with its batch's last offset, and write the batch's position and last offset into
 * out (native int64s: positions at out[0:max_batches], last offsets at out[max_batches:2 * max_batches]). Stops, without touching that entry, at anything else; the Python
 * walk deals with it (a CRC mismatch, an order violation, a torn or corrupt entry, v0/v1) and calls
 * back here for the rest. The loop touches no Python object: it runs without the GIL over the held
 * buffers, so threads walk several segments at once.
 *
 * scan_v2(buf, pos, limit, verify_crc, has_prev, prev_last, max_ts, max_ts_offset, out | None, max_batches)
 *   -> (pos, batches, records, first_base, first_last, last, max_ts, max_ts_offset)
 * (first_base, first_last, last: 0 when batches is 0)
 */
/* What scan_batches carries from one run to the next: the previous batch's last offset (have_prev: there
 * is one), the largest maxTimestamp so far with its batch's last offset. */
typedef struct {
    int have_prev;
    int64_t prev, mts, mts_off;
} scan_carry_t;

/* The loop of scan_v2 (see there) from pos over p[..limit), at most max_batches batches, writing each
 * batch's position and last offset to positions/lasts when they are not NULL. Returns the position it
 * stopped at; *count batches, *records their records, *first_base and *first_last the first one's offsets.
 * Touches no Python object (called without the GIL). */
static Py_ssize_t
scan_batches(const uint8_t *p, Py_ssize_t pos, Py_ssize_t limit, int verify_crc, Py_ssize_t max_batches,
             scan_carry_t *c, int64_t *positions, int64_t *lasts, Py_ssize_t *count, long long *records,
             int64_t *first_base, int64_t *first_last)
{
    Py_ssize_t k = 0;
    long long recs = 0;
    while (k < max_batches && limit - pos >= 61) {
        const uint8_t *b = p + pos;
        int32_t length = (int32_t)be32(b + 8);
        if (b[16] != 2 || length < 61 - 12 || (Py_ssize_t)length > limit - pos - 12)
            break;
        Py_ssize_t size = (Py_ssize_t)length + 12;
        if (verify_crc && crc32c_of(b + 21, size - 21) != be32(b + 17))
            break;
        int64_t base = (int64_t)be64(b);
        int64_t lastoff = (int64_t)((uint64_t)base + (uint64_t)(int64_t)(int32_t)be32(b + 23));
        if (c->have_prev && base <= c->prev)
            break;
        int64_t bmax = (int64_t)be64(b + 35);
        int32_t rc = (int32_t)be32(b + 57);
        if (k == 0) {
            *first_base = base;
            *first_last = lastoff;
        }
        recs += rc > 0 ? rc : 0;
        if (bmax > c->mts) {
            c->mts = bmax;
            c->mts_off = lastoff;
        }
        if (positions != NULL) {
            positions[k] = (int64_t)pos;
            lasts[k] = lastoff;
        }
        c->prev = lastoff;
        c->have_prev = 1;
        k++;
        pos += size;
    }
    *count = k;
    *records = recs;
    return pos;
}

static PyObject *
scan_v2(PyObject *self, PyObject *args)
{
    PyObject *bufobj, *outobj;
    Py_ssize_t pos, limit, max_batches;
    int verify_crc, has_prev;
    long long prev_last, max_ts, max_ts_offset;
    Py_buffer view, out;

    if (!PyArg_ParseTuple(args, "OnnppLLLOn", &bufobj, &pos, &limit, &verify_crc, &has_prev, &prev_last, &max_ts,
                          &max_ts_offset, &outobj, &max_batches))
        return NULL;
    if (verify_crc && crc32c_fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure_crc32c was not called");
        return NULL;
    }
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int64_t *slots = NULL;
    out.obj = NULL;
    if (outobj != Py_None) {
        if (PyObject_GetBuffer(outobj, &out, PyBUF_WRITABLE) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        if (out.len / 16 < max_batches) {
            PyBuffer_Release(&out);
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "scan_v2: out holds fewer than 2 * max_batches int64s");
            return NULL;
        }
        slots = (int64_t *)out.buf;
    }
    if (limit > view.len)
        limit = view.len;
    if (pos < 0)
        max_batches = 0;
    Py_ssize_t count = 0;
    long long records = 0;
    int64_t first_base = 0, first_last = 0;
    scan_carry_t c = {has_prev, (int64_t)prev_last, (int64_t)max_ts, (int64_t)max_ts_offset};

    Py_BEGIN_ALLOW_THREADS
    pos = scan_batches((const uint8_t *)view.buf, pos, limit, verify_crc, max_batches, &c, slots,
                       slots == NULL ? NULL : slots + max_batches, &count, &records, &first_base, &first_last);
    Py_END_ALLOW_THREADS

    if (out.obj != NULL)
        PyBuffer_Release(&out);
    PyBuffer_Release(&view);
    int64_t last = count ? c.prev : 0;
    return Py_BuildValue("(nnLLLLLL)", pos, count, records, (long long)first_base, (long long)first_last,
                         (long long)last, (long long)c.mts, (long long)c.mts_off);
}

/* The arguments of the functions over framed batches (buf, positions, first, end): both buffers, with
 * first..end checked against the positions (native int64, scan_v2's out). 0, or -1 with an exception set
 * and nothing held. */
static int
get_framed(PyObject *bufobj, PyObject *posobj, Py_ssize_t first, Py_ssize_t end, const char *name,
           Py_buffer *view, Py_buffer *pview)
{
    if (PyObject_GetBuffer(bufobj, view, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(posobj, pview, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(view);
        return -1;
    }
    if (first < 0 || end < first || end > pview->len / 8) {
        PyBuffer_Release(pview);
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s: first/end outside the positions", name);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * crc_check_v2: the CRC-32C of the v2 batches at the given positions, without the GIL, so that the
 * batches of one big segment are checked on several threads at once (checks.state.fast_lane: scan_v2
 * frames the batches without CRCs, then threads check slices of them; any mismatch sends the walk back to
 * the serial scan_v2, which finds it as before).
 *
 * crc_check_v2(buf, positions, first, end) -> the index (first <= i < end) of the first batch whose
 * stored CRC does not match, or end when all match. positions: native int64 batch start positions
 * (scan_v2's out); a position whose batch is not whole inside buf counts as a mismatch.
 */
static PyObject *
crc_check_v2(PyObject *self, PyObject *args)
{
    PyObject *bufobj, *posobj;
    Py_ssize_t first, end;
    Py_buffer view, pview;

    if (!PyArg_ParseTuple(args, "OOnn", &bufobj, &posobj, &first, &end))
        return NULL;
    if (crc32c_fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure_crc32c was not called");
        return NULL;
    }
    if (get_framed(bufobj, posobj, first, end, "crc_check_v2", &view, &pview) < 0)
        return NULL;
    const uint8_t *p = (const uint8_t *)view.buf;
    const int64_t *positions = (const int64_t *)pview.buf;
    Py_ssize_t n = view.len, i;

    Py_BEGIN_ALLOW_THREADS
    for (i = first; i < end; i++) {
        int64_t pos = positions[i];
        if (pos < 0 || pos > (int64_t)n - 61)
            break;
        const uint8_t *b = p + pos;
        int32_t length = (int32_t)be32(b + 8);
        if (length < 61 - 12 || (int64_t)length > (int64_t)n - pos - 12)
            break;
        if (crc32c_of(b + 21, (Py_ssize_t)length + 12 - 21) != be32(b + 17))
            break;
    }
    Py_END_ALLOW_THREADS

    PyBuffer_Release(&pview);
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(i);
}

/* ------------------------------------------------------------------------------------------
 * check_records_v2: whether every record of framed v2 batches decodes, without the GIL and without
 * building a Python object (the --deep scan's record check: checks.state.file_records.walk_file).
 *
 * For the batches at positions[first:end] (native int64 start positions in buf: scan_v2's out), each
 * uncompressed one is read exactly as batch_records reads it (a record count of 0 with no records section:
 * nothing read, as DefaultRecordBatch.iterator; a count of 0 with records, or one that disagrees with
 * lastOffsetDelta, or is negative: left to the Python path, RecordBatchV2.check_count; count records through parse_record; then
 * no bytes left: E_TRAILING). Stops at the first batch it leaves to the Python path (not a whole v2
 * batch inside buf, or compressed with records) or whose records fail.
 *
 * check_records_v2(buf, positions, first, end) -> (i, code, errpos, index): i == end and code 0 when
 * every batch decodes; code 0 and i < end: batch i is for the Python path; else batch i's records fail
 * with code (the RecordError codes) at errpos (a position in buf), in record index.
 */
/* The loop of check_records_v2 (see there) over the batches at positions[first:end] of p[0..n): the
 * index it stopped at, with *code (E_OK when it stopped at end or at a batch for the Python path),
 * *errpos and *index. Touches no Python object (called without the GIL). */
static Py_ssize_t
check_records_run(const uint8_t *p, Py_ssize_t n, const int64_t *positions, Py_ssize_t first, Py_ssize_t end,
                  int *code_out, Py_ssize_t *errpos, Py_ssize_t *index)
{
    Py_ssize_t i;
    int code = E_OK;
    for (i = first; i < end; i++) {
        int64_t start;
        memcpy(&start, positions + i, 8); /* the positions buffer need not be aligned */
        if (start < 0 || start > (int64_t)n - 61)
            break;
        const uint8_t *b = p + start;
        int32_t length = (int32_t)be32(b + 8);
        if (b[16] != 2 || length < 61 - 12 || (int64_t)length > (int64_t)n - start - 12)
            break;
        int32_t count = (int32_t)be32(b + 57);
        int32_t delta = (int32_t)be32(b + 23);
        /* a partition leader epoch below -1 (NO_PARTITION_LEADER_EPOCH): RecordBatchV2.check_count names it */
        if ((int32_t)be32(b + 12) < -1)
            break;
        if (count == 0 && length == 61 - 12)
            continue;
        /* a count that is negative, disagrees with the offset range, or 0 with records behind it: the
         * Python path's batch validation (RecordBatchV2.check_count) names it */
        if (count <= 0 || delta < 0 || (int64_t)count > (int64_t)delta + 1)
            break;
        if (b[22] & 0x07)
            break;
        Py_ssize_t pos = (Py_ssize_t)start + 61, rend = (Py_ssize_t)start + 12 + (Py_ssize_t)length;
        for (int32_t k = 0; k < count; k++) {
            rec_t rec;
            code = parse_record(p, &pos, rend, &rec, errpos);
            if (code) {
                *index = k;
                break;
            }
        }
        if (!code && pos != rend) {
            code = E_TRAILING;
            *errpos = pos;
            *index = count;
        }
        if (code)
            break;
    }
    *code_out = code;
    return i;
}

static PyObject *
check_records_v2(PyObject *self, PyObject *args)
{
    PyObject *bufobj, *posobj;
    Py_ssize_t first, end;
    Py_buffer view, pview;

    if (!PyArg_ParseTuple(args, "OOnn", &bufobj, &posobj, &first, &end))
        return NULL;
    if (get_framed(bufobj, posobj, first, end, "check_records_v2", &view, &pview) < 0)
        return NULL;
    int code = E_OK;
    Py_ssize_t i, errpos = 0, index = 0;

    Py_BEGIN_ALLOW_THREADS
    i = check_records_run((const uint8_t *)view.buf, view.len, (const int64_t *)pview.buf, first, end, &code,
                          &errpos, &index);
    Py_END_ALLOW_THREADS

    PyBuffer_Release(&pview);
    PyBuffer_Release(&view);
    return Py_BuildValue("(nInn)", i, (unsigned int)code, errpos, index);
}

/* ------------------------------------------------------------------------------------------
 * walk_read_v2: the walk of one big .log read a chunk at a time into buf (checks.walk_ahead.read_walk:
 * scan_batches over each chunk, with the records of every batch checked by check_records_run when
 * with_positions, the --deep walk), the whole file in one call without the GIL: a `scan --deep`'s early
 * walks run on their threads while the main thread imports the scan's modules, never waiting for it.
 *
 * walk_read_v2(fd, size, buf, verify_crc, with_positions, max_batch, each=None, each_every=0)
 *   -> None | (batches, records, first_base, first_last, last, max_ts, max_ts_offset, positions,
 *              last_offsets, aside)
 * fd: open for reading, size: its size (bytes read: [0, size)), buf: a writable buffer of at least 61
 * bytes, the chunk. With with_positions: positions, last_offsets are the file position and last offset
 * of every batch (native int64s, as bytes), aside the file positions of the batches check_records_run
 * leaves to the Python path (compressed ones with records), whose records the caller checks; without,
 * all three are empty. None when the file is not whole v2 batches with good CRCs (verify_crc) and
 * growing offsets to its end, or a record does not decode (with_positions), or a batch is bigger than
 * max_batch bytes, or the file is shorter than size; OSError for a read error. A batch bigger than buf
 * (up to max_batch) is read into a buffer of its own, used for the rest of the file.
 * each: None, or a callable each(done, read) called with the GIL after a chunk is walked, once the walk has
 * gone each_every bytes past the last call (and after the last chunk): done, the file position the walk has
 * finished with (it reads on from there), read, the bytes read so far (the read discipline of
 * checks.walk_ahead: the page cache left as found, the read rate paced). Rarely: every call waits for the
 * GIL, which a thread importing or scanning holds. An exception it raises stops the walk and is raised.
 */
typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
} i64s_t;

static int
i64s_reserve(i64s_t *a, Py_ssize_t more)
{
    if (a->n + more <= a->cap)
        return 0;
    Py_ssize_t cap = a->cap ? a->cap : 1024;
    while (cap < a->n + more)
        cap *= 2;
    int64_t *v = PyMem_RawRealloc(a->v, (size_t)cap * sizeof(int64_t));
    if (v == NULL)
        return -1;
    a->v = v;
    a->cap = cap;
    return 0;
}

static PyObject *
i64s_bytes(const i64s_t *a)
{
    return PyBytes_FromStringAndSize((const char *)a->v, a->n * (Py_ssize_t)sizeof(int64_t));
}

static PyObject *
walk_read_v2(PyObject *self, PyObject *args)
{
    int fd, verify_crc, with_positions;
    Py_ssize_t n, max_batch;
    PyObject *bufobj, *each = Py_None;
    Py_ssize_t each_every = 0;
    Py_buffer view;

    if (!PyArg_ParseTuple(args, "inOppn|On", &fd, &n, &bufobj, &verify_crc, &with_positions, &max_batch, &each,
                          &each_every))
        return NULL;
    if (each != Py_None && !PyCallable_Check(each)) {
        PyErr_SetString(PyExc_TypeError, "walk_read_v2: each must be callable or None");
        return NULL;
    }
    if (verify_crc && crc32c_fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure_crc32c was not called");
        return NULL;
    }
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_WRITABLE) < 0)
        return NULL;
    if (view.len < 61 || n < 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "walk_read_v2: a chunk of at least 61 bytes and a size >= 0");
        return NULL;
    }
    uint8_t *buf = (uint8_t *)view.buf, *big = NULL; /* big: a chunk of our own for a batch bigger than buf */
    Py_ssize_t cap = view.len;
    i64s_t positions = {NULL, 0, 0}, lasts = {NULL, 0, 0}, aside = {NULL, 0, 0};
    scan_carry_t c = {0, 0, -1, -1};
    long long records = 0;
    int64_t first_base = 0, first_last = 0;
    int taken = 1, nomem = 0, read_errno = 0, failed = 0; /* failed: each raised */
    Py_ssize_t at = 0, batches = 0; /* at: the file position of buf[0] */
    Py_ssize_t each_at = 0;         /* at when each was last called */
    long long read_total = 0;

    Py_BEGIN_ALLOW_THREADS
    while (taken && at < n) {
        Py_ssize_t want = n - at < cap ? n - at : cap, got = 0;
        while (got < want) {
            ssize_t k = pread(fd, buf + got, (size_t)(want - got), (off_t)(at + got));
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) { /* a read error, or shorter than size: changed since */
                read_errno = k < 0 ? errno : 0;
                taken = 0;
                break;
            }
            got += k;
        }
        read_total += got;
        if (!taken)
            break;
        Py_ssize_t pos = 0;
        while (pos < want) {
            Py_ssize_t room = with_positions ? (want - pos) / 61 + 1 : PY_SSIZE_T_MAX, nb = 0, first = positions.n;
            if (with_positions && (i64s_reserve(&positions, room) < 0 || i64s_reserve(&lasts, room) < 0)) {
                nomem = 1;
                break;
            }
            long long recs = 0;
            int64_t fb = 0, fl = 0;
            Py_ssize_t pos2 = scan_batches(buf, pos, want, verify_crc, room, &c,
                                           with_positions ? positions.v + first : NULL,
                                           with_positions ? lasts.v + first : NULL, &nb, &recs, &fb, &fl);
            if (nb == 0)
                break;
            if (batches == 0) {
                first_base = fb;
                first_last = fl;
            }
            batches += nb;
            records += recs;
            pos = pos2;
            if (!with_positions)
                continue;
            positions.n += nb;
            lasts.n += nb;
            /* the records of this run's batches, at their positions in buf */
            Py_ssize_t i = first;
            while (i < positions.n) {
                int code = E_OK;
                Py_ssize_t errpos = 0, index = 0;
                i = check_records_run(buf, want, positions.v, i, positions.n, &code, &errpos, &index);
                if (code) { /* a record that does not decode: the scan walks the mapped file and words it */
                    taken = 0;
                    break;
                }
                if (i < positions.n) { /* for the Python path */
                    if (i64s_reserve(&aside, 1) < 0) {
                        nomem = 1;
                        break;
                    }
                    aside.v[aside.n++] = at + positions.v[i];
                    i++;
                }
            }
            if (!taken || nomem)
                break;
            for (i = first; i < positions.n; i++)
                positions.v[i] += at;
        }
        if (nomem || !taken)
            break;
        if (pos == want)
            at += want;
        else if (pos > 0 && at + want < n)
            at += pos; /* the next chunk starts with the batch this one holds only part of */
        else if (pos == 0 && at + want < n && buf[16] == 2 && (int32_t)be32(buf + 8) >= 61 - 12 &&
                 (Py_ssize_t)be32(buf + 8) + 12 > cap && (Py_ssize_t)be32(buf + 8) + 12 <= n - at &&
                 (Py_ssize_t)be32(buf + 8) + 12 <= max_batch) {
            /* a v2 batch bigger than the chunk (producers of 1 MiB batches, message.max.bytes raised):
             * read again from here into a chunk of our own that holds it */
            cap = (Py_ssize_t)be32(buf + 8) + 12;
            uint8_t *grown = PyMem_RawRealloc(big, (size_t)cap);
            if (grown == NULL) {
                nomem = 1;
                break;
            }
            buf = big = grown;
        } else
            taken = 0; /* not a whole batch here (damage, v0/v1, bigger than max_batch), or the file's end */
        if (taken && each != Py_None && (at - each_at >= each_every || at >= n)) {
            each_at = at;
            Py_BLOCK_THREADS
            PyObject *r = PyObject_CallFunction(each, "nL", at, read_total);
            failed = r == NULL;
            Py_XDECREF(r);
            Py_UNBLOCK_THREADS
            if (failed)
                break;
        }
    }
    Py_END_ALLOW_THREADS

    PyMem_RawFree(big);
    PyBuffer_Release(&view);
    PyObject *result = NULL;
    if (failed)
        ; /* each's exception is set */
    else if (nomem)
        PyErr_NoMemory();
    else if (read_errno) {
        errno = read_errno;
        PyErr_SetFromErrno(PyExc_OSError);
    } else if (!taken || batches == 0)
        result = Py_NewRef(Py_None);
    else {
        PyObject *pb = i64s_bytes(&positions), *lb = i64s_bytes(&lasts), *ab = i64s_bytes(&aside);
        if (pb != NULL && lb != NULL && ab != NULL)
            result = Py_BuildValue("(nLLLLLLOOO)", batches, records, (long long)first_base,
                                   (long long)first_last, (long long)c.prev, (long long)c.mts,
                                   (long long)c.mts_off, pb, lb, ab);
        Py_XDECREF(pb);
        Py_XDECREF(lb);
        Py_XDECREF(ab);
    }
    PyMem_RawFree(positions.v);
    PyMem_RawFree(lasts.v);
    PyMem_RawFree(aside.v);
    return result;
}

/* ------------------------------------------------------------------------------------------
 * The checks of a .index (8-byte entries: relative offset, position) or .timeindex (12 bytes:
 * timestamp, relative offset) over the whole buffer, without numpy: the C twins of
 * formats.index.real_entry_count, checks.indexes' entry checks (_OFFSET_CHECKS, _TIME_CHECKS) and
 * checks.deep's cross-check against the walk (_offset_mismatch, _time_mismatch), which stay the
 * pure-Python twins (LOGDOCTOR_PURE_PYTHON, and the oracle of tests/checks/test_index_c.py).
 * Entries are compared with the one before, never subtracted from it: a difference of two int64
 * timestamps can wrap (-2**63, then 2**63 - 1, rises; the reverse falls).
 */

static inline int64_t
idx_rel(const uint8_t *p, Py_ssize_t i, Py_ssize_t size)
{
    return (int32_t)be32(p + i * size + (size == 8 ? 0 : 8));
}

/* the position (.index) or timestamp (.timeindex) of entry i */
static inline int64_t
idx_val(const uint8_t *p, Py_ssize_t i, Py_ssize_t size)
{
    return size == 8 ? (int64_t)(int32_t)be32(p + i * 8 + 4) : (int64_t)be64(p + i * 12);
}

static int
idx_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t size)
{
    if (size != 8 && size != 12) {
        PyErr_SetString(PyExc_ValueError, "entry size must be 8 or 12");
        return -1;
    }
    return PyObject_GetBuffer(obj, view, PyBUF_SIMPLE);
}

/* index_real_entries(data, entry_size) -> real entries (formats.index.real_entry_count) */
static PyObject *
index_real_entries(PyObject *self, PyObject *args)
{
    PyObject *obj;
    Py_ssize_t size;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "On", &obj, &size) || idx_buffer(obj, &view, size) < 0)
        return NULL;
    const uint8_t *p = (const uint8_t *)view.buf;
    Py_ssize_t n = view.len / size, real = n;
    if (n == 0 || (idx_rel(p, 0, size) == 0 && idx_val(p, 0, size) == 0))
        real = 0;
    else
        for (Py_ssize_t i = 1; i < n; i++)
            if (idx_rel(p, i, size) == 0) {
                real = i;
                break;
            }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(real);
}

/* index_entry_checks(data, entry_size, real, base, log_size, has_next, next_base) -> None or
 * (check, entry): the first of the kind's checks that finds a bad entry among the first ``real``,
 * and its first bad entry, as checks.indexes._OFFSET_CHECKS / _TIME_CHECKS (in that order). */
static PyObject *
index_entry_checks(PyObject *self, PyObject *args)
{
    PyObject *obj;
    Py_ssize_t size, real;
    long long base, log_size, next_base;
    int has_next;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OnnLLpL", &obj, &size, &real, &base, &log_size, &has_next, &next_base)
        || idx_buffer(obj, &view, size) < 0)
        return NULL;
    if (real < 0 || real > view.len / size) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "real entries out of range");
        return NULL;
    }
    const uint8_t *p = (const uint8_t *)view.buf;
    Py_ssize_t check = -1, bad = -1;
    for (int c = 0; c < 4 && bad < 0; c++) {
        for (Py_ssize_t i = 0; i < real; i++) {
            int64_t rel = idx_rel(p, i, size), val = idx_val(p, i, size);
            int is_bad;
            if (c == 0)
                is_bad = size == 8 ? rel <= 0 : rel < 0;
            else if (c == 1) {
                if (i == 0)
                    continue;
                int64_t prel = idx_rel(p, i - 1, size), pval = idx_val(p, i - 1, size);
                is_bad = size == 8 ? (rel <= prel || val <= pval) : (val < pval || rel < prel);
            } else if (c == 2 && size == 8)
                is_bad = val < 0 || val >= log_size;
            else if ((c == 2 && size == 12) || (c == 3 && size == 8)) {
                if (!has_next)
                    break;
                is_bad = base + rel >= next_base;
            } else
                break;
            if (is_bad) {
                check = c, bad = i;
                break;
            }
        }
    }
    PyBuffer_Release(&view);
    if (bad < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(nn)", check, bad);
}

/* index_cross_check(data, entry_size, real, base, positions, lasts, max_timestamp) -> None or the
 * first of the ``real`` entries that does not match the walk's batches (positions, last offsets:
 * int64 buffers, positions ascending, at least one batch), as checks.index_cross_check._offset_mismatch:
 * (entry, not a batch start, position, offset, the last offset of the batch at or after it), or
 * _time_mismatch: (entry, offset, timestamp). */
static PyObject *
index_cross_check(PyObject *self, PyObject *args)
{
    PyObject *obj, *pobj, *lobj;
    Py_ssize_t size, real;
    long long base, max_ts;
    Py_buffer view, pview, lview;
    if (!PyArg_ParseTuple(args, "OnnLOOL", &obj, &size, &real, &base, &pobj, &lobj, &max_ts)
        || idx_buffer(obj, &view, size) < 0)
        return NULL;
    if (PyObject_GetBuffer(pobj, &pview, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (PyObject_GetBuffer(lobj, &lview, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&pview);
        PyBuffer_Release(&view);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t nb = pview.len / 8;
    if (real < 0 || real > view.len / size || nb == 0 || lview.len / 8 != nb) {
        PyErr_SetString(PyExc_ValueError, "index_cross_check: bad sizes");
        goto done;
    }
    const uint8_t *p = (const uint8_t *)view.buf;
    const int64_t *pos = (const int64_t *)pview.buf, *lasts = (const int64_t *)lview.buf;
    int64_t last_offset = lasts[nb - 1];
    if (size == 12) {
        int64_t limit = max_ts > -1 ? max_ts : -1;
        if (max_ts >= 0)
            for (Py_ssize_t j = 0; j < real; j++) {
                int64_t off = base + idx_rel(p, j, 12), ts = idx_val(p, j, 12);
                if (off > last_offset || ts > limit) {
                    result = Py_BuildValue("(nLL)", j, (long long)off, (long long)ts);
                    goto done;
                }
            }
    } else {
        Py_ssize_t prev_k = 0;
        int64_t prev_at = INT64_MIN;
        for (Py_ssize_t j = 0; j < real; j++) {
            int64_t off = base + idx_rel(p, j, 8), at = idx_val(p, j, 8);
            /* the first batch position >= at (searchsorted, left): entries grow, so from the previous
             * entry's batch on, in growing steps, then halving (the same answer, the usual case in O(1)) */
            Py_ssize_t lo = 0, hi = nb;
            if (at >= prev_at) {
                Py_ssize_t step = 1;
                lo = prev_k;
                while (lo + step < nb && pos[lo + step] < at) {
                    lo += step;
                    step *= 2;
                }
                hi = lo + step < nb ? lo + step + 1 : nb;
            }
            while (lo < hi) {
                Py_ssize_t mid = lo + (hi - lo) / 2;
                if (pos[mid] < at)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            prev_k = lo < nb ? lo : nb - 1;
            prev_at = at;
            int not_start = lo >= nb || pos[lo] != at;
            int64_t batch_last = lasts[lo < nb ? lo : nb - 1];
            /* sound in every era (checks.index_cross_check): after the previous batch's end (an entry
             * holds its batch's first offset up to Kafka 1.1, its last since 2.0), within the segment */
            int64_t prev_last = lo > 0 ? lasts[(lo < nb ? lo : nb) - 1] : (int64_t)base - 1;
            if (not_start || off <= prev_last || off > last_offset) {
                result = Py_BuildValue("(niLLL)", j, not_start, (long long)at, (long long)off,
                                       (long long)batch_last);
                goto done;
            }
        }
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&lview);
    PyBuffer_Release(&pview);
    PyBuffer_Release(&view);
    return result;
}

/* ------------------------------------------------------------------------------------------
 * populate_read: fault in the pages of a buffer (a big .log mapped without MAP_POPULATE) without the
 * GIL, so that `repair` maps its segments on a thread while the interpreter imports its modules
 * (checks.state.early_mappings.map_early: Python's mmap.mmap() holds the GIL during a MAP_POPULATE
 * mapping, and the imports waited for it). It only reads: no byte of the buffer changes.
 *
 * advise (the default): madvise(MADV_POPULATE_READ) (Linux >= 5.14) of the page-aligned range that holds
 * the buffer; where the kernel refuses it (EINVAL: an older kernel or a mapping it does not populate,
 * ENOSYS), one byte of each page of the buffer is read instead. Any other error of madvise (EFAULT: a
 * page past the end of a file truncated since it was mapped, which a read would turn into SIGBUS; ENOMEM,
 * EINTR, ...) is raised as OSError, nothing read.
 * advise=False: one byte of each page read, at once. What checks.state.early_mappings.map_early uses: the
 * kernel populates a range (madvise, and MAP_POPULATE alike) holding the process's mmap lock, which a
 * reader may take again ahead of a waiting writer for up to a scheduler tick (the rwsem's handoff timeout),
 * so every mmap/munmap of another thread (the interpreter's allocator, dlopen: the imports) waited ~4 ms,
 * even with the range advised 64 KiB at a time: the imports of `repair` took 190 ms instead of 85 (the CPU
 * time the same). A read faults its pages under the mapping's own lock (per-VMA locks) and leaves the other
 * thread alone (~50% more CPU than madvise, on the idle core).
 *
 * populate_read(buf, advise=True, refused=0) -> True when madvise populated it, False when the pages were
 * read. refused: an errno taken as madvise's answer without calling it (tests: the fallback).
 */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* linux/mman.h since 5.14 */
#endif

static PyObject *
populate_read(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"buf", "advise", "refused", NULL};
    PyObject *bufobj;
    int advise = 1, refused = 0;
    Py_buffer view;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pi", keywords, &bufobj, &advise, &refused))
        return NULL;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t n = view.len;
    int err = 0, advised = 0;
    if (n > 0) {
        long page = sysconf(_SC_PAGESIZE);
        if (page <= 0)
            page = 4096;
        Py_BEGIN_ALLOW_THREADS
        if (!advise) {
            err = EINVAL;
        } else if (refused) {
            err = refused;
        } else {
#if defined(__linux__)
            uintptr_t start = (uintptr_t)view.buf & ~((uintptr_t)page - 1);
            uintptr_t end = ((uintptr_t)view.buf + (uintptr_t)n + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
            err = madvise((void *)start, (size_t)(end - start), MADV_POPULATE_READ) == 0 ? 0 : errno;
#else
            err = ENOSYS;
#endif
        }
        if (err == 0) {
            advised = 1;
        } else if (err == EINVAL || err == ENOSYS) {
            /* the first byte of the buffer, then the first byte of each later page it covers */
            uint8_t sink = 0;
            uintptr_t at = (uintptr_t)view.buf;
            uintptr_t stop = at + (uintptr_t)n;
            sink ^= *(const volatile uint8_t *)at;
            for (at = (at & ~((uintptr_t)page - 1)) + (uintptr_t)page; at < stop; at += (uintptr_t)page)
                sink ^= *(const volatile uint8_t *)at;
            (void)sink;
            err = 0;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    if (err != 0) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return PyBool_FromLong(advised);
}

/* list_folders' results, gathered without the GIL: each folder's errno or stat, and its entries' names
 * (NUL-terminated, one after another in ``names``). */
typedef struct {
    int err;
    unsigned long mode, uid, gid;
    size_t first, count; /* its names: ``count`` strings from byte ``first`` of ``names`` */
} folder_t;

typedef struct {
    char *buf;
    size_t len, cap;
} names_t;

static int
names_add(names_t *n, const char *s, size_t len)
{
    if (n->len + len + 1 > n->cap) {
        size_t cap = n->cap ? n->cap : 65536;
        while (n->len + len + 1 > cap)
            cap *= 2;
        char *grown = realloc(n->buf, cap);
        if (grown == NULL)
            return -1;
        n->buf = grown;
        n->cap = cap;
    }
    memcpy(n->buf + n->len, s, len + 1);
    n->len += len + 1;
    return 0;
}

/* The names of the entries of the open folder ``fd`` added to ``n`` ("." and ".." left out): 0, an errno
 * (the read failed), or -1 (out of memory). On Linux getdents64 straight into one buffer (an empty folder: two calls;
 * opendir's DIR would add an fstat and a fcntl per folder). Called without the GIL. */
static int
read_entries(int fd, names_t *n, size_t *count)
{
#if defined(__linux__)
    char buf[32768];
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (got < 0)
            return errno;
        if (got == 0)
            return 0;
        for (long at = 0; at < got;) {
            struct linux_dirent64 {
                uint64_t d_ino;
                int64_t d_off;
                unsigned short d_reclen;
                unsigned char d_type;
                char d_name[];
            } *d = (struct linux_dirent64 *)(buf + at);
            at += d->d_reclen;
            const char *dn = d->d_name;
            if (dn[0] == '.' && (dn[1] == '\0' || (dn[1] == '.' && dn[2] == '\0')))
                continue;
            if (names_add(n, dn, strlen(dn)) < 0)
                return -1;
            (*count)++;
        }
    }
#else
    int dup_fd = dup(fd);
    if (dup_fd < 0)
        return errno;
    DIR *dir = fdopendir(dup_fd);
    if (dir == NULL) {
        int err = errno;
        close(dup_fd);
        return err;
    }
    int err = 0;
    for (;;) {
        errno = 0;
        struct dirent *d = readdir(dir);
        if (d == NULL) {
            err = errno;
            break;
        }
        const char *dn = d->d_name;
        if (dn[0] == '.' && (dn[1] == '\0' || (dn[1] == '.' && dn[2] == '\0')))
            continue;
        if (names_add(n, dn, strlen(dn)) < 0) {
            err = -1;
            break;
        }
        (*count)++;
    }
    closedir(dir);
    return err;
#endif
}

/*
 * list_folders(root, names) -> [(st_mode, st_uid, st_gid, [entry names]) | errno, ...]: each folder
 * root/name opened (symlinks followed, as os.scandir and os.stat do), fstat'ed and read to its end, for a
 * scan of tens of thousands of partition folders (checks.scanner). Every system call is made in one pass
 * without the GIL (a thread lists while the scan's Python goes on), the results built after it. An
 * entry's name is decoded as os.listdir decodes it (the file system encoding, surrogateescape); "." and
 * ".." are left out; the order is readdir's. A folder that cannot be opened, stat'ed or read gives its
 * errno instead. The root that cannot be opened raises OSError. formats/folders.py has the pure-Python
 * twin (os.open, os.fstat, os.listdir).
 */
static PyObject *
list_folders(PyObject *self, PyObject *args)
{
    PyObject *rootobj, *rootbytes = NULL, *names, *seq = NULL, *encoded = NULL, *out = NULL;
    folder_t *folders = NULL;
    const char **paths = NULL;
    names_t found = {NULL, 0, 0};
    int rootfd = -1, root_err = 0, nomem = 0;

    if (!PyArg_ParseTuple(args, "OO", &rootobj, &names))
        return NULL;
    if (!PyUnicode_FSConverter(rootobj, &rootbytes))
        return NULL;
    seq = PySequence_Fast(names, "names must be a sequence");
    if (seq == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    encoded = PyList_New(n);
    folders = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *folders);
    paths = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *paths);
    if (encoded == NULL || folders == NULL || paths == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = NULL;
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &b))
            goto done;
        PyList_SET_ITEM(encoded, i, b);
        paths[i] = PyBytes_AS_STRING(b);
    }
    const char *root = PyBytes_AS_STRING(rootbytes);
    Py_BEGIN_ALLOW_THREADS
    rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        root_err = errno;
    for (Py_ssize_t i = 0; rootfd >= 0 && i < n && !nomem; i++) {
        folder_t *f = &folders[i];
        struct stat st;
        int fd = openat(rootfd, paths[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            f->err = errno;
            continue;
        }
        if (fstat(fd, &st) != 0) {
            f->err = errno;
        } else {
            f->mode = (unsigned long)st.st_mode;
            f->uid = (unsigned long)st.st_uid;
            f->gid = (unsigned long)st.st_gid;
            f->first = found.len;
            f->err = read_entries(fd, &found, &f->count);
            if (f->err < 0)
                nomem = 1;
        }
        close(fd);
    }
    if (rootfd >= 0)
        close(rootfd);
    Py_END_ALLOW_THREADS
    if (root_err != 0) {
        errno = root_err;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, rootobj);
        goto done;
    }
    if (nomem) {
        PyErr_NoMemory();
        goto done;
    }
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        folder_t *f = &folders[i];
        PyObject *item;
        if (f->err != 0) {
            item = PyLong_FromLong(f->err);
        } else {
            PyObject *entries = PyList_New((Py_ssize_t)f->count);
            if (entries == NULL)
                goto fail;
            const char *at = found.buf + f->first;
            for (size_t k = 0; k < f->count; k++) {
                size_t len = strlen(at);
                PyObject *name = PyUnicode_DecodeFSDefaultAndSize(at, (Py_ssize_t)len);
                if (name == NULL) {
                    Py_DECREF(entries);
                    goto fail;
                }
                PyList_SET_ITEM(entries, (Py_ssize_t)k, name);
                at += len + 1;
            }
            item = Py_BuildValue("(kkkN)", f->mode, f->uid, f->gid, entries);
        }
        if (item == NULL)
            goto fail;
        PyList_SET_ITEM(out, i, item);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    free(found.buf);
    PyMem_RawFree(paths);
    PyMem_RawFree(folders);
    Py_XDECREF(encoded);
    Py_XDECREF(seq);
    Py_XDECREF(rootbytes);
    return out;
}

/* ------------------------------------------------------------------------------------------
 * record_lines(buf, start, section, transaction_result) -> (text, count, first, last, gaps) | None
 *
 * The text lines `dump --deep` prints for the records of the v2 batch at buf[start:] (one
 * "    | offset ..." line each, exactly cli.dump.text's TextSink._record without --print-data, a
 * decoder or a control batch), written here in one pass: no Record object, no event dict, no
 * string per field. section: None (the batch uncompressed, or lz4 decompressed here up to
 * max_window) or its decompressed records section (other codecs, from codecs.py).
 * transaction_result: None or the word of its transaction's outcome (printable ASCII).
 * Returns the lines (an ASCII str, each line ending with "\n"), the record count, the first and
 * last record offsets, and the (offset, next offset) pairs inside the batch that are not
 * consecutive. None whenever the Python path must print the batch: a control batch, a codec or
 * an lz4 frame left to codecs.py, a section past the window, a record that does not decode (the
 * Python path then raises its typed error after the records before it), a header key that is not
 * printable ASCII (the Python path decodes and escapes it). tests/cli/test_dump_record_lines.py
 * compares both paths on what real brokers wrote.
 */

/* The largest epoch second Python's datetime shows (9999-12-31T23:59:59); text._iso prints the
 * milliseconds as a number past it (ValueError), "-" below 0. */
#define RL_MAX_SECONDS 253402300799LL

typedef struct {
    char *p;
    Py_ssize_t n, cap;
} rl_out_t;

static int
rl_reserve(rl_out_t *o, Py_ssize_t more)
{
    if (o->n + more <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap * 2 > o->n + more ? o->cap * 2 : o->n + more;
    char *q = PyMem_RawRealloc(o->p, (size_t)cap);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->p = q;
    o->cap = cap;
    return 0;
}

static inline void
rl_put(rl_out_t *o, const char *s, Py_ssize_t len)
{
    memcpy(o->p + o->n, s, (size_t)len);
    o->n += len;
}

/* an int64 in decimal (no snprintf: four a record) */
static inline void
rl_int(rl_out_t *o, int64_t v)
{
    char tmp[24];
    int k = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        o->p[o->n++] = '-';
    while (k)
        o->p[o->n++] = tmp[--k];
}

static inline void
rl_digits(char *at, int64_t v, int width)
{
    for (int k = width - 1; k >= 0; k--) {
        at[k] = (char)('0' + v % 10);
        v /= 10;
    }
}

/* "YYYY-MM-DDTHH:MM:SS" (19 characters) of an epoch second in [0, RL_MAX_SECONDS], proleptic
 * Gregorian UTC (days to civil date: H. Hinnant's algorithm) */
static void
rl_iso_seconds(int64_t secs, char *out)
{
    int64_t days = secs / 86400, rem = secs % 86400;
    int64_t z = days + 719468;
    int64_t era = z / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    if (m <= 2)
        y++;
    rl_digits(out, y, 4);
    out[4] = '-';
    rl_digits(out + 5, m, 2);
    out[7] = '-';
    rl_digits(out + 8, d, 2);
    out[10] = 'T';
    rl_digits(out + 11, rem / 3600, 2);
    out[13] = ':';
    rl_digits(out + 14, rem / 60 % 60, 2);
    out[16] = ':';
    rl_digits(out + 17, rem % 60, 2);
}

static PyObject *
record_lines(PyObject *self, PyObject *args)
{
    Py_buffer view, sview;
    Py_ssize_t start;
    PyObject *section, *txn;
    batch_hdr_t h;
    scratch_t s = {NULL, 0};
    rl_out_t o = {NULL, 0, 0};
    PyObject *result = NULL, *gaps = NULL;
    int have_section = 0;

    if (!PyArg_ParseTuple(args, "y*nOO", &view, &start, &section, &txn))
        return NULL;
    const char *txn_s = NULL;
    Py_ssize_t txn_len = 0;
    if (txn != Py_None) {
        if (!PyUnicode_Check(txn)) {
            PyErr_SetString(PyExc_TypeError, "record_lines: transaction_result must be a str or None");
            goto done;
        }
        txn_s = PyUnicode_AsUTF8AndSize(txn, &txn_len);
        if (txn_s == NULL)
            goto done;
        for (Py_ssize_t k = 0; k < txn_len; k++)
            if (txn_s[k] < 0x20 || txn_s[k] > 0x7e) {
                result = Py_NewRef(Py_None);
                goto done;
            }
    }
    const uint8_t *buf = (const uint8_t *)view.buf;
    if (read_batch_header(buf, view.len, start, &h) < 0)
        goto done;
    if (buf[start + 16] != 2 || (h.attributes & 0x20) || h.record_count <= 0) {
        result = Py_NewRef(Py_None); /* not v2, a control batch, no records: the Python path */
        goto done;
    }
    int codec = h.attributes & 0x07;
    const uint8_t *p;
    Py_ssize_t pos, end;
    if (section != Py_None) {
        if (PyObject_GetBuffer(section, &sview, PyBUF_SIMPLE) < 0)
            goto done;
        have_section = 1;
        p = (const uint8_t *)sview.buf;
        pos = 0;
        end = sview.len;
    } else if (codec == 0) {
        p = buf;
        pos = start + 61;
        end = start + 12 + (Py_ssize_t)h.length;
    } else if (codec == 3) {
        Py_ssize_t out_len = 0;
        int rc = lz4_frame_decode(buf + start + 61, records_size(&h), &s, &out_len, max_window);
        if (rc < 0)
            goto done;
        if (rc > 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        p = (const uint8_t *)s.p;
        pos = 0;
        end = out_len;
    } else {
        result = Py_NewRef(Py_None);
        goto done;
    }
    gaps = PyList_New(0);
    if (gaps == NULL)
        goto done;
    int use_lat = (h.attributes & 0x08) != 0;
    const char *ts_label = use_lat ? "LogAppendTime " : "CreateTime ";
    Py_ssize_t ts_label_len = use_lat ? 14 : 11;
    char iso[20];
    int64_t iso_secs = -1; /* the second iso holds */
    int64_t first = 0, prev = 0;
    Py_ssize_t prefetched = pos;
    for (Py_ssize_t n = 0; n < h.record_count; n++) {
        rec_t rec;
        Py_ssize_t errpos;
        if (parse_record(p, &pos, end, &rec, &errpos)) {
            result = Py_NewRef(Py_None); /* the Python path raises the typed error */
            goto done;
        }
        prefetch_ahead(p, pos, end, &prefetched);
        /* 4 numbers of at most 20 characters, the time (at most 24), the words: under 192 */
        if (rl_reserve(&o, 192 + txn_len) < 0)
            goto done;
        int64_t offset = (int64_t)((uint64_t)h.base_offset + (uint64_t)(int64_t)rec.offset_delta);
        int64_t ts = use_lat ? h.max_timestamp : (int64_t)((uint64_t)h.base_timestamp + (uint64_t)rec.ts_delta);
        if (n == 0)
            first = offset;
        else if (prev == INT64_MAX || offset != prev + 1) {
            PyObject *pair = Py_BuildValue("(LL)", (long long)prev, (long long)offset);
            if (pair == NULL || PyList_Append(gaps, pair) < 0) {
                Py_XDECREF(pair);
                goto done;
            }
            Py_DECREF(pair);
        }
        prev = offset;
        rl_put(&o, "    | offset ", 13);
        rl_int(&o, offset);
        rl_put(&o, "  ", 2);
        rl_put(&o, ts_label, ts_label_len);
        if (ts < 0)
            rl_put(&o, "-", 1);
        else if (ts / 1000 > RL_MAX_SECONDS)
            rl_int(&o, ts);
        else {
            if (ts / 1000 != iso_secs) {
                iso_secs = ts / 1000;
                rl_iso_seconds(iso_secs, iso);
            }
            rl_put(&o, iso, 19);
            o.p[o.n++] = '.';
            rl_digits(o.p + o.n, ts % 1000, 3);
            o.n += 3;
            o.p[o.n++] = 'Z';
        }
        rl_put(&o, "  key ", 6);
        rl_int(&o, rec.key_len < 0 ? -1 : rec.key_len);
        rl_put(&o, " B  value ", 10);
        rl_int(&o, rec.value_len < 0 ? -1 : rec.value_len);
        rl_put(&o, " B", 2);
        if (h.base_sequence >= 0) {
            int32_t seq = increment_sequence(h.base_sequence, rec.offset_delta);
            if (seq >= 0) {
                rl_put(&o, "  seq ", 6);
                rl_int(&o, seq);
            }
        }
        if (txn_s != NULL && txn_len > 0) {
            rl_put(&o, "  transaction ", 14);
            rl_put(&o, txn_s, txn_len);
        }
        if (rec.header_count > 0) {
            /* a second walk over the headers parse_record checked, each length checked again (a live
             * segment's bytes may change in between: next_header); a key that is not printable ASCII
             * leaves the batch to the Python path, which decodes and escapes it */
            rl_put(&o, "  headers [", 11);
            Py_ssize_t hi = rec.headers_pos;
            for (int32_t k = 0; k < rec.header_count; k++) {
                int32_t kl, vl;
                Py_ssize_t kpos, vpos;
                if (next_header(p, &hi, rec.end, &kl, &kpos, &vl, &vpos, &errpos) || rl_reserve(&o, kl + 4) < 0) {
                    if (!PyErr_Occurred())
                        result = Py_NewRef(Py_None);
                    goto done;
                }
                if (k)
                    rl_put(&o, ", ", 2);
                for (int32_t c = 0; c < kl; c++) {
                    uint8_t ch = p[kpos + c];
                    if (ch < 0x20 || ch > 0x7e) {
                        result = Py_NewRef(Py_None);
                        goto done;
                    }
                    o.p[o.n++] = (char)ch;
                }
            }
            o.p[o.n++] = ']';
        }
        o.p[o.n++] = '\n';
    }
    if (pos != end) { /* bytes after the last record: the Python path raises E_TRAILING */
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *text = PyUnicode_New(o.n, 127);
    if (text == NULL)
        goto done;
    if (o.n)
        memcpy(PyUnicode_1BYTE_DATA(text), o.p, (size_t)o.n);
    result = Py_BuildValue("(NiLLO)", text, (int)h.record_count, (long long)first, (long long)prev, gaps);
done:
    Py_XDECREF(gaps);
    PyMem_RawFree(o.p);
    PyMem_RawFree(s.p);
    if (have_section)
        PyBuffer_Release(&sview);
    PyBuffer_Release(&view);
    return result;
}

/* ======================================================================================================
 * Protobuf payloads straight into Arrow-ready column buffers (formats/registry/protobuf_plan.py builds the
 * plan and the Arrow arrays; this is its wire-format half).
 *
 * The plan is the message descriptor flattened depth first into entries, one per field instance: a
 * field of a message type (a struct, a Timestamp or Duration, a wrapper) is followed by its own fields'
 * entries (up to its `end`), whose columns are [col, col_end); a map field by its entry message's key and
 * value entries. The parse of a payload fills one slot per entry:
 *   - a scalar field seen twice keeps the last value; a repeated one appends (packed or not);
 *   - a message field seen twice is merged (its fields read into the same slots again), as the Protobuf
 *     encoding spec says for an embedded message that is not repeated;
 *   - setting a member of a oneof clears the member set before it (its slots, its message's fields);
 *   - a map's entries are kept in wire order, then sorted by key with the last of equal keys kept;
 *   - each element of a repeated message is read into its entries' slots (cleared first) and written out
 *     as it ends (pb_element); a oneof member cleared, or a payload refused, takes back what its repeated
 *     messages wrote (the columns go back to their marks: the lengths at the start of the row, or of the
 *     enclosing element);
 *   - unknown fields (wire types 0, 1, 2, 5) are skipped, except in a map entry: there the payload is
 *     refused (upb moves the whole entry to the unknown fields of the map's message; protobuf-java keeps it
 *     in the map, docs/typed-tables.md "Protobuf").
 * Only then are the slots written out as one row of every column. A payload is refused (left null, its
 * flag set) on anything it does not read exactly as protobuf's own parser does: a truncated or overlong
 * varint, a length past the end, a known field with a wire type other than its own (or length-delimited
 * for a packable repeated one), a group, wire types 4, 6 or 7, field number 0, a string that is not
 * UTF-8, a Timestamp or Duration protobuf calls invalid. The caller reads the refused payloads with the
 * Python reader, which gives the current value or reason.
 * ====================================================================================================== */

enum {
    PB_INT32 = 1, PB_INT64, PB_UINT32, PB_UINT64, PB_SINT32, PB_SINT64, PB_FIXED32, PB_FIXED64,
    PB_SFIXED32, PB_SFIXED64, PB_FLOAT, PB_DOUBLE, PB_BOOL, PB_STRING, PB_BYTES, PB_ENUM,
    PB_MESSAGE, PB_MAP, PB_TIMESTAMP, PB_DURATION,
};

typedef struct {
    uint64_t v;
    const uint8_t *p;
    uint32_t len;
} pb_val;

typedef struct {
    pb_val *v;
    Py_ssize_t n, cap;
} pb_vec;

typedef struct {
    char *p;
    Py_ssize_t n, cap;
} pb_buf;

typedef struct {
    int32_t number, kind, repeated, presence, parent, oneof, end, col;
    int32_t col_end; /* a message's: the columns of its subtree are [col, col_end) */
    int32_t node;  /* for a message or map entry: its node (children lookup), else -1 */
} pb_entry;

typedef struct {
    int32_t *children; /* direct child entries */
    int32_t nchildren;
    int32_t *table;    /* field number -> entry (-1: unknown), numbers < tsize */
    int32_t tsize;
    int32_t map_entry; /* a map field's entry message */
} pb_node;

typedef struct {
    int32_t nentries, nnodes, ncols, noneofs;
    pb_entry *e;
    pb_node *nodes; /* node 0: the top message */
} pb_plan;

#define PB_PLAN_CAPSULE "logdoctor.protobuf_plan"

static void
pb_plan_free(pb_plan *P)
{
    if (P == NULL)
        return;
    if (P->nodes) {
        for (int i = 0; i < P->nnodes; i++) {
            PyMem_Free(P->nodes[i].children);
            PyMem_Free(P->nodes[i].table);
        }
    }
    PyMem_Free(P->nodes);
    PyMem_Free(P->e);
    PyMem_Free(P);
}

static void
pb_plan_capsule_free(PyObject *cap)
{
    pb_plan_free((pb_plan *)PyCapsule_GetPointer(cap, PB_PLAN_CAPSULE));
}

static inline int
pb_is_message(int kind)
{
    return kind == PB_MESSAGE || kind == PB_MAP || kind == PB_TIMESTAMP || kind == PB_DURATION;
}

/* pb_plan(entries, ncols, noneofs) -> capsule; entries: tuples (number, kind, repeated, presence, parent,
 * oneof, end, col), depth first, parent -1 for a field of the top message. */
static PyObject *
pb_plan_new(PyObject *self, PyObject *args)
{
    PyObject *seq;
    int ncols, noneofs;
    if (!PyArg_ParseTuple(args, "Oii", &seq, &ncols, &noneofs))
        return NULL;
    PyObject *fast = PySequence_Fast(seq, "entries must be a sequence");
    if (fast == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    pb_plan *P = PyMem_Calloc(1, sizeof(pb_plan));
    if (P == NULL) {
        Py_DECREF(fast);
        return PyErr_NoMemory();
    }
    P->nentries = (int32_t)n;
    P->ncols = ncols;
    P->noneofs = noneofs;
    P->e = PyMem_Calloc((size_t)n + 1, sizeof(pb_entry));
    P->nodes = PyMem_Calloc((size_t)n + 1, sizeof(pb_node));
    if (P->e == NULL || P->nodes == NULL)
        goto nomem;
    P->nnodes = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        pb_entry *e = &P->e[i];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "iiiiiiiii", &e->number, &e->kind, &e->repeated,
                              &e->presence, &e->parent, &e->oneof, &e->end, &e->col, &e->col_end))
            goto fail;
        if (e->kind < PB_INT32 || e->kind > PB_DURATION || e->parent < -1 || e->parent >= i || e->end <= i ||
            e->end > n || e->col < 0 || e->col >= ncols || e->oneof < -1 || e->oneof >= noneofs ||
            e->col_end < e->col || e->col_end > ncols || e->number <= 0 || e->number >= (1 << 29) || (e->parent >= 0 && !pb_is_message(P->e[e->parent].kind)) ||
            (!pb_is_message(e->kind) && e->end != i + 1)) {
            PyErr_SetString(PyExc_ValueError, "bad protobuf plan entry");
            goto fail;
        }
        e->node = pb_is_message(e->kind) ? P->nnodes++ : -1;
    }
    /* the children of each node */
    for (Py_ssize_t i = 0; i < n; i++) {
        int node = P->e[i].parent < 0 ? 0 : P->e[P->e[i].parent].node;
        P->nodes[node].nchildren++;
    }
    for (int k = 0; k < P->nnodes; k++) {
        P->nodes[k].children = PyMem_Calloc((size_t)P->nodes[k].nchildren + 1, sizeof(int32_t));
        if (P->nodes[k].children == NULL)
            goto nomem;
        P->nodes[k].nchildren = 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        pb_node *nd = &P->nodes[P->e[i].parent < 0 ? 0 : P->e[P->e[i].parent].node];
        nd->children[nd->nchildren++] = (int32_t)i;
        if (P->e[i].number >= nd->tsize)
            nd->tsize = P->e[i].number + 1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (P->e[i].kind == PB_MAP)
            P->nodes[P->e[i].node].map_entry = 1;
    for (int k = 0; k < P->nnodes; k++) {
        pb_node *nd = &P->nodes[k];
        if (nd->tsize > 4096)
            nd->tsize = 4096; /* larger numbers: by a walk of the children */
        nd->table = PyMem_Malloc(((size_t)nd->tsize + 1) * sizeof(int32_t));
        if (nd->table == NULL)
            goto nomem;
        for (int j = 0; j < nd->tsize; j++)
            nd->table[j] = -1;
        for (int j = 0; j < nd->nchildren; j++) {
            int32_t c = nd->children[j];
            if (P->e[c].number < nd->tsize) {
                if (nd->table[P->e[c].number] >= 0) {
                    PyErr_SetString(PyExc_ValueError, "duplicate field number in protobuf plan");
                    goto fail;
                }
                nd->table[P->e[c].number] = c;
            }
        }
    }
    Py_DECREF(fast);
    PyObject *cap = PyCapsule_New(P, PB_PLAN_CAPSULE, pb_plan_capsule_free);
    if (cap == NULL)
        pb_plan_free(P);
    return cap;
nomem:
    PyErr_NoMemory();
fail:
    Py_DECREF(fast);
    pb_plan_free(P);
    return NULL;
}

/* -- the per-call state -- */

typedef struct {
    const pb_plan *P;
    pb_val *slots;    /* per entry */
    uint8_t *has;     /* per entry */
    pb_vec *reps;     /* per entry: a repeated field's values; a map's (key, value) pairs */
    int32_t *oneof;   /* per oneof: the member set (-1: none) */
    pb_buf *bufs;     /* per column */
    int64_t *counts;  /* per entry: a repeated field's or map's values written so far (its offsets) */
    /* where a cleared field's columns go back to: the lengths at the start of the row, or of the element of
     * the repeated message enclosing it (elements are written as they end; a oneof member cleared takes
     * back what its repeated messages wrote in this row or element) */
    Py_ssize_t *mark_n; /* per column */
    int64_t *mark_c;    /* per entry: counts */
    Py_ssize_t *row_n;  /* per column, at the start of the row (a refused row goes back there) */
    int64_t *row_c;
    int64_t *stack;     /* the marks of the enclosing scopes, while an element is read */
    Py_ssize_t sp, stack_cap;
    int64_t *sorted;  /* scratch: map pair order */
    Py_ssize_t sorted_cap;
} pb_state;

static int
pb_buf_reserve(pb_buf *b, Py_ssize_t more)
{
    if (b->n + more <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more) {
        if (cap > PY_SSIZE_T_MAX / 2)
            return -1;
        cap *= 2;
    }
    char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (p == NULL)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int
pb_buf_put(pb_buf *b, const void *src, Py_ssize_t n)
{
    if (pb_buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->n, src, (size_t)n);
    b->n += n;
    return 0;
}

static inline int
pb_vec_push(pb_vec *v, uint64_t x, const uint8_t *p, uint32_t len)
{
    if (v->n == v->cap) {
        Py_ssize_t cap = v->cap ? v->cap * 2 : 16;
        pb_val *q = PyMem_Realloc(v->v, (size_t)cap * sizeof(pb_val));
        if (q == NULL)
            return -1;
        v->v = q;
        v->cap = cap;
    }
    v->v[v->n].v = x;
    v->v[v->n].p = p;
    v->v[v->n].len = len;
    v->n++;
    return 0;
}

/* results of the parse of one payload */
#define PB_OK 0
#define PB_REFUSED 1
#define PB_NOMEM 2

static inline int
pb_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t r = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        if (i == 9 && b > 1)
            return -1; /* beyond 64 bits: refused (protobuf may read it; the Python reader decides) */
        r |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            *pp = p;
            *out = r;
            return 0;
        }
    }
    return -1;
}

/* RFC 3629 UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF), as protobuf checks a string */
static int
pb_utf8(const uint8_t *s, uint32_t n)
{
    uint32_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80)
                return 0;
            if (c == 0xE0 && s[i + 1] < 0xA0)
                return 0;
            if (c == 0xED && s[i + 1] >= 0xA0)
                return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 ||
                (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if (c == 0xF0 && s[i + 1] < 0x90)
                return 0;
            if (c == 0xF4 && s[i + 1] >= 0x90)
                return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* the wire type a scalar kind is written with */
static inline int
pb_wire_type(int kind)
{
    switch (kind) {
    case PB_FIXED64: case PB_SFIXED64: case PB_DOUBLE:
        return 1;
    case PB_FIXED32: case PB_SFIXED32: case PB_FLOAT:
        return 5;
    case PB_STRING: case PB_BYTES: case PB_MESSAGE: case PB_MAP: case PB_TIMESTAMP: case PB_DURATION:
        return 2;
    default:
        return 0;
    }
}

static void
pb_clear(pb_state *S, int32_t from, int32_t to)
{
    for (int32_t i = from; i < to; i++) {
        const pb_entry *e = &S->P->e[i];
        S->counts[i] = S->mark_c[i];
        if (pb_is_message(e->kind))
            for (int32_t c = e->col; c < e->col_end; c++)
                S->bufs[c].n = S->mark_n[c];
        S->has[i] = 0;
        S->slots[i].v = 0;
        S->slots[i].p = NULL;
        S->slots[i].len = 0;
        S->reps[i].n = 0;
        if (S->P->e[i].oneof >= 0)
            S->oneof[S->P->e[i].oneof] = -1;
    }
}

/* one scalar value of `kind` at *pp (wire type wt, already checked) */
static inline int
pb_scalar(int wt, const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    if (wt == 0)
        return pb_varint(pp, end, out);
    if (wt == 1) {
        if (end - *pp < 8)
            return -1;
        uint64_t x;
        memcpy(&x, *pp, 8);
        *pp += 8;
        *out = x; /* little-endian hosts (x86-64, aarch64) */
        return 0;
    }
    if (end - *pp < 4)
        return -1;
    uint32_t x;
    memcpy(&x, *pp, 4);
    *pp += 4;
    *out = x;
    return 0;
}

static int pb_parse(pb_state *S, int node, const uint8_t *p, const uint8_t *end, int depth);
static int pb_time_valid(pb_state *S, const pb_entry *e, int32_t ei);
static int pb_emit(pb_state *S, int32_t ei, int present);

/* one element of the repeated message `ei`: read with fresh slots, checked, written out at once (its own
 * validity byte at col + 1, then its fields' columns), its marks the current lengths while it is read */
static int
pb_element(pb_state *S, int32_t ei, const uint8_t *p, const uint8_t *end, int depth)
{
    const pb_plan *P = S->P;
    const pb_entry *e = &P->e[ei];
    Py_ssize_t need = (Py_ssize_t)(e->end - ei - 1) + (Py_ssize_t)(e->col_end - e->col - 1);
    if (S->sp + need > S->stack_cap) {
        Py_ssize_t cap = S->stack_cap ? S->stack_cap : 64;
        while (cap < S->sp + need)
            cap *= 2;
        int64_t *q = PyMem_Realloc(S->stack, (size_t)cap * sizeof(int64_t));
        if (q == NULL)
            return PB_NOMEM;
        S->stack = q;
        S->stack_cap = cap;
    }
    Py_ssize_t base = S->sp;
    for (int32_t j = ei + 1; j < e->end; j++) {
        S->stack[S->sp++] = S->mark_c[j];
        S->mark_c[j] = S->counts[j];
    }
    for (int32_t c = e->col + 1; c < e->col_end; c++) {
        S->stack[S->sp++] = (int64_t)S->mark_n[c];
        S->mark_n[c] = S->bufs[c].n;
    }
    pb_clear(S, ei + 1, e->end);
    int r = pb_parse(S, e->node, p, end, depth + 1);
    if (r == PB_OK && (e->kind == PB_TIMESTAMP || e->kind == PB_DURATION) && !pb_time_valid(S, e, ei))
        r = PB_REFUSED;
    for (int32_t j = ei + 1; j < e->end && r == PB_OK; j++)
        if ((P->e[j].kind == PB_TIMESTAMP || P->e[j].kind == PB_DURATION) && !P->e[j].repeated && S->has[j] &&
            !pb_time_valid(S, &P->e[j], j))
            r = PB_REFUSED;
    if (r == PB_OK) {
        uint8_t valid = 1;
        const pb_node *nd = &P->nodes[e->node];
        if (pb_buf_put(&S->bufs[e->col + 1], &valid, 1) < 0)
            r = PB_NOMEM;
        for (int j = 0; j < nd->nchildren && r == PB_OK; j++)
            if (pb_emit(S, nd->children[j], 1) < 0)
                r = PB_NOMEM;
        S->counts[ei]++;
    }
    /* the enclosing scope's marks back */
    S->sp = base;
    for (int32_t j = ei + 1; j < e->end; j++)
        S->mark_c[j] = S->stack[S->sp++];
    for (int32_t c = e->col + 1; c < e->col_end; c++)
        S->mark_n[c] = (Py_ssize_t)S->stack[S->sp++];
    S->sp = base;
    return r;
}

static int
pb_parse(pb_state *S, int node, const uint8_t *p, const uint8_t *end, int depth)
{
    const pb_plan *P = S->P;
    const pb_node *nd = &P->nodes[node];
    if (depth > 100)
        return PB_REFUSED;
    while (p < end) {
        uint64_t tag;
        if (pb_varint(&p, end, &tag) < 0 || tag > 0xFFFFFFFFu)
            return PB_REFUSED;
        uint32_t number = (uint32_t)(tag >> 3);
        int wt = (int)(tag & 7);
        if (number == 0)
            return PB_REFUSED;
        int32_t ei = -1;
        if (number < (uint32_t)nd->tsize)
            ei = nd->table[number];
        else
            for (int j = 0; j < nd->nchildren; j++)
                if ((uint32_t)P->e[nd->children[j]].number == number) {
                    ei = nd->children[j];
                    break;
                }
        uint64_t x, len = 0;
        if (ei < 0) { /* an unknown field: skipped */
            if (nd->map_entry)
                return PB_REFUSED; /* upb keeps such an entry as an unknown field of the map's message */
            switch (wt) {
            case 0:
                if (pb_varint(&p, end, &x) < 0)
                    return PB_REFUSED;
                break;
            case 1:
                if (end - p < 8)
                    return PB_REFUSED;
                p += 8;
                break;
            case 2:
                if (pb_varint(&p, end, &len) < 0 || len > (uint64_t)(end - p))
                    return PB_REFUSED;
                p += len;
                break;
            case 5:
                if (end - p < 4)
                    return PB_REFUSED;
                p += 4;
                break;
            default:
                return PB_REFUSED;
            }
            continue;
        }
        const pb_entry *e = &P->e[ei];
        int own = pb_wire_type(e->kind);
        if (wt == 2) {
            if (pb_varint(&p, end, &len) < 0 || len > (uint64_t)(end - p))
                return PB_REFUSED;
        }
        if (e->repeated && !pb_is_message(e->kind) && e->kind != PB_STRING && e->kind != PB_BYTES) {
            pb_vec *v = &S->reps[ei];
            if (wt == own) {
                if (pb_scalar(wt, &p, end, &x) < 0)
                    return PB_REFUSED;
                if (pb_vec_push(v, x, NULL, 0) < 0)
                    return PB_NOMEM;
            } else if (wt == 2) { /* packed */
                const uint8_t *q = p, *qend = p + len;
                if ((own == 1 && len % 8) || (own == 5 && len % 4))
                    return PB_REFUSED;
                while (q < qend) {
                    if (pb_scalar(own, &q, qend, &x) < 0)
                        return PB_REFUSED;
                    if (pb_vec_push(v, x, NULL, 0) < 0)
                        return PB_NOMEM;
                }
                p = qend;
            } else {
                return PB_REFUSED;
            }
            continue;
        }
        if (wt != own)
            return PB_REFUSED;
        if (e->oneof >= 0 && S->oneof[e->oneof] != ei) {
            int32_t was = S->oneof[e->oneof];
            if (was >= 0)
                pb_clear(S, was, P->e[was].end);
            S->oneof[e->oneof] = ei;
        }
        if (e->kind == PB_STRING || e->kind == PB_BYTES) {
            if (len > 0x7FFFFFFF)
                return PB_REFUSED;
            if (e->kind == PB_STRING && !pb_utf8(p, (uint32_t)len))
                return PB_REFUSED;
            if (e->repeated) {
                if (pb_vec_push(&S->reps[ei], 0, p, (uint32_t)len) < 0)
                    return PB_NOMEM;
            } else {
                S->slots[ei].p = p;
                S->slots[ei].len = (uint32_t)len;
                S->has[ei] = 1;
            }
            p += len;
        } else if (e->kind == PB_MAP) {
            /* the entry's key and value: fresh for each entry, then kept as a pair */
            pb_clear(S, ei + 1, e->end);
            int r = pb_parse(S, e->node, p, p + len, depth + 1);
            if (r != PB_OK)
                return r;
            p += len;
            int32_t k = P->nodes[e->node].nchildren == 2 ? P->nodes[e->node].children[0] : -1;
            if (k < 0)
                return PB_REFUSED;
            int32_t vi = P->nodes[e->node].children[1];
            if (P->e[k].number != 1) { /* key listed second */
                int32_t t = k;
                k = vi;
                vi = t;
            }
            pb_vec *v = &S->reps[ei];
            if (pb_vec_push(v, S->slots[k].v, S->slots[k].p, S->slots[k].len) < 0 ||
                pb_vec_push(v, S->slots[vi].v, S->slots[vi].p, S->slots[vi].len) < 0)
                return PB_NOMEM;
        } else if (pb_is_message(e->kind) && e->repeated) {
            int r = pb_element(S, ei, p, p + len, depth);
            if (r != PB_OK)
                return r;
            p += len;
        } else if (pb_is_message(e->kind)) {
            S->has[ei] = 1;
            int r = pb_parse(S, e->node, p, p + len, depth + 1);
            if (r != PB_OK)
                return r;
            p += len;
        } else {
            if (pb_scalar(wt, &p, end, &x) < 0)
                return PB_REFUSED;
            S->slots[ei].v = x;
            S->has[ei] = 1;
        }
    }
    return PB_OK;
}

/* a Timestamp or Duration protobuf calls valid (protobuf_columns._micros's rule) */
static int
pb_time_valid(pb_state *S, const pb_entry *e, int32_t ei)
{
    int64_t s = 0, n = 0;
    for (int32_t c = ei + 1; c < e->end; c++) {
        if (S->P->e[c].parent != ei)
            continue;
        if (S->P->e[c].number == 1)
            s = (int64_t)S->slots[c].v;
        else if (S->P->e[c].number == 2)
            n = (int32_t)(uint32_t)S->slots[c].v;
    }
    if (e->kind == PB_TIMESTAMP)
        return s >= -62135596800LL && s <= 253402300799LL && n >= 0 && n <= 999999999;
    if (s < -315576000000LL || s > 315576000000LL || n < -999999999 || n > 999999999)
        return 0;
    return !((s > 0 && n < 0) || (s < 0 && n > 0));
}

/* the value of a scalar as its column holds it: int32 (int32, sint32, sfixed32, enum), int64 (int64,
 * sint64, sfixed64, uint32, fixed32), uint64 (uint64, fixed64), float, double, uint8 (bool) */
static inline int
pb_put_value(pb_buf *b, int kind, uint64_t v)
{
    switch (kind) {
    case PB_INT32: case PB_SFIXED32: case PB_ENUM: {
        int32_t x = (int32_t)(uint32_t)v;
        return pb_buf_put(b, &x, 4);
    }
    case PB_SINT32: {
        uint32_t u = (uint32_t)v;
        int32_t x = (int32_t)((u >> 1) ^ (0u - (u & 1)));
        return pb_buf_put(b, &x, 4);
    }
    case PB_INT64: case PB_SFIXED64: case PB_UINT64: case PB_FIXED64: case PB_DOUBLE:
        return pb_buf_put(b, &v, 8);
    case PB_SINT64: {
        uint64_t x = (v >> 1) ^ (0 - (v & 1));
        return pb_buf_put(b, &x, 8);
    }
    case PB_UINT32: case PB_FIXED32: {
        int64_t x = (int64_t)(uint32_t)v;
        return pb_buf_put(b, &x, 8);
    }
    case PB_FLOAT: {
        uint32_t x = (uint32_t)v;
        return pb_buf_put(b, &x, 4);
    }
    case PB_BOOL: {
        uint8_t x = v != 0;
        return pb_buf_put(b, &x, 1);
    }
    }
    return -1;
}

/* a string value: its end offset, then its bytes */
static inline int
pb_put_string(pb_buf *offsets, pb_buf *data, const uint8_t *p, uint32_t len)
{
    if (data->n + (Py_ssize_t)len > 0x7FFFFFFF)
        return -1;
    if (pb_buf_put(data, p, len) < 0)
        return -1;
    int32_t o = (int32_t)data->n;
    return pb_buf_put(offsets, &o, 4);
}

static inline int
pb_put_one(pb_state *S, const pb_entry *e, uint64_t v, const uint8_t *p, uint32_t len, int col)
{
    if (e->kind == PB_STRING || e->kind == PB_BYTES)
        return pb_put_string(&S->bufs[col], &S->bufs[col + 1], p, len);
    return pb_put_value(&S->bufs[col], e->kind, v);
}

static inline int
pb_put_offset(pb_state *S, int32_t ei, int col, Py_ssize_t added)
{
    S->counts[ei] += added;
    if (S->counts[ei] > 0x7FFFFFFF)
        return -1;
    int32_t o = (int32_t)S->counts[ei];
    return pb_buf_put(&S->bufs[col], &o, 4);
}

/* a map key's order: strings bytewise (UTF-8 order = code point order), numbers by value */
static int pb_sort_kind;
static const pb_val *pb_sort_pairs;

static int
pb_key_cmp(const void *a, const void *b)
{
    int64_t ia = *(const int64_t *)a, ib = *(const int64_t *)b;
    const pb_val *x = &pb_sort_pairs[2 * ia], *y = &pb_sort_pairs[2 * ib];
    int c = 0;
    switch (pb_sort_kind) {
    case PB_STRING: {
        uint32_t m = x->len < y->len ? x->len : y->len;
        c = m ? memcmp(x->p, y->p, m) : 0;
        if (c == 0)
            c = (x->len > y->len) - (x->len < y->len);
        break;
    }
    case PB_BOOL:
        c = (x->v != 0) - (y->v != 0);
        break;
    case PB_INT32: case PB_SFIXED32: {
        int32_t u = (int32_t)(uint32_t)x->v, w = (int32_t)(uint32_t)y->v;
        c = (u > w) - (u < w);
        break;
    }
    case PB_SINT32: {
        uint32_t su = (uint32_t)x->v, sw = (uint32_t)y->v;
        int32_t u = (int32_t)((su >> 1) ^ (0u - (su & 1))), w = (int32_t)((sw >> 1) ^ (0u - (sw & 1)));
        c = (u > w) - (u < w);
        break;
    }
    case PB_INT64: case PB_SFIXED64: {
        int64_t u = (int64_t)x->v, w = (int64_t)y->v;
        c = (u > w) - (u < w);
        break;
    }
    case PB_SINT64: {
        int64_t u = (int64_t)((x->v >> 1) ^ (0 - (x->v & 1))), w = (int64_t)((y->v >> 1) ^ (0 - (y->v & 1)));
        c = (u > w) - (u < w);
        break;
    }
    case PB_UINT32: case PB_FIXED32: {
        uint32_t u = (uint32_t)x->v, w = (uint32_t)y->v;
        c = (u > w) - (u < w);
        break;
    }
    default: { /* uint64, fixed64 */
        c = (x->v > y->v) - (x->v < y->v);
        break;
    }
    }
    if (c == 0)
        c = (ia > ib) - (ia < ib); /* stable: wire order */
    return c;
}

static inline int
pb_key_equal(int kind, const pb_val *x, const pb_val *y)
{
    switch (kind) {
    case PB_STRING:
        return x->len == y->len && (x->len == 0 || memcmp(x->p, y->p, x->len) == 0);
    case PB_BOOL:
        return (x->v != 0) == (y->v != 0);
    case PB_INT32: case PB_SFIXED32: case PB_SINT32: case PB_UINT32: case PB_FIXED32:
        return (uint32_t)x->v == (uint32_t)y->v;
    default:
        return x->v == y->v;
    }
}

static int
pb_emit(pb_state *S, int32_t ei, int present)
{
    const pb_plan *P = S->P;
    const pb_entry *e = &P->e[ei];
    int col = e->col;
    int set = present && S->has[ei];
    if (e->kind == PB_MAP) {
        pb_vec *v = &S->reps[ei];
        Py_ssize_t pairs = present ? v->n / 2 : 0;
        int32_t k = P->nodes[e->node].children[0], vi = P->nodes[e->node].children[1];
        if (P->e[k].number != 1) {
            int32_t t = k;
            k = vi;
            vi = t;
        }
        if (pairs > S->sorted_cap) {
            int64_t *q = PyMem_Realloc(S->sorted, (size_t)pairs * sizeof(int64_t));
            if (q == NULL)
                return -1;
            S->sorted = q;
            S->sorted_cap = pairs;
        }
        for (Py_ssize_t i = 0; i < pairs; i++)
            S->sorted[i] = i;
        if (pairs > 1) {
            pb_sort_kind = P->e[k].kind;
            pb_sort_pairs = v->v;
            qsort(S->sorted, (size_t)pairs, sizeof(int64_t), pb_key_cmp);
        }
        Py_ssize_t kept = 0;
        for (Py_ssize_t i = 0; i < pairs; i++) {
            if (i + 1 < pairs && pb_key_equal(P->e[k].kind, &v->v[2 * S->sorted[i]], &v->v[2 * S->sorted[i + 1]]))
                continue; /* an equal key later on the wire wins */
            const pb_val *kv = &v->v[2 * S->sorted[i]], *vv = &v->v[2 * S->sorted[i] + 1];
            if (pb_put_one(S, &P->e[k], kv->v, kv->p, kv->len, P->e[k].col) < 0 ||
                pb_put_one(S, &P->e[vi], vv->v, vv->p, vv->len, P->e[vi].col) < 0)
                return -1;
            kept++;
        }
        return pb_put_offset(S, ei, col, kept);
    }
    if (pb_is_message(e->kind) && e->repeated) { /* its elements are written as they end */
        if (S->counts[ei] > 0x7FFFFFFF)
            return -1;
        int32_t o = (int32_t)S->counts[ei];
        return pb_buf_put(&S->bufs[col], &o, 4);
    }
    if (pb_is_message(e->kind)) {
        uint8_t valid = (uint8_t)set;
        if (pb_buf_put(&S->bufs[col], &valid, 1) < 0)
            return -1;
        const pb_node *nd = &P->nodes[e->node];
        for (int j = 0; j < nd->nchildren; j++)
            if (pb_emit(S, nd->children[j], set) < 0)
                return -1;
        return 0;
    }
    if (e->repeated) {
        pb_vec *v = &S->reps[ei];
        Py_ssize_t n = present ? v->n : 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (pb_put_one(S, e, v->v[i].v, v->v[i].p, v->v[i].len, col + 1) < 0)
                return -1;
        return pb_put_offset(S, ei, col, n);
    }
    if (e->presence) {
        uint8_t valid = (uint8_t)set;
        if (pb_buf_put(&S->bufs[col], &valid, 1) < 0)
            return -1;
        col++;
    }
    return pb_put_one(S, e, set ? S->slots[ei].v : 0, S->slots[ei].p, set ? S->slots[ei].len : 0, col);
}

/* pb_decode(plan, payloads) -> (columns: list of bytes, refused: bytes, one 0/1 per payload) | None when a
 * column outgrows Arrow's 32-bit offsets or a payload is not one contiguous buffer */
static PyObject *
pb_decode(PyObject *self, PyObject *args)
{
    PyObject *cap, *seq, *dataobj = NULL, *startsobj = NULL, *endsobj = NULL;
    if (!PyArg_ParseTuple(args, "OO|OOO", &cap, &seq, &dataobj, &startsobj, &endsobj))
        return NULL;
    const pb_plan *P = PyCapsule_GetPointer(cap, PB_PLAN_CAPSULE);
    if (P == NULL)
        return NULL;
    /* pb_decode(plan, None, data, starts, ends): the payloads are data[starts[i]:ends[i]] (int64 buffers) */
    Py_buffer spans[3];
    int nspans = 0;
    const int64_t *sp_start = NULL, *sp_end = NULL;
    PyObject *fast = NULL;
    Py_ssize_t n;
    if (seq == Py_None) {
        PyObject *objs[3] = {dataobj, startsobj, endsobj};
        for (; nspans < 3; nspans++) {
            if (objs[nspans] == NULL) {
                PyErr_SetString(PyExc_TypeError, "pb_decode(plan, None, data, starts, ends)");
                goto spans_bad;
            }
            if (PyObject_GetBuffer(objs[nspans], &spans[nspans], PyBUF_SIMPLE) < 0)
                goto spans_bad;
        }
        n = spans[1].len / 8;
        if (spans[2].len / 8 != n) {
            PyErr_SetString(PyExc_ValueError, "starts and ends differ in length");
            goto spans_bad;
        }
        sp_start = spans[1].buf;
        sp_end = spans[2].buf;
        for (Py_ssize_t r = 0; r < n; r++) {
            int64_t a, b;
            memcpy(&a, &sp_start[r], 8);
            memcpy(&b, &sp_end[r], 8);
            if (a < 0 || b < a || b > spans[0].len) {
                PyErr_SetString(PyExc_ValueError, "a payload outside the data buffer");
                goto spans_bad;
            }
        }
    } else {
        fast = PySequence_Fast(seq, "payloads must be a sequence");
        if (fast == NULL)
            return NULL;
        n = PySequence_Fast_GET_SIZE(fast);
    }
    if (0) {
    spans_bad:
        while (nspans > 0)
            PyBuffer_Release(&spans[--nspans]);
        return NULL;
    }
    PyObject *result = NULL, *refused = NULL, *columns = NULL;
    pb_state S;
    memset(&S, 0, sizeof(S));
    S.P = P;
    int32_t ne = P->nentries;
    S.slots = PyMem_Calloc((size_t)ne + 1, sizeof(pb_val));
    S.has = PyMem_Calloc((size_t)ne + 1, 1);
    S.reps = PyMem_Calloc((size_t)ne + 1, sizeof(pb_vec));
    S.oneof = PyMem_Malloc(((size_t)P->noneofs + 1) * sizeof(int32_t));
    S.bufs = PyMem_Calloc((size_t)P->ncols + 1, sizeof(pb_buf));
    S.counts = PyMem_Calloc((size_t)ne + 1, sizeof(int64_t));
    S.mark_c = PyMem_Calloc((size_t)ne + 1, sizeof(int64_t));
    S.row_c = PyMem_Calloc((size_t)ne + 1, sizeof(int64_t));
    S.mark_n = PyMem_Calloc((size_t)P->ncols + 1, sizeof(Py_ssize_t));
    S.row_n = PyMem_Calloc((size_t)P->ncols + 1, sizeof(Py_ssize_t));
    refused = PyBytes_FromStringAndSize(NULL, n);
    if (!S.slots || !S.has || !S.reps || !S.oneof || !S.bufs || !S.counts || !S.mark_c || !S.row_c || !S.mark_n ||
        !S.row_n) {
        PyErr_NoMemory();
        goto done;
    }
    if (refused == NULL)
        goto done;
    uint8_t *ref = (uint8_t *)PyBytes_AS_STRING(refused);
    /* every offsets column starts with 0 */
    for (int32_t i = 0; i < ne; i++) {
        const pb_entry *e = &P->e[i];
        int32_t zero = 0;
        int col = e->col + (e->presence && !e->repeated && !pb_is_message(e->kind) ? 1 : 0);
        if (e->kind == PB_MAP || e->repeated) {
            if (pb_buf_put(&S.bufs[e->col], &zero, 4) < 0)
                goto nomem;
            col = e->col + 1;
        }
        if ((e->kind == PB_STRING || e->kind == PB_BYTES) && pb_buf_put(&S.bufs[col], &zero, 4) < 0)
            goto nomem;
    }
    const pb_node *top = &P->nodes[0];
    for (Py_ssize_t r = 0; r < n; r++) {
        Py_buffer view;
        if (fast == NULL) { /* a span of the data buffer: released with it */
            int64_t a, b;
            memcpy(&a, &sp_start[r], 8);
            memcpy(&b, &sp_end[r], 8);
            memset(&view, 0, sizeof(view));
            view.buf = (char *)spans[0].buf + a;
            view.len = (Py_ssize_t)(b - a);
        } else if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(fast, r), &view, PyBUF_SIMPLE) < 0) {
            /* not one contiguous buffer: the caller reads the batch another way */
            PyErr_Clear();
            result = Py_NewRef(Py_None);
            goto done;
        }
        for (int c = 0; c < P->ncols; c++)
            S.row_n[c] = S.mark_n[c] = S.bufs[c].n;
        for (int32_t i = 0; i < ne; i++)
            S.row_c[i] = S.mark_c[i] = S.counts[i];
        pb_clear(&S, 0, ne);
        for (int j = 0; j < P->noneofs; j++)
            S.oneof[j] = -1;
        const uint8_t *p = view.buf;
        int rc = pb_parse(&S, 0, p, p + view.len, 0);
        if (rc == PB_OK) {
            for (int32_t i = 0; i < ne; i++)
                if ((P->e[i].kind == PB_TIMESTAMP || P->e[i].kind == PB_DURATION) && S.has[i] &&
                    !pb_time_valid(&S, &P->e[i], i)) {
                    rc = PB_REFUSED;
                    break;
                }
        }
        int present = rc == PB_OK;
        if (!present) { /* what its repeated messages wrote taken back */
            for (int c = 0; c < P->ncols; c++)
                S.bufs[c].n = S.row_n[c];
            for (int32_t i = 0; i < ne; i++)
                S.counts[i] = S.row_c[i];
            pb_clear(&S, 0, ne);
        }
        ref[r] = (uint8_t)!present;
        int bad = 0;
        for (int j = 0; j < top->nchildren && !bad; j++)
            bad = pb_emit(&S, top->children[j], present) < 0;
        if (fast != NULL)
            PyBuffer_Release(&view);
        if (rc == PB_NOMEM)
            goto nomem;
        if (bad) { /* out of memory, or past 32-bit offsets: the caller reads the batch another way */
            if (PyErr_Occurred())
                goto done;
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    columns = PyList_New(P->ncols);
    if (columns == NULL)
        goto done;
    for (int c = 0; c < P->ncols; c++) {
        PyObject *b = PyBytes_FromStringAndSize(S.bufs[c].p ? S.bufs[c].p : "", S.bufs[c].n);
        if (b == NULL)
            goto done;
        PyList_SET_ITEM(columns, c, b);
        PyMem_Free(S.bufs[c].p);
        S.bufs[c].p = NULL;
    }
    result = PyTuple_Pack(2, columns, refused);
    goto done;
nomem:
    PyErr_NoMemory();
done:
    Py_XDECREF(columns);
    Py_XDECREF(refused);
    Py_XDECREF(fast);
    while (nspans > 0)
        PyBuffer_Release(&spans[--nspans]);
    if (S.bufs)
        for (int c = 0; c < P->ncols; c++)
            PyMem_Free(S.bufs[c].p);
    if (S.reps)
        for (int32_t i = 0; i < ne; i++)
            PyMem_Free(S.reps[i].v);
    PyMem_Free(S.slots);
    PyMem_Free(S.has);
    PyMem_Free(S.reps);
    PyMem_Free(S.oneof);
    PyMem_Free(S.bufs);
    PyMem_Free(S.counts);
    PyMem_Free(S.mark_c);
    PyMem_Free(S.row_c);
    PyMem_Free(S.mark_n);
    PyMem_Free(S.row_n);
    PyMem_Free(S.stack);
    PyMem_Free(S.sorted);
    return result;
}

/* ---- registry frames of a whole Arrow binary column (formats/registry/framing.py ``scan_prefix``) ----
 *
 * The fast path of framing.read_frame's prefix rule over every element of a binary (or large binary) Arrow
 * array, from its buffers: magic byte 0 and a 4-byte big-endian id above 0 (5 bytes at least), or magic
 * byte 1 and a 16-byte GUID (17 bytes at least); anything else is no frame. After a magic-0 frame, the
 * Protobuf message-index path framing.read_message_indexes would read there (a zig-zag varint count, a
 * count of 0 the path [0], then that many zig-zag varints; ByteUtils.readVarint: at most 5 bytes, the 5th
 * without its high bit) is measured too: the caller groups the values of a Protobuf schema id by those
 * bytes. */

typedef struct {
    Py_buffer validity, offsets, data;
    int has_validity, has_offsets, has_data;
    Py_ssize_t offset, n;
    int large;
} fs_column;

static void
fs_release(fs_column *c)
{
    if (c->has_validity)
        PyBuffer_Release(&c->validity);
    if (c->has_offsets)
        PyBuffer_Release(&c->offsets);
    if (c->has_data)
        PyBuffer_Release(&c->data);
}

/* obj's buffer into view (*has set), holding at least need items of width bytes */
static int
fs_buffer(PyObject *obj, Py_buffer *view, int *has, Py_ssize_t need, Py_ssize_t width, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0)
        return -1;
    *has = 1;
    if (need > view->len / width) {
        PyErr_Format(PyExc_ValueError, "%s buffer too short", what);
        return -1;
    }
    return 0;
}

/* the buffers of an Arrow binary array (validity | None, offsets, data | None), checked: every element's
 * offsets within the data */
static int
fs_open(fs_column *c, PyObject *validity, PyObject *offsets, PyObject *data, Py_ssize_t offset, Py_ssize_t n,
        int large)
{
    memset(c, 0, sizeof(*c));
    c->offset = offset;
    c->n = n;
    c->large = large;
    if (offset < 0 || n < 0 || offset > PY_SSIZE_T_MAX / 2 - n) {
        PyErr_SetString(PyExc_ValueError, "offset and length must be 0 or more");
        return -1;
    }
    if (validity != Py_None &&
        fs_buffer(validity, &c->validity, &c->has_validity, n ? (offset + n + 7) / 8 : 0, 1, "validity") < 0)
        return -1;
    if (fs_buffer(offsets, &c->offsets, &c->has_offsets, n ? offset + n + 1 : 0, large ? 8 : 4, "offsets") < 0)
        return -1;
    if (data != Py_None && fs_buffer(data, &c->data, &c->has_data, 0, 1, "data") < 0)
        return -1;
    Py_ssize_t size = c->has_data ? c->data.len : 0;
    for (Py_ssize_t i = 0; i <= (n ? n : -1); i++) {
        int64_t o;
        if (large)
            memcpy(&o, (const char *)c->offsets.buf + (offset + i) * 8, 8);
        else {
            int32_t o32;
            memcpy(&o32, (const char *)c->offsets.buf + (offset + i) * 4, 4);
            o = o32;
        }
        if (o < 0 || o > size) {
            PyErr_SetString(PyExc_ValueError, "an offset outside the data buffer");
            return -1;
        }
    }
    return 0;
}

static inline int64_t
fs_off(const fs_column *c, Py_ssize_t i)
{
    if (c->large) {
        int64_t o;
        memcpy(&o, (const char *)c->offsets.buf + (c->offset + i) * 8, 8);
        return o;
    }
    int32_t o;
    memcpy(&o, (const char *)c->offsets.buf + (c->offset + i) * 4, 4);
    return o;
}

static inline int
fs_valid(const fs_column *c, Py_ssize_t i)
{
    if (!c->has_validity)
        return 1;
    Py_ssize_t b = c->offset + i;
    return (((const uint8_t *)c->validity.buf)[b >> 3] >> (b & 7)) & 1;
}

/* the bytes of the message-index path at p (framing.read_message_indexes), -1 when it does not parse */
static Py_ssize_t
fs_indexes(const uint8_t *p, const uint8_t *end)
{
    /* zig-zag varints as ByteUtils.readVarint reads them (read_varint32: at most 5 bytes) */
    Py_ssize_t i = 0, n = end - p;
    int32_t count, ignored;
    if (read_varint32(p, &i, n, &count) != E_OK || count < 0 || count > n - i)
        return -1;
    for (int32_t k = 0; k < count; k++)
        if (read_varint32(p, &i, n, &ignored) != E_OK)
            return -1;
    return i;
}

/* frame_scan(validity, offsets, data, offset, n, large) -> (magic, ids, index_bytes, index_keys): bytes of
 * n int16 (the first byte where it starts a whole frame, any other first byte as it is, -1 for a null, an
 * empty element, a 0/1 shorter than its frame or a 0 whose id is 0 or less), n int32 (the id after a magic
 * 0, else 0), n int8 (after a magic 0: the bytes of the message-index path that follows, -1 when it does
 * not parse or takes more than 8 bytes; else -1) and n uint64 (those bytes, little-endian, 0 above them) */
static PyObject *
frame_scan(PyObject *self, PyObject *args)
{
    PyObject *validity, *offsets, *data;
    Py_ssize_t offset, n;
    int large;
    if (!PyArg_ParseTuple(args, "OOOnnp", &validity, &offsets, &data, &offset, &n, &large))
        return NULL;
    fs_column c;
    PyObject *magic = NULL, *ids = NULL, *ilen = NULL, *ikey = NULL, *result = NULL;
    if (fs_open(&c, validity, offsets, data, offset, n, large) < 0)
        goto done;
    magic = PyBytes_FromStringAndSize(NULL, n * 2);
    ids = PyBytes_FromStringAndSize(NULL, n * 4);
    ilen = PyBytes_FromStringAndSize(NULL, n);
    ikey = PyBytes_FromStringAndSize(NULL, n * 8);
    if (!magic || !ids || !ilen || !ikey)
        goto done;
    int16_t *m = (int16_t *)PyBytes_AS_STRING(magic);
    int32_t *id = (int32_t *)PyBytes_AS_STRING(ids);
    int8_t *il = (int8_t *)PyBytes_AS_STRING(ilen);
    uint64_t *ik = (uint64_t *)PyBytes_AS_STRING(ikey);
    const uint8_t *base = c.has_data ? (const uint8_t *)c.data.buf : NULL;
    int64_t prev = n ? fs_off(&c, 0) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = prev, e = fs_off(&c, i + 1);
        prev = e;
        m[i] = -1;
        id[i] = 0;
        il[i] = -1;
        ik[i] = 0;
        if (!fs_valid(&c, i) || e <= s)
            continue;
        const uint8_t *p = base + s;
        int64_t len = e - s;
        if (p[0] == 0) {
            if (len < 5)
                continue;
            uint32_t u = ((uint32_t)p[1] << 24) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 8) | p[4];
            int32_t v;
            memcpy(&v, &u, 4);
            if (v <= 0)
                continue;
            m[i] = 0;
            id[i] = v;
            Py_ssize_t k = fs_indexes(p + 5, p + len);
            if (k >= 0 && k <= 8) {
                il[i] = (int8_t)k;
                uint64_t key = 0;
                for (Py_ssize_t j = 0; j < k; j++)
                    key |= (uint64_t)p[5 + j] << (8 * j);
                ik[i] = key;
            }
        } else if (p[0] == 1) {
            if (len >= 17)
                m[i] = 1;
        } else
            m[i] = p[0];
    }
    result = PyTuple_Pack(4, magic, ids, ilen, ikey);
done:
    fs_release(&c);
    Py_XDECREF(magic);
    Py_XDECREF(ids);
    Py_XDECREF(ilen);
    Py_XDECREF(ikey);
    return result;
}

/* binary_slices(validity, offsets, data, offset, n, large, rows, start) -> list: for each row of rows (a
 * buffer of int64 indexes into the array) its element's bytes from start on (b"" past its end), None for a
 * null element */
static PyObject *
binary_slices(PyObject *self, PyObject *args)
{
    PyObject *validity, *offsets, *data, *rowsobj;
    Py_ssize_t offset, n, start;
    int large;
    if (!PyArg_ParseTuple(args, "OOOnnpOn", &validity, &offsets, &data, &offset, &n, &large, &rowsobj, &start))
        return NULL;
    fs_column c;
    Py_buffer rows;
    int has_rows = 0;
    PyObject *out = NULL;
    if (fs_open(&c, validity, offsets, data, offset, n, large) < 0)
        goto done;
    if (PyObject_GetBuffer(rowsobj, &rows, PyBUF_SIMPLE) < 0)
        goto done;
    has_rows = 1;
    if (start < 0) {
        PyErr_SetString(PyExc_ValueError, "start must be 0 or more");
        goto done;
    }
    Py_ssize_t m = rows.len / 8;
    out = PyList_New(m);
    if (out == NULL)
        goto done;
    const char *base = c.has_data ? (const char *)c.data.buf : "";
    for (Py_ssize_t j = 0; j < m; j++) {
        int64_t r;
        memcpy(&r, (const char *)rows.buf + j * 8, 8);
        if (r < 0 || r >= n) {
            PyErr_SetString(PyExc_IndexError, "a row outside the array");
            Py_CLEAR(out);
            goto done;
        }
        PyObject *item;
        if (!fs_valid(&c, (Py_ssize_t)r))
            item = Py_NewRef(Py_None);
        else {
            int64_t s = fs_off(&c, (Py_ssize_t)r), e = fs_off(&c, (Py_ssize_t)r + 1);
            int64_t from = s + start < e ? s + start : e;
            item = PyBytes_FromStringAndSize(e > from ? base + from : "", e > from ? e - from : 0);
            if (item == NULL) {
                Py_CLEAR(out);
                goto done;
            }
        }
        PyList_SET_ITEM(out, j, item);
    }
done:
    if (has_rows)
        PyBuffer_Release(&rows);
    fs_release(&c);
    return out;
}

static PyMethodDef methods[] = {
    {"index_real_entries", index_real_entries, METH_VARARGS, "index_real_entries(data, entry_size) -> real entries."},
    {"index_entry_checks", index_entry_checks, METH_VARARGS, "The first bad entry of an index's checks (see _speedups.c)."},
    {"index_cross_check", index_cross_check, METH_VARARGS, "The first index entry that does not match the walk (see _speedups.c)."},
    {"configure", configure, METH_VARARGS, "configure(Record, Header[, CREATE_TIME, LOG_APPEND_TIME]): learn the slot layout."},
    {"decode_records", decode_records, METH_VARARGS, "Decode the records of a v2 batch into Record objects."},
    {"configure_batch", configure_batch, METH_O, "configure_batch(RecordBatchV2): learn its slot layout."},
    {"walk_v2", walk_v2, METH_VARARGS, "walk_v2(buf, pos, limit, source, base_position, max) -> (batches, pos)."},
    {"configure_lz4", configure_lz4, METH_O, "configure_lz4(address of LZ4_decompress_safe | None)."},
    {"configure_window", configure_window, METH_O,
     "configure_window(window) -> previous: the most bytes decode_batch_columns decompresses an lz4 section to."},
    {"configure_limits", configure_limits, METH_O,
     "configure_limits(max_decompressed) -> previous: the most bytes an lz4 records section decodes to."},
    {"batch_records", batch_records, METH_VARARGS, "The records of the batch at buf[start:] (none/lz4)."},
    {"configure_crc32c", configure_crc32c, METH_O,
     "configure_crc32c(address of a crc32c(crc, data, length) | None) -> whether it passed the check."},
    {"configure_recovery", configure_recovery, METH_VARARGS, "configure_recovery(OffsetEntry, TimeEntry)."},
    {"recover_v2", recover_v2, METH_VARARGS, "The fast lane of recovery.rebuild_indexes (see _speedups.c)."},
    {"scan_v2", scan_v2, METH_VARARGS,
     "The GIL-free fast lane of checks.state.segment_walk.walk (see _speedups.c)."},
    {"crc_check_v2", crc_check_v2, METH_VARARGS,
     "crc_check_v2(buf, positions, first, end) -> index of the first batch whose CRC-32C fails, or end."},
    {"walk_read_v2", walk_read_v2, METH_VARARGS,
     "walk_read_v2(fd, size, buf, verify_crc, with_positions, max_batch, each=None, each_every=0) -> None | "
     "(batches, ...)."},
    {"check_records_v2", check_records_v2, METH_VARARGS,
     "check_records_v2(buf, positions, first, end) -> (i, code, errpos, index): the records check of --deep."},
    {"decode_batch_columns", decode_batch_columns, METH_VARARGS,
     "decode_batch_columns(buf, starts, sections, payload): many batches as Arrow-ready columns."},
    {"populate_read", (PyCFunction)(void (*)(void))populate_read, METH_VARARGS | METH_KEYWORDS,
     "populate_read(buf, advise=True, refused=0) -> whether madvise populated the pages (else they were read)."},
    {"list_folders", list_folders, METH_VARARGS,
     "list_folders(root, names) -> [(st_mode, st_uid, st_gid, [names]) | errno]: each folder root/name listed."},
    {"record_lines", record_lines, METH_VARARGS,
     "record_lines(buf, start, section, transaction_result) -> (text, count, first, last, gaps) | None: "
     "dump --deep's lines of a batch's records."},
    {"pb_plan", pb_plan_new, METH_VARARGS,
     "pb_plan(entries, ncols, noneofs) -> the compiled plan of a Protobuf message (protobuf_plan.py)."},
    {"pb_decode", pb_decode, METH_VARARGS,
     "pb_decode(plan, payloads | None[, data, starts, ends]) -> (column buffers, refused flags) | None."},
    {"frame_scan", frame_scan, METH_VARARGS,
     "frame_scan(validity, offsets, data, offset, n, large) -> registry frames of an Arrow binary column."},
    {"binary_slices", binary_slices, METH_VARARGS,
     "binary_slices(validity, offsets, data, offset, n, large, rows, start) -> the rows' bytes from start."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "logdoctor.formats._speedups", "C record decoder for v2 record batches.", -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    RecordError = PyErr_NewException("logdoctor.formats._speedups.RecordError", PyExc_ValueError, NULL);
    if (RecordError == NULL || PyModule_AddObjectRef(m, "RecordError", RecordError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
