/* A task's set_target in one C call (wbc.control.target_call).
 *
 * wbc_target_set is a CPython builtin function (METH_FASTCALL | METH_KEYWORDS, made by
 * PyCFunction_NewEx from wbc_target_definition()) whose `self` is a tuple
 *     (address of a wbc_target, the task's Python set_target, ...objects kept alive)
 * With the GIL held throughout: each positional argument (at most WBC_TARGET_ARGS) is either None
 * (where the task allows it: zeros) or read through the buffer protocol (any strides) as a float64
 * array of the expected shape, and the entries the task keeps are gathered into the staging buffer;
 * the slots no argument feeds are zeroed; every staged number must be finite and the task's target
 * check must pass (a rotation: orthonormal with determinant +1 within a tight tolerance; unit parts:
 * norms within the tolerance; a transform's last row: exactly (0, 0, 0, 1)); then the staging buffer is copied where the controller's kernel
 * reads it, and None is returned. Anything else (keyword arguments, another shape or dtype, a
 * non-finite number, a borderline or bad rotation, a non-unit quaternion) calls the task's Python
 * set_target with the same arguments: it converts, decides, or raises naming the task and the
 * argument, and it alone commits then (all or nothing: a refused target leaves the task as it was).
 *
 * No Python header is needed (stable_abi.h; see wbc/codegen/builtins.py).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "stable_abi.h"

#define WBC_TARGET_ARGS 3
#define WBC_MAX_UNIT 64

typedef struct {
    int n_args;                        /* positional arguments the fast path takes */
    int ndim[WBC_TARGET_ARGS];         /* each argument's shape */
    intptr_t rows[WBC_TARGET_ARGS];
    intptr_t cols[WBC_TARGET_ARGS];
    int none_ok[WBC_TARGET_ARGS];      /* None allowed: its entries are zeros */
    int count[WBC_TARGET_ARGS];        /* entries gathered from each argument */
    const int *row_of[WBC_TARGET_ARGS]; /* source element (row, col) of each entry */
    const int *col_of[WBC_TARGET_ARGS];
    double *dst[WBC_TARGET_ARGS];      /* where each argument's entries are staged */
    double *stage;                     /* the whole staging buffer, zeroed where no argument feeds it */
    const int *zero_at;                /* the staged entries no argument feeds */
    int n_zero;
    int n_stage;
    double *live; /* the parameters the kernel reads (n_stage entries) */
    int rotation; /* staged offset of a rotation's 9 columns to check, or -1 */
    int n_unit;   /* unit parts (quaternions, (cos, sin) pairs): staged [start, stop) */
    int unit_start[WBC_MAX_UNIT];
    int unit_stop[WBC_MAX_UNIT];
    double unit_tolerance;
    void *none; /* Py_None */
    int homogeneous[WBC_TARGET_ARGS]; /* a (4, 4) transform: its last row exactly (0, 0, 0, 1) */
} wbc_target;


/* Gathers argument k into its staging slice: 1 done, 0 it does not fit (no Python error left). */
static int gather(const wbc_target *t, int k, void *arg) {
    if (arg == t->none) {
        if (!t->none_ok[k]) return 0;
        for (int e = 0; e < t->count[k]; ++e) t->dst[k][e] = 0.0;
        return 1;
    }
    wbc_py_buffer view;
    if (PyObject_GetBuffer(arg, &view, (WBC_PYBUF_STRIDES | WBC_PYBUF_FORMAT)) != 0) {
        PyErr_Clear();
        return 0;
    }
    int ok = view.itemsize == (intptr_t)sizeof(double) && view.format && view.format[0] == 'd' &&
             view.format[1] == 0 && view.ndim == t->ndim[k] && view.shape[0] == t->rows[k] &&
             (view.ndim == 1 || view.shape[1] == t->cols[k]) && !view.suboffsets;
    if (ok) {
        const char *base = (const char *)view.buf;
        const intptr_t s0 = view.strides[0], s1 = view.ndim == 2 ? view.strides[1] : 0;
        for (int e = 0; e < t->count[k]; ++e) {
            double x;
            memcpy(&x, base + s0 * t->row_of[k][e] + s1 * t->col_of[k][e], sizeof(double));
            t->dst[k][e] = x;
        }
        for (int c = 0; ok && t->homogeneous[k] && c < 4; ++c) {
            double x;
            memcpy(&x, base + s0 * 3 + s1 * c, sizeof(double));
            ok = x == (c == 3 ? 1.0 : 0.0);
        }
    }
    PyBuffer_Release(&view);
    return ok;
}

/* Whether 9 numbers (columns) are clearly a rotation (as tasks/frame.py's _RotationCheck). */
static int is_rotation(const double *r) {
    const double a0 = r[0], a1 = r[1], a2 = r[2], b0 = r[3], b1 = r[4], b2 = r[5], c0 = r[6], c1 = r[7], c2 = r[8];
    const double aa = a0 * a0 + a1 * a1 + a2 * a2 - 1.0, bb = b0 * b0 + b1 * b1 + b2 * b2 - 1.0,
                 cc = c0 * c0 + c1 * c1 + c2 * c2 - 1.0;
    const double ab = a0 * b0 + a1 * b1 + a2 * b2, ac = a0 * c0 + a1 * c1 + a2 * c2, bc = b0 * c0 + b1 * c1 + b2 * c2;
    const double gram = aa * aa + bb * bb + cc * cc + 2.0 * (ab * ab + ac * ac + bc * bc);
    const double det = c0 * (a1 * b2 - a2 * b1) + c1 * (a2 * b0 - a0 * b2) + c2 * (a0 * b1 - a1 * b0);
    return gram <= 1e-12 && fabs(det - 1.0) <= 1e-6;
}

static int stage(const wbc_target *t, void *const *args, intptr_t nargs) {
    if (nargs < 1 || nargs > t->n_args) return 0;
    for (int k = 0; k < t->n_args; ++k) {
        if (!gather(t, k, k < nargs ? args[k] : t->none)) return 0;
    }
    for (int e = 0; e < t->n_zero; ++e) t->stage[t->zero_at[e]] = 0.0;
    for (int e = 0; e < t->n_stage; ++e) {
        if (!isfinite(t->stage[e])) return 0;
    }
    if (t->rotation >= 0 && !is_rotation(t->stage + t->rotation)) return 0;
    for (int u = 0; u < t->n_unit; ++u) {
        double norm2 = 0.0;
        for (int e = t->unit_start[u]; e < t->unit_stop[u]; ++e) norm2 += t->stage[e] * t->stage[e];
        if (!(fabs(sqrt(norm2) - 1.0) <= t->unit_tolerance)) return 0;
    }
    return 1;
}

static void *wbc_target_set(void *self, void *const *args, intptr_t nargs, void *kwnames) {
    const wbc_target *t = (const wbc_target *)PyLong_AsVoidPtr(PyTuple_GetItem(self, 0));
    if (!kwnames && stage(t, args, nargs)) {
        memcpy(t->live, t->stage, sizeof(double) * (size_t)t->n_stage);
        Py_IncRef(t->none);
        return t->none;
    }
    return PyObject_Vectorcall(PyTuple_GetItem(self, 1), args, (size_t)nargs, kwnames);
}

static wbc_method_def wbc_target_method = {"set_target", (void *)wbc_target_set, (WBC_METH_FASTCALL | WBC_METH_KEYWORDS),
                                           "the task's set_target in one C call (wbc.control.target_call)"};

/* The method definition, static: it outlives every function made from it. */
wbc_method_def *wbc_target_definition(void) { return &wbc_target_method; }

/* sizeof(wbc_target), for the caller's layout check. */
int wbc_target_size(void) { return (int)sizeof(wbc_target); }
