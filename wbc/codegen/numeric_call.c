/* The per-call path of wbc's compiled numeric API (wbc.codegen.calls) in one C call.
 *
 * wbc_numeric_call is a CPython builtin function (METH_FASTCALL, made by PyCFunction_NewEx from
 * wbc_numeric_definition()) whose `self` is a tuple
 *     (address of a wbc_call, validate, new result array, refuse, bad_out, ...objects kept alive)
 * Per call: the result array is made first (`new()`: an empty array of the output's shape and
 * layout), or, given one argument more than the kernel's inputs, that last argument is the result
 * (`out`: a writable float64 array of the output's exact shape, Fortran-contiguous; anything else
 * calls `bad_out(out)`, which raises); then, with the GIL held throughout and no Python code run (so calls from several
 * threads take turns without a lock: numpy's own copy would release the GIL for a large array,
 * letting another thread's call overwrite the output half-copied), every argument is read through
 * the buffer protocol and must be a float64 array, Fortran-contiguous (a vector: any contiguous
 * one), of its input's exact shape; they are copied into the kernel's input buffers, the kernel's
 * CasADi-generated C entry point is called, and when its validity scalar (last output) is below
 * infinity the output is copied into the result array, which is returned. Anything else (another
 * shape, a list, another dtype, a validity that is not finite) calls `validate(*args)`, which
 * raises the eager API's error or returns the arguments converted (a tuple of arrays that fit);
 * those are evaluated the same way without reading the validity (a finite input whose squares
 * overflow is computed, not refused); `refuse(*converted)` raises if they still do not fit.
 *
 * No Python header is needed: the few functions used are declared in stable_abi.h from CPython's
 * stable ABI (the layout of Py_buffer and PyMethodDef is part of it). Not used on a free-threaded
 * CPython (the caller keeps its locked Python path there).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "stable_abi.h"

#define WBC_MAX_INPUTS 8

typedef long long wbc_int;
typedef int (*wbc_eval)(const double **arg, double **res, wbc_int *iw, double *w, int mem);

typedef struct {
    wbc_eval eval;
    const double **arg; /* the kernel's argument array (at least n_in entries) */
    double **res;       /* its result array */
    wbc_int *iw;        /* its work vectors */
    double *w;
    const double *check; /* the validity scalar (the last output) */
    int mem;             /* the kernel's memory slot (checked out once) */
    int n_in;
    double *out;                       /* the output buffer (the first output) */
    intptr_t out_bytes;                /* its size */
    intptr_t out_rows, out_cols;       /* its shape: (rows,) or (rows, cols) */
    int out_ndim;
    double *in[WBC_MAX_INPUTS];        /* the input buffers */
    intptr_t rows[WBC_MAX_INPUTS];     /* each input's shape: (rows,) or (rows, cols) */
    intptr_t cols[WBC_MAX_INPUTS];
    int ndim[WBC_MAX_INPUTS];
} wbc_call;


/* Whether view is a float64 array of input k's shape. */
static int fits(const wbc_call *c, int k, const wbc_py_buffer *view) {
    if (view->itemsize != (intptr_t)sizeof(double) || !view->format || view->format[0] != 'd' || view->format[1] != 0)
        return 0;
    if (view->ndim != c->ndim[k] || view->shape[0] != c->rows[k]) return 0;
    return c->ndim[k] == 1 || view->shape[1] == c->cols[k];
}

/* Whether view (a writable float64 buffer) has the output's exact shape. */
static int fits_out(const wbc_call *c, const wbc_py_buffer *view) {
    if (view->itemsize != (intptr_t)sizeof(double) || !view->format || view->format[0] != 'd' || view->format[1] != 0)
        return 0;
    if (view->ndim != c->out_ndim || view->shape[0] != c->out_rows) return 0;
    return c->out_ndim == 1 || view->shape[1] == c->out_cols;
}

/* The caller's `out` (a new reference) when it fits, else NULL with bad_out's error set. */
static void *given_out(const wbc_call *c, void *self, void *out) {
    wbc_py_buffer view;
    if (PyObject_GetBuffer(out, &view, (WBC_PYBUF_F_CONTIGUOUS | WBC_PYBUF_FORMAT | WBC_PYBUF_WRITABLE)) == 0) {
        const int ok = fits_out(c, &view);
        PyBuffer_Release(&view);
        if (ok) {
            Py_IncRef(out);
            return out;
        }
    } else {
        PyErr_Clear();
    }
    void *raised = PyObject_Vectorcall(PyTuple_GetItem(self, 4), &out, 1, (void *)0);
    if (raised) { /* bad_out must raise */
        Py_DecRef(raised);
        PyErr_SetString(PyExc_RuntimeError, "wbc: a numeric call's out array does not fit");
    }
    return (void *)0;
}

/* Copies args into the kernel's inputs and evaluates: 1 done (views released), 0 an argument does
 * not fit or the kernel failed (views released, no Python error left set). */
static int run(const wbc_call *c, void *const *args, intptr_t nargs, wbc_py_buffer *views) {
    if (nargs != c->n_in) return 0;
    int held = 0, ok = 1;
    for (; held < nargs; ++held) {
        if (PyObject_GetBuffer(args[held], &views[held], (WBC_PYBUF_F_CONTIGUOUS | WBC_PYBUF_FORMAT)) != 0) {
            PyErr_Clear();
            ok = 0;
            break;
        }
        if (!fits(c, held, &views[held])) {
            ++held;
            ok = 0;
            break;
        }
    }
    if (ok) {
        for (int k = 0; k < c->n_in; ++k) memmove(c->in[k], views[k].buf, (size_t)views[k].len);
        ok = c->eval(c->arg, c->res, c->iw, c->w, c->mem) == 0;
    }
    for (int k = 0; k < held; ++k) PyBuffer_Release(&views[k]);
    return ok;
}

/* Copies the output into result (made before the kernel ran) and returns it, or NULL (released). */
static void *copy_out(const wbc_call *c, void *result) {
    wbc_py_buffer view;
    if (PyObject_GetBuffer(result, &view, (WBC_PYBUF_F_CONTIGUOUS | WBC_PYBUF_FORMAT | WBC_PYBUF_WRITABLE)) != 0) {
        Py_DecRef(result);
        return (void *)0;
    }
    const intptr_t bytes = view.len;
    if (bytes == c->out_bytes) memcpy(view.buf, c->out, (size_t)bytes);
    PyBuffer_Release(&view);
    if (bytes == c->out_bytes) return result;
    Py_DecRef(result);
    PyErr_SetString(PyExc_RuntimeError, "wbc: a numeric call's result array is not the size of its output");
    return (void *)0;
}

static void *wbc_numeric_call(void *self, void *const *args, intptr_t nargs) {
    const wbc_call *c = (const wbc_call *)PyLong_AsVoidPtr(PyTuple_GetItem(self, 0));
    void *result;
    if (nargs == c->n_in + 1) { /* out= given: the last argument */
        result = given_out(c, self, args[--nargs]);
    } else {
        result = PyObject_CallNoArgs(PyTuple_GetItem(self, 2));
    }
    if (!result) return (void *)0;
    wbc_py_buffer views[WBC_MAX_INPUTS];
    if (run(c, args, nargs, views) && *c->check < INFINITY) return copy_out(c, result);
    void *converted = PyObject_Vectorcall(PyTuple_GetItem(self, 1), args, (size_t)nargs, (void *)0);
    if (!converted) { /* validate raised */
        Py_DecRef(result);
        return (void *)0;
    }
    const intptr_t n = PyTuple_Size(converted);
    void *items[WBC_MAX_INPUTS];
    void *answer = (void *)0;
    if (n >= 0 && n <= WBC_MAX_INPUTS) {
        for (intptr_t k = 0; k < n; ++k) items[k] = PyTuple_GetItem(converted, k);
        if (run(c, items, n, views)) {
            answer = copy_out(c, result);
            result = (void *)0;
        } else {
            answer = PyObject_Vectorcall(PyTuple_GetItem(self, 3), items, (size_t)n, (void *)0);
        }
    }
    if (result) Py_DecRef(result);
    Py_DecRef(converted);
    return answer;
}

/* A compiled kernel's call (wbc.codegen.kernel.Kernel.__call__) in one C call: `self` is a tuple
 *     (address of a wbc_call, fallback, outputs, ...objects kept alive)
 * Arguments that fit (as above) are copied into the kernel's inputs, the kernel is evaluated and
 * `outputs` (the list of the kernel's output arrays) is returned; no validity scalar is read.
 * Anything else (or a kernel that fails) calls `fallback(*args)`, which converts or raises. */
static void *wbc_kernel_call(void *self, void *const *args, intptr_t nargs) {
    const wbc_call *c = (const wbc_call *)PyLong_AsVoidPtr(PyTuple_GetItem(self, 0));
    wbc_py_buffer views[WBC_MAX_INPUTS];
    if (run(c, args, nargs, views)) {
        void *outputs = PyTuple_GetItem(self, 2);
        Py_IncRef(outputs);
        return outputs;
    }
    return PyObject_Vectorcall(PyTuple_GetItem(self, 1), args, (size_t)nargs, (void *)0);
}

static wbc_method_def wbc_method = {"call", (void *)wbc_numeric_call, WBC_METH_FASTCALL,
                                    "a compiled numeric call (wbc.codegen.calls)"};
static wbc_method_def wbc_kernel_method = {"kernel_call", (void *)wbc_kernel_call, WBC_METH_FASTCALL,
                                           "a compiled kernel's call (wbc.codegen.kernel.Kernel)"};

/* The method definitions, static: they outlive every function made from them. */
wbc_method_def *wbc_numeric_definition(void) { return &wbc_method; }
wbc_method_def *wbc_kernel_definition(void) { return &wbc_kernel_method; }

/* sizeof(wbc_call), for the caller's layout check. */
int wbc_numeric_call_size(void) { return (int)sizeof(wbc_call); }
