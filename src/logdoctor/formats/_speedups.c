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
 * The pure-Python fallback in batch_v2.py gives identical results; tests compare them.
 * Errors are raised as RecordError(code, position, record_index); batch_v2.py turns them into
 * logdoctor.errors.CorruptRecordError with the file name and byte position.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* error codes, mirrored in batch_v2.py (_RECORD_ERRORS) */
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

typedef struct {
    int64_t ts_delta;
    int32_t offset_delta;
    Py_ssize_t key_pos;
    int32_t key_len;
    Py_ssize_t value_pos;
    int32_t value_len;
    int32_t header_count;
    Py_ssize_t headers_pos;
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
    for (int32_t h = 0; h < rec->header_count; h++) {
        int32_t kl, vl;
        field = i;
        CHECK(read_varint32(p, &i, rend, &kl));
        if (kl < 0) {
            *errpos = field;
            return E_BAD_HEADER_KEY;
        }
        if (kl > rend - i) {
            *errpos = field;
            return E_FIELD_OVERRUN;
        }
        i += kl;
        field = i;
        CHECK(read_varint32(p, &i, rend, &vl));
        if (vl >= 0) {
            if (vl > rend - i) {
                *errpos = field;
                return E_FIELD_OVERRUN;
            }
            i += vl;
        }
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
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &rt, &PyType_Type, &ht))
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

static PyObject *
build_headers(const uint8_t *p, Py_ssize_t i, int32_t count)
{
    PyObject *tuple = PyTuple_New(count);
    if (tuple == NULL)
        return NULL;
    for (int32_t h = 0; h < count; h++) {
        int32_t kl, vl;
        /* already validated by parse_record */
        read_varint32(p, &i, PY_SSIZE_T_MAX, &kl);
        PyObject *key = PyUnicode_DecodeUTF8((const char *)p + i, kl, "replace");
        i += kl;
        read_varint32(p, &i, PY_SSIZE_T_MAX, &vl);
        PyObject *value = bytes_or_none(p, i, vl);
        if (vl > 0)
            i += vl;
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

/* decode_records(data, pos, end, count, base_offset, base_timestamp, log_append_time | None,
 *                base_sequence, timestamp_type) -> list[Record] */
static PyObject *
decode_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, end, count;
    long long base_offset, base_timestamp;
    PyObject *lat_obj, *ts_type;
    int base_sequence;
    int64_t lat = 0;
    int use_lat;

    if (record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*nnnLLOiO", &view, &pos, &end, &count, &base_offset, &base_timestamp,
                          &lat_obj, &base_sequence, &ts_type))
        return NULL;
    use_lat = lat_obj != Py_None;
    if (use_lat) {
        lat = PyLong_AsLongLong(lat_obj);
        if (lat == -1 && PyErr_Occurred())
            goto fail_view;
    }
    if (pos < 0 || end > view.len || pos > end) {
        PyErr_SetString(PyExc_ValueError, "bad bounds");
        goto fail_view;
    }
    if (count < 0) {
        raise_record_error(E_BAD_COUNT, pos, 0);
        goto fail_view;
    }
    /* each record takes at least 7 bytes: never allocate more than the data can hold */
    PyObject *list = PyList_New(0);
    if (list == NULL)
        goto fail_view;
    const uint8_t *p = (const uint8_t *)view.buf;
    PyObject *lat_long = NULL;
    if (use_lat) {
        lat_long = PyLong_FromLongLong(lat);
        if (lat_long == NULL)
            goto fail_list;
    }
    for (Py_ssize_t n = 0; n < count; n++) {
        rec_t rec;
        Py_ssize_t errpos;
        int rc = parse_record(p, &pos, end, &rec, &errpos);
        if (rc) {
            raise_record_error(rc, errpos, n);
            goto fail_lat;
        }
        PyObject *o = PyLong_FromLongLong((long long)((uint64_t)base_offset + (uint64_t)(int64_t)rec.offset_delta));
        PyObject *ts;
        if (use_lat) {
            Py_INCREF(lat_long);
            ts = lat_long;
        } else {
            ts = PyLong_FromLongLong((long long)((uint64_t)base_timestamp + (uint64_t)rec.ts_delta));
        }
        PyObject *key = bytes_or_none(p, rec.key_pos, rec.key_len);
        PyObject *value = bytes_or_none(p, rec.value_pos, rec.value_len);
        PyObject *headers = rec.header_count ? build_headers(p, rec.headers_pos, rec.header_count)
                                             : PyTuple_New(0);
        PyObject *seq = PyLong_FromLong(base_sequence >= 0 ? increment_sequence(base_sequence, rec.offset_delta)
                                                            : -1);
        PyObject *r = (o && ts && key && value && headers && seq) ? record_type->tp_alloc(record_type, 0) : NULL;
        if (r == NULL) {
            Py_XDECREF(o);
            Py_XDECREF(ts);
            Py_XDECREF(key);
            Py_XDECREF(value);
            Py_XDECREF(headers);
            Py_XDECREF(seq);
            goto fail_lat;
        }
        Py_INCREF(ts_type);
        SET_SLOT(r, rec_off[0], o);
        SET_SLOT(r, rec_off[1], ts);
        SET_SLOT(r, rec_off[2], key);
        SET_SLOT(r, rec_off[3], value);
        SET_SLOT(r, rec_off[4], headers);
        SET_SLOT(r, rec_off[5], ts_type);
        SET_SLOT(r, rec_off[6], seq);
        int err = PyList_Append(list, r);
        Py_DECREF(r);
        if (err < 0)
            goto fail_lat;
    }
    if (pos != end) {
        raise_record_error(E_TRAILING, pos, count);
        goto fail_lat;
    }
    Py_XDECREF(lat_long);
    PyBuffer_Release(&view);
    return list;
fail_lat:
    Py_XDECREF(lat_long);
fail_list:
    Py_DECREF(list);
fail_view:
    PyBuffer_Release(&view);
    return NULL;
}

/* decode_columns(data, pos, end, count, base_offset, base_timestamp, log_append_time | None)
 *   -> (offsets int64[n], timestamps int64[n], key_lens int32[n], key_data, value_lens int32[n],
 *       value_data, header_counts int32[n], hkey_lens int32[h], hkey_data, hvalue_lens int32[h],
 *       hvalue_data)   all bytes, native byte order; a length of -1 is null. */
static PyObject *
decode_columns(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, end, count;
    long long base_offset, base_timestamp;
    PyObject *lat_obj;
    PyObject *out[11] = {NULL};
    PyObject *result = NULL;

    if (!PyArg_ParseTuple(args, "y*nnnLLO", &view, &pos, &end, &count, &base_offset, &base_timestamp,
                          &lat_obj))
        return NULL;
    int use_lat = lat_obj != Py_None;
    int64_t lat = 0;
    if (use_lat) {
        lat = PyLong_AsLongLong(lat_obj);
        if (lat == -1 && PyErr_Occurred())
            goto done;
    }
    if (pos < 0 || end > view.len || pos > end) {
        PyErr_SetString(PyExc_ValueError, "bad bounds");
        goto done;
    }
    if (count < 0) {
        raise_record_error(E_BAD_COUNT, pos, 0);
        goto done;
    }
    Py_ssize_t span = end - pos;
    /* a record takes at least 7 bytes (length, attributes, 2 deltas, key, value, header count) */
    if (count > span / 7 + 1) {
        /* find the exact error by parsing as far as the data goes */
        const uint8_t *p = (const uint8_t *)view.buf;
        for (Py_ssize_t n = 0;; n++) {
            rec_t rec;
            Py_ssize_t errpos;
            int rc = parse_record(p, &pos, end, &rec, &errpos);
            if (rc) {
                raise_record_error(rc, errpos, n);
                goto done;
            }
        }
    }
    /* a header takes at least 2 bytes */
    Py_ssize_t max_headers = span / 2 + 1;
    out[0] = PyBytes_FromStringAndSize(NULL, count * 8);
    out[1] = PyBytes_FromStringAndSize(NULL, count * 8);
    out[2] = PyBytes_FromStringAndSize(NULL, count * 4);
    out[3] = PyBytes_FromStringAndSize(NULL, span);
    out[4] = PyBytes_FromStringAndSize(NULL, count * 4);
    out[5] = PyBytes_FromStringAndSize(NULL, span);
    out[6] = PyBytes_FromStringAndSize(NULL, count * 4);
    out[7] = PyBytes_FromStringAndSize(NULL, max_headers * 4);
    out[8] = PyBytes_FromStringAndSize(NULL, span);
    out[9] = PyBytes_FromStringAndSize(NULL, max_headers * 4);
    out[10] = PyBytes_FromStringAndSize(NULL, span);
    for (int k = 0; k < 11; k++)
        if (out[k] == NULL)
            goto done;
    {
        const uint8_t *p = (const uint8_t *)view.buf;
        int64_t *offsets = (int64_t *)PyBytes_AS_STRING(out[0]);
        int64_t *timestamps = (int64_t *)PyBytes_AS_STRING(out[1]);
        int32_t *key_lens = (int32_t *)PyBytes_AS_STRING(out[2]);
        char *key_data = PyBytes_AS_STRING(out[3]);
        int32_t *value_lens = (int32_t *)PyBytes_AS_STRING(out[4]);
        char *value_data = PyBytes_AS_STRING(out[5]);
        int32_t *header_counts = (int32_t *)PyBytes_AS_STRING(out[6]);
        int32_t *hkey_lens = (int32_t *)PyBytes_AS_STRING(out[7]);
        char *hkey_data = PyBytes_AS_STRING(out[8]);
        int32_t *hvalue_lens = (int32_t *)PyBytes_AS_STRING(out[9]);
        char *hvalue_data = PyBytes_AS_STRING(out[10]);
        Py_ssize_t kd = 0, vd = 0, hkd = 0, hvd = 0, nh = 0;
        for (Py_ssize_t n = 0; n < count; n++) {
            rec_t rec;
            Py_ssize_t errpos;
            int rc = parse_record(p, &pos, end, &rec, &errpos);
            if (rc) {
                raise_record_error(rc, errpos, n);
                goto done;
            }
            offsets[n] = (int64_t)((uint64_t)base_offset + (uint64_t)(int64_t)rec.offset_delta);
            timestamps[n] = use_lat ? lat : (int64_t)((uint64_t)base_timestamp + (uint64_t)rec.ts_delta);
            key_lens[n] = rec.key_len < 0 ? -1 : rec.key_len;
            if (rec.key_len > 0) {
                memcpy(key_data + kd, p + rec.key_pos, rec.key_len);
                kd += rec.key_len;
            }
            value_lens[n] = rec.value_len < 0 ? -1 : rec.value_len;
            if (rec.value_len > 0) {
                memcpy(value_data + vd, p + rec.value_pos, rec.value_len);
                vd += rec.value_len;
            }
            header_counts[n] = rec.header_count;
            Py_ssize_t i = rec.headers_pos;
            for (int32_t h = 0; h < rec.header_count; h++) {
                int32_t kl, vl;
                read_varint32(p, &i, PY_SSIZE_T_MAX, &kl);
                memcpy(hkey_data + hkd, p + i, kl);
                hkd += kl;
                i += kl;
                hkey_lens[nh] = kl;
                read_varint32(p, &i, PY_SSIZE_T_MAX, &vl);
                hvalue_lens[nh] = vl < 0 ? -1 : vl;
                if (vl > 0) {
                    memcpy(hvalue_data + hvd, p + i, vl);
                    hvd += vl;
                    i += vl;
                }
                nh++;
            }
        }
        if (pos != end) {
            raise_record_error(E_TRAILING, pos, count);
            goto done;
        }
        if (_PyBytes_Resize(&out[3], kd) < 0 || _PyBytes_Resize(&out[5], vd) < 0 ||
            _PyBytes_Resize(&out[7], nh * 4) < 0 || _PyBytes_Resize(&out[8], hkd) < 0 ||
            _PyBytes_Resize(&out[9], nh * 4) < 0 || _PyBytes_Resize(&out[10], hvd) < 0)
            goto done;
    }
    result = PyTuple_New(11);
    if (result == NULL)
        goto done;
    for (int k = 0; k < 11; k++) {
        PyTuple_SET_ITEM(result, k, out[k]);
        out[k] = NULL;
    }
done:
    for (int k = 0; k < 11; k++)
        Py_XDECREF(out[k]);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "configure(Record, Header): learn the slot layout."},
    {"decode_records", decode_records, METH_VARARGS, "Decode the records of a v2 batch into Record objects."},
    {"decode_columns", decode_columns, METH_VARARGS, "Decode the records of a v2 batch into columns."},
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
