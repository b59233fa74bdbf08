/* The part of CPython's stable ABI that wbc's hand-written builtins call (numeric_call.c,
 * ../control/target_call.c): no Python.h is needed (it is often not installed). The layouts of
 * Py_buffer and PyMethodDef and the flag values below are part of the stable ABI.
 *
 * wbc.codegen.builtins puts this file's text in place of the `#include "stable_abi.h"` line before
 * compiling (the kernel cache compiles one source text); compiled by hand: -I wbc/codegen.
 */
#ifndef WBC_STABLE_ABI_H
#define WBC_STABLE_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    void *buf;
    void *obj;
    intptr_t len, itemsize; /* Py_ssize_t */
    int readonly, ndim;
    char *format;
    intptr_t *shape, *strides, *suboffsets;
    void *internal;
} wbc_py_buffer;

typedef struct {
    const char *name;
    void *method;
    int flags;
    const char *doc;
} wbc_method_def;

int PyObject_GetBuffer(void *obj, wbc_py_buffer *view, int flags);
void PyBuffer_Release(wbc_py_buffer *view);
void PyErr_Clear(void);
void PyErr_SetString(void *exception, const char *message);
extern void *PyExc_RuntimeError;
void *PyTuple_GetItem(void *tuple, intptr_t index);
intptr_t PyTuple_Size(void *tuple);
void *PyLong_AsVoidPtr(void *number);
void *PyObject_CallNoArgs(void *callable);
void *PyObject_Vectorcall(void *callable, void *const *args, size_t nargsf, void *kwnames);
void Py_IncRef(void *object);
void Py_DecRef(void *object);

/* PyBUF_* request flags */
#define WBC_PYBUF_WRITABLE 0x0001
#define WBC_PYBUF_FORMAT 0x0004
#define WBC_PYBUF_ND 0x0008
#define WBC_PYBUF_STRIDES (0x0010 | WBC_PYBUF_ND)
#define WBC_PYBUF_F_CONTIGUOUS (0x0040 | WBC_PYBUF_STRIDES)
/* METH_* calling conventions */
#define WBC_METH_KEYWORDS 0x0002
#define WBC_METH_FASTCALL 0x0080

#endif
