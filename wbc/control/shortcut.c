/* The controller's common step in one call: the input checks, the kernel, the equality-constrained
 * least squares by elimination through the Delassus matrix, the feasibility check C u <= d, and the
 * command (q'' = a0 + Bhat u, the task errors, the contacts' normal forces).
 *
 * The only implementation of this shortcut (wbc.control.qp.least_squares_by_elimination and
 * Layout.feasible are its numpy references in the tests). Compiled once per machine through the
 * project's kernel cache (wbc.control.shortcut_library) and called through ctypes with one pointer;
 * the library exports the struct's size, its fields' offsets and the return codes (wbc_abi_*), which
 * the Python side checks against its own declaration when it loads the library. The dense products
 * and the factorizations are the blocked loops below, for hierarchy.c's levels too (at these sizes,
 * a dozen forces and a few dozen actuators, a BLAS or LAPACK call's overhead costs more than its
 * arithmetic: on Talos standing the shortcut went from 7.4 to 5.5 us once its dgemm, dsyrk, dgemv
 * and dpotrf calls were replaced); the kernel is the CasADi-generated C function of the controller's
 * compiled library (its address and its argument arrays are passed in the struct too).
 *
 * Problem (all matrices column-major, as the kernel writes them):
 *   minimize  1/2 |A u - b|^2 + 1/2 sum_i r_i u_i^2,   r_i = reg |A[:, i]|^2 + 1e-12
 *   subject to E_x x + Lam f = b_eq,   u = (x, f), x: p actuators, f: m contact forces,
 * Lam = A_eq[:, p:] symmetric positive definite (the Delassus matrix).
 * f = Lam^-1 (b_eq - E_x x) is substituted: with X = Lam^-1 [E_x, b_eq] (m, p+1) and
 * S = [[A_x, b] - A_f X; diag(sqrt(r_f)) X] (k+m, p+1),  H = S_x^T S_x + diag(r_x) (p, p),
 * g = S_x^T S_b, x = H^-1 g, f = X_b - X_x x.
 *
 * The rows of C u <= d are of four kinds: general constant rows (only columns c0 .. c0+nspan-1 are
 * nonzero: Cg, compressed), unit rows (+-u_j: bounds), traced rows (the kernel's G) and rows of Bhat
 * (+-Bhat[i, :]: the joint limits' acceleration bounds, read from the kernel's Bhat, not copied).
 * The cost rows of a posture task are scaled rows of Bhat too: assembled from Bhat before the least
 * squares (assemble_costs), the kernel outputs only their scales and right-hand sides.
 *
 * wbc_shortcut returns WBC_FEASIBLE: u is finite and C u <= d holds (u is the QP's solution);
 * WBC_INFEASIBLE: u is finite but some row of C u <= d fails (Cu holds the products); WBC_FAILED: a
 * factorization failed or u is not finite. wbc_step returns the same codes, or WBC_BAD_INPUT: q or v
 * is not finite, or a unit-norm part of q is not (the caller names the culprit), or
 * WBC_KERNEL_FAILED: the kernel failed; after WBC_FEASIBLE, out holds the command.
 *
 * Built with WBC_WITH_PYTHON (CPython's headers found), it also defines wbc_step_objects, which
 * reads q and v from Python objects through the buffer protocol.
 */
#ifdef WBC_WITH_PYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#endif
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

enum wbc_code { WBC_FEASIBLE, WBC_INFEASIBLE, WBC_FAILED, WBC_BAD_INPUT, WBC_KERNEL_FAILED, WBC_NOT_VECTORS };

typedef int kernel_t(const double **, double **, long long *, double *, int);

typedef struct {
    int k, p, m;          /* cost rows, actuator variables, force variables (= equality rows) */
    int nc;               /* rows of C u <= d */
    int ng, c0, nspan;    /* general constant rows, their first nonzero column and column count */
    int nb;               /* unit rows */
    int nt;               /* traced rows */
    int nv, ne, ncontact; /* command: velocity size, task errors, contacts with a normal force */
    double reg;           /* relative regularization */
    const double *A;      /* (k, p+m) */
    const double *b;      /* (k,) */
    const double *Aeq;    /* (m, p+m) */
    const double *beq;    /* (m,) */
    const double *Cg;     /* (ng, nspan) the general constant rows over their columns */
    const int64_t *g_rows; /* (ng,) their rows in C */
    const int64_t *b_rows; /* (nb,) the unit rows' rows in C */
    const int64_t *b_cols; /* (nb,) their variable */
    const double *b_sign; /* (nb,) their sign */
    const double *G;      /* (nt, p+m) the traced rows' matrix (kernel output) */
    const int64_t *traced; /* (nt,) their rows in C */
    const double *d;      /* (nc,) right-hand sides, tolerance included */
    double *u;            /* (p+m,) out: the minimizer */
    double *Cu;           /* (nc,) out: C u */
    double *L;            /* (m, m) work: Cholesky factor of Lam */
    double *X;            /* (m, p+1) out: Lam^-1 [E_x, b_eq] */
    double *S;            /* (k+m, p+1) out: [[A_x, b] - A_f X; sqrt(r_f) X] */
    double *H;            /* (p, p+1) out: [chol(H) (lower), g] */
    double *rf;           /* (m,) out: the forces' regularization */
    double *W;            /* (max(ng, nt),) work */
    /* the step (wbc_step only) */
    kernel_t *kernel;      /* the CasADi-generated function */
    const double **arg;    /* its argument pointers (inputs) */
    double **res;          /* its result pointers (outputs) */
    long long *iw;         /* its integer work */
    double *w;             /* its real work */
    const double *q;       /* (nq,) the kernel's q input buffer (the caller copied q into it) */
    const double *v;       /* (nv,) the kernel's v input buffer */
    int nq, n_unit, check; /* configuration size, unit-norm parts, whether to check q and v */
    double unit_tol;       /* tolerance on a unit norm */
    const int64_t *unit;   /* (2 n_unit,) [start, stop) of every unit-norm part of q */
    const double *a0;      /* (nv,) kernel output */
    const double *Bhat;    /* (nv, p+m) kernel output */
    const double *errors;  /* (ne,) kernel output */
    const double *normal;  /* (ncontact, p+m) rows giving each contact's normal force from u */
    double *out;           /* out: [u (p+m), qdd (nv), errors (ne), normal forces (ncontact), t_kernel, t_qp] (us) */
    double t_kernel, t_qp; /* out (wbc_step): microseconds in the checks and the kernel, in the rest */
    const double *Cdense;  /* (nc, p+m) row-major: C's constant rows (zero on the traced rows) */
    const int64_t *traced_at; /* (nc,) each row's row in G, or -1 */
    const void *vector_type; /* wbc_step_objects reads q and v in C only from objects of this exact type */
    /* wbc_step on a layout with inactive contacts: copies of the kernel's outputs into the layout's
     * active rows and columns, made between the kernel and the shortcut (target[i] = source[index[i]]) */
    int ngather;                      /* number of copies */
    const int64_t *gather_len;        /* (ngather,) entries of each */
    const double *const *gather_src;  /* (ngather,) its source (a kernel output, column-major, flat) */
    const int64_t *const *gather_idx; /* (ngather,) its flat indices into the source */
    double *const *gather_dst;        /* (ngather,) its target */
    /* the rows of Bhat (the layout's active columns: Bhat itself, or its gathered copy) */
    int nh;                /* their number */
    const int64_t *h_rows; /* (nh,) their rows in C */
    const int64_t *h_index; /* (nh,) their row of Bhat */
    const double *h_sign;  /* (nh,) their sign (+-1) */
    const int64_t *h_at;   /* (nc,) each row's position among them, or -1 */
    double *Bu;            /* (nv,) work: Bhat u */
    /* the cost rows that are scaled rows of Bhat (a posture task's: na > 0), assembled with the
     * kernel's traced cost rows by the least squares: the actuators' columns straight into S, the
     * forces' into A_full (which A then points to; its actuator columns are not written) */
    int na;                 /* their number (0: A is the kernel's, or its gathered copy, as is) */
    int nat;                /* the traced cost rows */
    const double *A_traced; /* (nat, p+m) their matrix (the kernel's A, or its gathered copy) */
    const int64_t *at_rows; /* (nat,) their rows in A */
    const int64_t *a_rows;  /* (na,) the rows of Bhat's rows in A */
    const int64_t *a_index; /* (na,) their row of Bhat */
    const double *a_scale;  /* (na,) their scale (the kernel's scale output, or its gathered copy) */
    double *A_full;         /* (k, p+m) the assembled cost matrix */
    int a_blocks;           /* 1: at_rows, a_rows and a_index are each consecutive (one copy, one scaled copy) */
    double *rx;             /* (p,) work: the actuators' regularization */
    /* the binding step's QP in C (wbc_binding) */
    unsigned char *binding_active; /* (nc,) in: the rows active at the previous binding answer (warm
                                    * start); out, after WBC_FEASIBLE: the answer's */
    int64_t *binding_rows;  /* (p,) work: the active rows */
    double *binding_M;      /* (p, p) work: their reduced rows, row-major */
    double *binding_work;   /* (6 p + 2 p^2) work */
    int binding_iterations; /* bound on its iterations */
    int binding_step;       /* 1: wbc_step solves a binding step's QP too (when its minimizer breaks a row) */
    double binding_tol;     /* wbc_step's tolerance for it (the one traced into d) */
    int binding_code;       /* out (wbc_step): -1 (not tried), or wbc_binding's code */
} wbc_shortcut_data;

/* Small dense products, hand-written: at these sizes (a few dozen rows and columns) a BLAS call's
 * overhead (argument checks, packing into its buffers) costs more than its arithmetic (Talos standing:
 * the shortcut's dgemm, dsyrk and dgemv calls took 4.5 of its 7 us). Blocks of independent
 * accumulators (GCC's vector extensions, 4 doubles: one AVX register, two SSE2 ones), so that the
 * products overlap instead of waiting on one another; the edges as plain loops. */
typedef double v4d __attribute__((vector_size(32)));
/* the same, at any double's address, aliasing doubles: loads and stores of 4 consecutive entries
 * (macros: a function taking or returning a vector would change the ABI without AVX) */
typedef double v4d_at __attribute__((vector_size(32), aligned(sizeof(double)), may_alias));
typedef long long v4di __attribute__((vector_size(32))); /* shuffles' lane indices */
#define load4(x) (*(const v4d_at *)(x))
#define store4(x, v) (*(v4d_at *)(x) = (v))
#define sum4(v) (((v)[0] + (v)[2]) + ((v)[1] + (v)[3]))

/* tail_mask[r]: the last r lanes of 4 kept, the others zeroed (a sum's last r < 4 rows, read as the
 * last 4 rows: those before them, already summed, multiplied by zero) */
static const v4d tail_mask[4] = {{0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 1.0}, {0.0, 0.0, 1.0, 1.0}, {0.0, 1.0, 1.0, 1.0}};

/* The dot product of x and y (n,). */
static double dot(const double *x, const double *y, int n) {
    v4d a = {0.0, 0.0, 0.0, 0.0}, b = a;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        a += load4(x + i) * load4(y + i);
        b += load4(x + i + 4) * load4(y + i + 4);
    }
    for (; i + 4 <= n; i += 4) a += load4(x + i) * load4(y + i);
    if (i < n && n >= 4) { /* the last rows, as the last 4 masked */
        b += load4(x + n - 4) * (load4(y + n - 4) * tail_mask[n - i]);
        i = n;
    }
    double s = sum4(a + b);
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
}

/* The sum of the squares of x (n,) (dot: 8 partial sums, not a chain of n dependent ones). */
static double sumsq(const double *x, int n) { return dot(x, x, n); }

/* out[j] = |A[:, j]|^2 for the columns of A (rows, cols) (lda), column-major: 4 columns at a time, two
 * independent sums per column, the 4 columns' lanes added together by a transposition (no horizontal
 * sum per column); the last rows as the last 4 masked (rows >= 4), the last columns (fewer than 4) by
 * sumsq. */
static void column_sumsq(int rows, int cols, const double *A, int lda, double *out) {
    const int rows8 = rows - rows % 8, rows4 = rows - rows % 4;
    int j = 0;
    for (; j + 4 <= cols && rows >= 4; j += 4) {
        const double *A0 = A + (long)j * lda, *A1 = A0 + lda, *A2 = A1 + lda, *A3 = A2 + lda;
        v4d s0 = {0.0, 0.0, 0.0, 0.0}, s1 = s0, s2 = s0, s3 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0;
        int i = 0;
        for (; i < rows8; i += 8) {
            const v4d a0 = load4(A0 + i), a1 = load4(A1 + i), a2 = load4(A2 + i), a3 = load4(A3 + i);
            const v4d b0 = load4(A0 + i + 4), b1 = load4(A1 + i + 4), b2 = load4(A2 + i + 4), b3 = load4(A3 + i + 4);
            s0 += a0 * a0, s1 += a1 * a1, s2 += a2 * a2, s3 += a3 * a3;
            t0 += b0 * b0, t1 += b1 * b1, t2 += b2 * b2, t3 += b3 * b3;
        }
        if (i < rows4) {
            const v4d a0 = load4(A0 + i), a1 = load4(A1 + i), a2 = load4(A2 + i), a3 = load4(A3 + i);
            s0 += a0 * a0, s1 += a1 * a1, s2 += a2 * a2, s3 += a3 * a3;
        }
        if (rows4 < rows) { /* the last rows, as the last 4 masked */
            const int l = rows - 4;
            const v4d mask = tail_mask[rows - rows4];
            const v4d a0 = load4(A0 + l) * mask, a1 = load4(A1 + l) * mask, a2 = load4(A2 + l) * mask;
            const v4d a3 = load4(A3 + l) * mask;
            t0 += a0 * a0, t1 += a1 * a1, t2 += a2 * a2, t3 += a3 * a3;
        }
        s0 += t0, s1 += t1, s2 += t2, s3 += t3;
        const v4di even = {0, 4, 2, 6}, odd = {1, 5, 3, 7}, low = {0, 1, 4, 5}, high = {2, 3, 6, 7};
        const v4d u = __builtin_shuffle(s0, s1, even) + __builtin_shuffle(s0, s1, odd); /* s0's, s1's pairs */
        const v4d w = __builtin_shuffle(s2, s3, even) + __builtin_shuffle(s2, s3, odd);
        store4(out + j, __builtin_shuffle(u, w, low) + __builtin_shuffle(u, w, high));
    }
    for (; j < cols; ++j) out[j] = sumsq(A + (long)j * lda, rows);
}

/* In the products below, B's entry (l, c) is B[l * bl + c * bc]: (bl, bc) = (1, ldb) for a column-major
 * B (inner, n), (ldb, 1) for the transpose of a column-major (n, inner) matrix. */

/* C -= A B on an 8 x 4 block: A (8, inner) (lda), C (8, 4) (ldc), column-major. */
static void block_minus_8x4(int inner, const double *A, int lda, const double *B, int bl, int bc, double *C, int ldc) {
    double *C1 = C + ldc, *C2 = C + 2 * (long)ldc, *C3 = C + 3 * (long)ldc;
    v4d c00 = load4(C), c10 = load4(C + 4), c01 = load4(C1), c11 = load4(C1 + 4);
    v4d c02 = load4(C2), c12 = load4(C2 + 4), c03 = load4(C3), c13 = load4(C3 + 4);
    for (int l = 0; l < inner; ++l) {
        const double *Al = A + (long)l * lda, *Bl = B + (long)l * bl;
        const v4d a0 = load4(Al), a1 = load4(Al + 4);
        const double b0 = Bl[0], b1 = Bl[bc], b2 = Bl[2 * bc], b3 = Bl[3 * bc];
        c00 -= a0 * b0;
        c10 -= a1 * b0;
        c01 -= a0 * b1;
        c11 -= a1 * b1;
        c02 -= a0 * b2;
        c12 -= a1 * b2;
        c03 -= a0 * b3;
        c13 -= a1 * b3;
    }
    store4(C, c00), store4(C + 4, c10), store4(C1, c01), store4(C1 + 4, c11);
    store4(C2, c02), store4(C2 + 4, c12), store4(C3, c03), store4(C3 + 4, c13);
}

/* C -= A B on a 4 x 4 block (as block_minus_8x4). */
static void block_minus_4x4(int inner, const double *A, int lda, const double *B, int bl, int bc, double *C, int ldc) {
    double *C1 = C + ldc, *C2 = C + 2 * (long)ldc, *C3 = C + 3 * (long)ldc;
    v4d c0 = load4(C), c1 = load4(C1), c2 = load4(C2), c3 = load4(C3);
    for (int l = 0; l < inner; ++l) {
        const double *Bl = B + (long)l * bl;
        const v4d a = load4(A + (long)l * lda);
        c0 -= a * Bl[0];
        c1 -= a * Bl[bc];
        c2 -= a * Bl[2 * bc];
        c3 -= a * Bl[3 * bc];
    }
    store4(C, c0), store4(C1, c1), store4(C2, c2), store4(C3, c3);
}

/* C -= A B on the last rows (fewer than 4) of 4 columns: one sum per entry, 4 columns at once. */
static void block_minus_rx4(int rows, int inner, const double *A, int lda, const double *B, int bl, int bc, double *C,
                            int ldc) {
    for (int i = 0; i < rows; ++i) {
        double c[4];
        for (int j = 0; j < 4; ++j) c[j] = C[i + (long)j * ldc];
        for (int l = 0; l < inner; ++l) {
            const double a = A[i + (long)l * lda], *Bl = B + (long)l * bl;
            for (int j = 0; j < 4; ++j) c[j] -= a * Bl[j * bc];
        }
        for (int j = 0; j < 4; ++j) C[i + (long)j * ldc] = c[j];
    }
}

/* C -= A B: A (rows, inner) (lda), B (inner, n) (strides bl, bc), C (rows, n) (ldc), column-major.
 * Blocks of 4 columns by 8, then 4, then the last rows; the last columns (fewer than 4) one by one. */
static void gemm_minus(int rows, int n, int inner, const double *A, int lda, const double *B, int bl, int bc, double *C,
                       int ldc) {
    const int n4 = n - n % 4;
    for (int j = 0; j < n4; j += 4) {
        const double *Bj = B + (long)j * bc;
        double *Cj = C + (long)j * ldc;
        int i = 0;
        for (; i + 8 <= rows; i += 8) block_minus_8x4(inner, A + i, lda, Bj, bl, bc, Cj + i, ldc);
        if (i + 4 <= rows) block_minus_4x4(inner, A + i, lda, Bj, bl, bc, Cj + i, ldc), i += 4;
        if (i < rows) block_minus_rx4(rows - i, inner, A + i, lda, Bj, bl, bc, Cj + i, ldc);
    }
    for (int j = n4; j < n; ++j) {
        double *Cj = C + (long)j * ldc;
        for (int l = 0; l < inner; ++l) {
            const double *Al = A + (long)l * lda;
            const double b = B[(long)l * bl + (long)j * bc];
            for (int i = 0; i < rows; ++i) Cj[i] -= Al[i] * b;
        }
    }
}

/* The lower triangle of H = S^T S (n, n) (ldh): S (rows, n) (lds), column-major. Blocks of 4 x 2
 * entries (8 independent sums over the rows); the diagonal blocks' entries above the diagonal are
 * computed and not written. */
static void syrk_lower(int n, int rows, const double *S, int lds, double *H, int ldh) {
    const int rows4 = rows - rows % 4;
    int j = 0;
    for (; j + 2 <= n; j += 2) {
        const double *Sj0 = S + (long)j * lds, *Sj1 = Sj0 + lds;
        int i = j;
        for (; i + 4 <= n; i += 4) {
            const double *Si0 = S + (long)i * lds, *Si1 = Si0 + lds, *Si2 = Si1 + lds, *Si3 = Si2 + lds;
            v4d h00 = {0.0, 0.0, 0.0, 0.0}, h10 = h00, h20 = h00, h30 = h00;
            v4d h01 = h00, h11 = h00, h21 = h00, h31 = h00;
            for (int l = 0; l < rows4; l += 4) {
                const v4d s0 = load4(Sj0 + l), s1 = load4(Sj1 + l);
                const v4d t0 = load4(Si0 + l), t1 = load4(Si1 + l), t2 = load4(Si2 + l), t3 = load4(Si3 + l);
                h00 += t0 * s0, h10 += t1 * s0, h20 += t2 * s0, h30 += t3 * s0;
                h01 += t0 * s1, h11 += t1 * s1, h21 += t2 * s1, h31 += t3 * s1;
            }
            if (rows4 < rows && rows >= 4) { /* the last rows, as the last 4 masked */
                const int l = rows - 4;
                const v4d mask = tail_mask[rows - rows4];
                const v4d s0 = load4(Sj0 + l) * mask, s1 = load4(Sj1 + l) * mask;
                const v4d t0 = load4(Si0 + l), t1 = load4(Si1 + l), t2 = load4(Si2 + l), t3 = load4(Si3 + l);
                h00 += t0 * s0, h10 += t1 * s0, h20 += t2 * s0, h30 += t3 * s0;
                h01 += t0 * s1, h11 += t1 * s1, h21 += t2 * s1, h31 += t3 * s1;
            }
            double h[4][2] = {{sum4(h00), sum4(h01)}, {sum4(h10), sum4(h11)}, {sum4(h20), sum4(h21)},
                              {sum4(h30), sum4(h31)}};
            for (int l = rows < 4 ? 0 : rows; l < rows; ++l) { /* fewer than 4 rows in all */
                for (int r = 0; r < 4; ++r) {
                    const double t = S[l + (long)(i + r) * lds];
                    h[r][0] += t * Sj0[l];
                    h[r][1] += t * Sj1[l];
                }
            }
            for (int r = 0; r < 4; ++r) {
                H[i + r + (long)j * ldh] = h[r][0];
                if (i + r >= j + 1) H[i + r + (long)(j + 1) * ldh] = h[r][1];
            }
        }
        for (; i < n; ++i) {
            const double *Si = S + (long)i * lds;
            H[i + (long)j * ldh] = dot(Si, Sj0, rows);
            if (i >= j + 1) H[i + (long)(j + 1) * ldh] = dot(Si, Sj1, rows);
        }
    }
    if (j < n) H[j + (long)j * ldh] = dot(S + (long)j * lds, S + (long)j * lds, rows);
}

/* y = A^T x: A (rows, n) (lda), column-major. */
static void gemv_t(int rows, int n, const double *A, int lda, const double *x, double *y) {
    for (int j = 0; j < n; ++j) y[j] = dot(A + (long)j * lda, x, rows);
}

/* y = beta y + A x for a small column-major A (rows, cols): a loop, cheaper than a BLAS call here. */
static void small_gemv(int rows, int cols, const double *A, int lda, const double *x, double beta, double *y) {
    if (beta == 0.0) {
        for (int i = 0; i < rows; ++i) y[i] = 0.0;
    }
    for (int j = 0; j < cols; ++j) {
        const double xj = x[j];
        const double *Aj = A + (long)j * lda;
        for (int i = 0; i < rows; ++i) y[i] += Aj[i] * xj;
    }
}

/* The lower Cholesky factor of the n x n matrix A (column-major, leading dimension lda; only the lower
 * triangle read) in place, column by column: 0, or j + 1 when the j-th pivot is not positive
 * (LAPACK's dpotrf convention); inverse (n,), if not NULL: the factor's diagonal's reciprocals.
 * Right-looking: each column, once final, updates the later columns, which are independent of one
 * another. 1/sqrt(pivot) is sqrt(pivot) (1/pivot): the square root and the division side by side,
 * not one after the other (each column's pivot waits on the previous column). For a few columns
 * (cholesky's diagonal blocks). */
static int cholesky_unblocked(int n, double *A, int lda, double *inverse) {
    for (int j = 0; j < n; ++j) {
        double *Aj = A + (long)j * lda;
        const double pivot = Aj[j];
        if (!(pivot > 0.0)) return j + 1;
        const double diag = sqrt(pivot), reciprocal = diag * (1.0 / pivot);
        Aj[j] = diag;
        if (inverse) inverse[j] = reciprocal;
        for (int i = j + 1; i < n; ++i) Aj[i] *= reciprocal;
        for (int c = j + 1; c < n; ++c) {
            double *Ac = A + (long)c * lda;
            const double a = Aj[c];
            for (int i = c; i < n; ++i) Ac[i] -= a * Aj[i];
        }
    }
    return 0;
}

/* The lower Cholesky factor of the n x n matrix A as cholesky_unblocked (same return code), by
 * panels of 4 columns, right-looking: a panel's 4 x 4 diagonal block is factored, the rows below it
 * divided by that factor's transpose (vectorized over the rows), then the columns after it less the
 * panel's part (gemm_minus: blocks of independent sums). The next panel waits only on the last
 * panel's part of it (sums of 4 products), not on every earlier column's: at these sizes, a few
 * dozen, the chain of pivots bounds the factorization, not its arithmetic (Talos standing, n = 32:
 * 1.8k time-stamp-counter ticks, against 2.2k left-looking and 3.3k for LAPACK's dpotrf or the
 * column-by-column loop). The upper triangle's entries within the 4 x 4 diagonal blocks are work
 * (overwritten); the rest of the upper triangle is untouched. */
static int cholesky(int n, double *A, int lda) {
    double inverse[4];
    for (int j = 0; j < n; j += 4) {
        const int w = n - j < 4 ? n - j : 4, below = n - j - w;
        double *D = A + j + (long)j * lda; /* the panel's diagonal block */
        const int info = cholesky_unblocked(w, D, lda, inverse);
        if (info) return j + info;
        if (!below) break;
        double *L21 = D + w; /* the rows below: times the diagonal block's factor^-T */
        for (int c = 0; c < w; ++c) {
            double *Lc = L21 + (long)c * lda;
            for (int e = 0; e < c; ++e) {
                const double a = D[c + (long)e * lda], *Le = L21 + (long)e * lda;
                for (int i = 0; i < below; ++i) Lc[i] -= a * Le[i];
            }
            for (int i = 0; i < below; ++i) Lc[i] *= inverse[c];
        }
        /* the later columns less L21 L21^T (their lower triangle and their diagonal blocks) */
        for (int c0 = 0; c0 < below; c0 += 4) {
            const int cols = below - c0 < 4 ? below - c0 : 4;
            gemm_minus(below - c0, cols, w, L21 + c0, lda, L21 + c0, lda, 1, A + (j + w + c0) * (1 + (long)lda), lda);
        }
    }
    return 0;
}

/* x = L^-1 x for the factor L of cholesky (n x n, lda), column by column (short dependency chains),
 * multiplying by the diagonal's reciprocals (computed first: independent divisions, out of the chain). */
static void forward_solve(int n, const double *L, int lda, double *x) {
    double inverse[n > 0 ? n : 1];
    for (int j = 0; j < n; ++j) inverse[j] = 1.0 / L[j + (long)j * lda];
    for (int j = 0; j < n; ++j) {
        const double *Lj = L + (long)j * lda;
        const double z = x[j] * inverse[j];
        x[j] = z;
        for (int i = j + 1; i < n; ++i) x[i] -= Lj[i] * z;
    }
}

/* x = L^-T x for the factor L of cholesky (n x n, lda): the last unknown first, each one's column of
 * L^T (row of L) subtracted from the unknowns before it as soon as it is known (as forward_solve). */
static void backward_solve(int n, const double *L, int lda, double *x) {
    double inverse[n > 0 ? n : 1];
    for (int j = 0; j < n; ++j) inverse[j] = 1.0 / L[j + (long)j * lda];
    for (int j = n - 1; j >= 0; --j) {
        const double y = x[j] * inverse[j];
        x[j] = y;
        for (int i = 0; i < j; ++i) x[i] -= L[j + (long)i * lda] * y;
    }
}

/* x = (L L^T)^-1 x for the factor L of cholesky (n x n, lda). */
static void cholesky_solve(int n, const double *L, int lda, double *x) {
    forward_solve(n, L, lda, x);
    backward_solve(n, L, lda, x);
}

/* B = (L L^T)^-1 B for the factor L of cholesky (n x n, lda) and B (n, nrhs) column-major (ldb), by
 * blocks of 4 rows: a block less the part of the rows already solved is one product (gemm_minus),
 * then its 4 x 4 triangle is solved column by column (the columns independent of one another); the
 * back substitution reads L^T, copied first (its rows then contiguous). */
static void cholesky_solve_many(int n, const double *L, int lda, int nrhs, double *B, int ldb) {
    double inverse[n > 0 ? n : 1], LT[n > 0 ? (long)n * n : 1];
    for (int j = 0; j < n; ++j) {
        inverse[j] = 1.0 / L[j + (long)j * lda];
        for (int i = j; i < n; ++i) LT[j + (long)i * n] = L[i + (long)j * lda];
    }
    for (int i0 = 0; i0 < n; i0 += 4) { /* L Z = B */
        const int w = n - i0 < 4 ? n - i0 : 4;
        gemm_minus(w, nrhs, i0, L + i0, lda, B, 1, ldb, B + i0, ldb);
        for (int c = 0; c < nrhs; ++c) {
            double *Bc = B + i0 + (long)c * ldb;
            for (int r = 0; r < w; ++r) {
                double z = Bc[r];
                for (int e = 0; e < r; ++e) z -= L[i0 + r + (long)(i0 + e) * lda] * Bc[e];
                Bc[r] = z * inverse[i0 + r];
            }
        }
    }
    for (int i0 = n > 0 ? (n - 1) / 4 * 4 : -1; i0 >= 0; i0 -= 4) { /* L^T X = Z, the last block first */
        const int w = n - i0 < 4 ? n - i0 : 4, after = i0 + w;
        gemm_minus(w, nrhs, n - after, LT + i0 + (long)after * n, n, B + after, 1, ldb, B + i0, ldb);
        for (int c = 0; c < nrhs; ++c) {
            double *Bc = B + i0 + (long)c * ldb;
            for (int r = w - 1; r >= 0; --r) {
                double x = Bc[r];
                for (int e = r + 1; e < w; ++e) x -= LT[i0 + r + (long)(i0 + e) * n] * Bc[e];
                Bc[r] = x * inverse[i0 + r];
            }
        }
    }
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* C u <= d on s->u: WBC_FEASIBLE when every row holds, WBC_INFEASIBLE otherwise (Cu holds the products). */
static int check(wbc_shortcut_data *s) {
    const int n = s->p + s->m;
    const double *u = s->u;
    double *W = s->W;
    int i;
    const int nc = s->nc, ng = s->ng, nb = s->nb, nt = s->nt;
    double *Cu = s->Cu;
    memset(Cu, 0, sizeof(double) * (size_t)nc);
    if (ng) {
        small_gemv(ng, s->nspan, s->Cg, ng, u + s->c0, 0.0, W);
        for (i = 0; i < ng; ++i) Cu[s->g_rows[i]] = W[i];
    }
    for (i = 0; i < nb; ++i) Cu[s->b_rows[i]] = s->b_sign[i] * u[s->b_cols[i]];
    if (nt) {
        small_gemv(nt, n, s->G, nt, u, 0.0, W);
        for (i = 0; i < nt; ++i) Cu[s->traced[i]] = W[i];
    }
    if (s->nh) {
        const int nv = s->nv;
        small_gemv(nv, n, s->Bhat, nv, u, 0.0, s->Bu);
        for (i = 0; i < s->nh; ++i) Cu[s->h_rows[i]] = s->h_sign[i] * s->Bu[s->h_index[i]];
    }
    int ok = 1;
    for (i = 0; i < nc; ++i) ok &= Cu[i] <= s->d[i];
    return ok ? WBC_FEASIBLE : WBC_INFEASIBLE;
}

/* Columns j0 .. j1-1 of the cost rows into dst (column j at dst + (j - j0) ld): the traced ones
 * copied, the rows of Bhat scaled (A[a_rows[i]] = a_scale[i] Bhat[a_index[i]]): the products the
 * kernel no longer makes, the same numbers. */
static void assemble_costs(const wbc_shortcut_data *s, int j0, int j1, double *dst, int ld) {
    const int nat = s->nat, na = s->na, nv = s->nv;
    if (s->a_blocks) { /* the common case (a posture after the other tasks): blocks, vectorized */
        const int64_t t0 = nat ? s->at_rows[0] : 0, r0 = s->a_rows[0], i0 = s->a_index[0];
        const double *scale = s->a_scale;
        for (int j = j0; j < j1; ++j) {
            double *Aj = dst + (long)(j - j0) * ld;
            if (nat) memcpy(Aj + t0, s->A_traced + (long)j * nat, sizeof(double) * (size_t)nat);
            double *Ar = Aj + r0;
            const double *Bi = s->Bhat + (long)j * nv + i0;
            for (int i = 0; i < na; ++i) Ar[i] = scale[i] * Bi[i];
        }
        return;
    }
    for (int j = j0; j < j1; ++j) {
        double *Aj = dst + (long)(j - j0) * ld;
        const double *Tj = s->A_traced + (long)j * nat, *Bj = s->Bhat + (long)j * nv;
        for (int t = 0; t < nat; ++t) Aj[s->at_rows[t]] = Tj[t];
        for (int i = 0; i < na; ++i) Aj[s->a_rows[i]] = s->a_scale[i] * Bj[s->a_index[i]];
    }
}

int wbc_shortcut(wbc_shortcut_data *s) {
    const int k = s->k, p = s->p, m = s->m, n = s->p + s->m, p1 = s->p + 1, km = s->k + s->m;
    const double *A = s->A, *Aeq = s->Aeq;
    double *X = s->X, *S = s->S, *H = s->H, *u = s->u, *L = s->L;
    int i, j, l;
    /* 1. X = Lam^-1 [E_x, b_eq] */
    for (j = 0; j < m; ++j) {
        for (i = 0; i < m; ++i) L[i + j * m] = Aeq[i + (long)(p + j) * m];
    }
    if (cholesky(m, L, m)) return WBC_FAILED;
    memcpy(X, Aeq, sizeof(double) * (size_t)m * (size_t)p);
    memcpy(X + (long)p * m, s->beq, sizeof(double) * (size_t)m);
    cholesky_solve_many(m, L, m, p1, X, m);
    /* 2. S = [[A_x, b] - A_f X; sqrt(r_f) X] (rows of Bhat among the costs: A_x assembled in S, A_f
     * in A_full, which A points to) */
    if (s->na) {
        assemble_costs(s, 0, p, S, km);
        assemble_costs(s, p, n, s->A_full + (long)p * k, k);
    } else {
        for (j = 0; j < p; ++j) memcpy(S + (long)j * km, A + (long)j * k, sizeof(double) * (size_t)k);
    }
    memcpy(S + (long)p * km, s->b, sizeof(double) * (size_t)k);
    column_sumsq(k, p, S, km, s->rx); /* A_x's columns */
    for (j = 0; j < p; ++j) s->rx[j] = s->reg * s->rx[j] + 1e-12;
    gemm_minus(k, p1, m, A + (long)p * k, k, X, 1, m, S, km);
    double root[m > 0 ? m : 1]; /* sqrt(r_f), once per force */
    column_sumsq(k, m, A + (long)p * k, k, s->rf);
    for (l = 0; l < m; ++l) {
        s->rf[l] = s->reg * s->rf[l] + 1e-12;
        root[l] = sqrt(s->rf[l]);
    }
    for (j = 0; j < p1; ++j) {
        double *Sj = S + (long)j * km + k;
        const double *Xj = X + (long)j * m;
        for (l = 0; l < m; ++l) Sj[l] = root[l] * Xj[l];
    }
    /* 3. H = S_x^T S_x + diag(r_x) (lower), g = S_x^T S_b */
    syrk_lower(p, km, S, km, H, p);
    gemv_t(km, p, S, km, S + (long)p * km, H + (long)p * p);
    for (j = 0; j < p; ++j) H[j + (long)j * p] += s->rx[j];
    /* 4. x = H^-1 g (the factor overwrites H's lower triangle), f = X_b - X_x x */
    if (cholesky(p, H, p)) return WBC_FAILED;
    memcpy(u, H + (long)p * p, sizeof(double) * (size_t)p);
    cholesky_solve(p, H, p, u);
    memcpy(u + p, X + (long)p * m, sizeof(double) * (size_t)m);
    for (l = 0; l < m; ++l) u[p + l] = -u[p + l];
    small_gemv(m, p, X, m, u, 1.0, u + p);
    for (l = 0; l < m; ++l) u[p + l] = -u[p + l];
    for (i = 0; i < n; ++i) {
        if (!isfinite(u[i])) return WBC_FAILED;
    }
    return check(s);
}

static int unit_parts_ok(const wbc_shortcut_data *s) {
    for (int i = 0; i < s->n_unit; ++i) {
        const int64_t start = s->unit[2 * i], stop = s->unit[2 * i + 1];
        double norm = 0.0;
        for (int64_t j = start; j < stop; ++j) norm += s->q[j] * s->q[j];
        if (!(fabs(sqrt(norm) - 1.0) <= s->unit_tol)) return 0;
    }
    return 1;
}

/* The command of s->u into s->out: [u, qdd = a0 + Bhat u, task errors, normal forces] (the two
 * timings after them are left to the caller); WBC_FEASIBLE, or WBC_FAILED when qdd is not finite. */
static int command(wbc_shortcut_data *s) {
    const int n = s->p + s->m, nv = s->nv;
    double *out = s->out, *qdd = s->out + n;
    int code = WBC_FEASIBLE;
    memcpy(out, s->u, sizeof(double) * (size_t)n);
    memcpy(qdd, s->a0, sizeof(double) * (size_t)nv);
    small_gemv(nv, n, s->Bhat, nv, s->u, 1.0, qdd);
    for (int i = 0; i < nv; ++i) {
        if (!isfinite(qdd[i])) code = WBC_FAILED;
    }
    double *tail = qdd + nv;
    memcpy(tail, s->errors, sizeof(double) * (size_t)s->ne);
    tail += s->ne;
    if (s->ncontact) {
        small_gemv(s->ncontact, n, s->normal, s->ncontact, s->u, 0.0, tail);
    }
    return code;
}

/* wbc_step's command for an answer found otherwise (a binding step): s->u into s->out. */
int wbc_command(wbc_shortcut_data *s) { return command(s); }

/* The input checks of wbc_step on the kernel's q and v buffers: WBC_BAD_INPUT, or WBC_FEASIBLE when
 * they pass (or are off). */
int wbc_check_state(const wbc_shortcut_data *s) {
    if (s->check) {
        for (int i = 0; i < s->nq; ++i) {
            if (!isfinite(s->q[i])) return WBC_BAD_INPUT;
        }
        for (int i = 0; i < s->nv; ++i) {
            if (!isfinite(s->v[i])) return WBC_BAD_INPUT;
        }
        if (!unit_parts_ok(s)) return WBC_BAD_INPUT;
    }
    return WBC_FEASIBLE;
}

static void gather(const wbc_shortcut_data *s) {
    for (int j = 0; j < s->ngather; ++j) {
        const double *src = s->gather_src[j];
        const int64_t *idx = s->gather_idx[j];
        double *dst = s->gather_dst[j];
        for (int64_t i = 0; i < s->gather_len[j]; ++i) dst[i] = src[idx[i]];
    }
}

/* Row `row` of C u <= d in the least-distance form of the binding step's QP (wbc_reduce): M_r (p,)
 * and h_r (returned), from the factor H = L L^T that wbc_shortcut left in H and X. */
static double reduce_row(const wbc_shortcut_data *s, int64_t row, double tol, double *Mr) {
    const int p = s->p, m = s->m, n = s->p + s->m;
    const double *H = s->H, *X = s->X;
    const int64_t t = s->traced_at[row], hb = s->h_at[row];
    double c[n];
    if (t >= 0) {
        for (int j = 0; j < n; ++j) c[j] = s->G[t + (long)j * s->nt];
    } else if (hb >= 0) {
        const double sign = s->h_sign[hb];
        const int64_t i = s->h_index[hb];
        for (int j = 0; j < n; ++j) c[j] = sign * s->Bhat[i + (long)j * s->nv];
    } else {
        for (int j = 0; j < n; ++j) c[j] = s->Cdense[row * n + j];
    }
    const double hr = s->d[row] - tol - dot(c + p, X + (long)p * m, m);
    gemv_t(m, p, X, m, c + p, Mr); /* G_r's reduced row: c_x - X_x^T c_f, then L^-1 of it */
    for (int j = 0; j < p; ++j) Mr[j] = c[j] - Mr[j];
    forward_solve(p, H, p, Mr);
    return hr;
}

/* y0 = L^-1 g (p,): the least-distance problem's unconstrained minimizer. */
static void reduce_target(const wbc_shortcut_data *s, double *y0) {
    const int p = s->p;
    const double *H = s->H;
    memcpy(y0, H + (long)p * p, sizeof(double) * (size_t)p);
    forward_solve(p, H, p, y0);
}

/* u from a least-distance answer y: x = L^-T y, f = X_b - X_x x into s->u; 0 when u is not finite. */
static int expand_u(wbc_shortcut_data *s, const double *y) {
    const int p = s->p, m = s->m, n = s->p + s->m;
    const double *H = s->H, *X = s->X;
    double *u = s->u;
    memcpy(u, y, sizeof(double) * (size_t)p);
    backward_solve(p, H, p, u);
    small_gemv(m, p, X, m, u, 0.0, u + p); /* f = X_b - X_x x */
    for (int l = 0; l < m; ++l) u[p + l] = X[(long)p * m + l] - u[p + l];
    for (int i = 0; i < n; ++i) {
        if (!isfinite(u[i])) return 0;
    }
    return 1;
}

/* The binding step's QP on the working rows, in the least-distance form daqp solves best: with
 * H = L L^T (the factor wbc_shortcut left in H) and y = L^T x, minimize 1/2 |y|^2 - y0^T y subject to
 * M y <= h over the rows of C u <= d marked in `working` (written to `rows`; their count returned),
 * where y0 = L^-1 g, M_r = (L^-1 G_r^T)^T, G_r = c_x - c_f X_x, h_r = d_r - tol - c_f X_b (c the row
 * of C). M is (nr, p) row-major. */
int wbc_reduce(wbc_shortcut_data *s, const unsigned char *working, int64_t *rows, double *M, double *h, double *y0,
               double tol) {
    const int p = s->p;
    int nr = 0;
    for (int64_t i = 0; i < s->nc; ++i) {
        if (working[i]) rows[nr++] = i;
    }
    for (int r = 0; r < nr; ++r) h[r] = reduce_row(s, rows[r], tol, M + (long)r * p);
    reduce_target(s, y0);
    return nr;
}

/* From the least-distance answer y: x = L^-T y, f = X_b - X_x x into s->u, then C u <= d (as check). */
int wbc_expand(wbc_shortcut_data *s, const double *y) {
    if (!expand_u(s, y)) return WBC_FAILED;
    return check(s);
}

/* The active rows' Gram matrix G = M_A M_A^T (na x na, leading dimension ld, full) factored into F
 * (lower): 0 when it is not positive definite. */
static int gram_factor(int na, const double *G, double *F, int ld) {
    for (int j = 0; j < na; ++j) memcpy(F + (long)j * ld, G + (long)j * ld, sizeof(double) * (size_t)na);
    return cholesky(na, F, ld) == 0;
}

/* The binding step's QP in C: min 1/2 |y|^2 - y0^T y s.t. M y <= h over every row of C u <= d, by the
 * dual active-set method of Goldfarb and Idnani (identity Hessian: the least-distance form of
 * wbc_reduce), with the rows' reductions made only for the rows it adds (the most violated row at
 * each primal step, C u computed in full by check). Warm start: the rows flagged in `active` (those
 * active at the previous binding step's answer), when their equality-constrained minimizer has
 * nonnegative multipliers (a dual-feasible start); else from y0.
 *
 * Work: the struct's binding_* buffers (binding_active holds the warm start).
 * Returns WBC_FEASIBLE with u in s->u, C u in s->Cu and binding_active set to the answer's active
 * rows; WBC_INFEASIBLE when the rows admit no solution (a violated row that no step can satisfy), or
 * WBC_FAILED (iterations exhausted, a singular Gram matrix, not finite, or an active row broken by
 * rounding at the answer): the caller then solves it otherwise. A row is added when
 * C u > h + tol / 1000 (d = h + tol): the answer satisfies C u <= h + tol / 1000 on the rows it did
 * not make active, and C u = h to rounding on those it did. */
int wbc_binding(wbc_shortcut_data *s, double tol) {
    const int p = s->p, nc = s->nc, max_iter = s->binding_iterations;
    unsigned char *active = s->binding_active;
    int64_t *rows = s->binding_rows;
    double *M = s->binding_M, *work = s->binding_work;
    double *y0 = work, *y = y0 + p, *h = y + p, *lam = h + p, *r = lam + p, *w = r + p;
    double *G = w + p, *F = G + (long)p * p;
    double Mq[p > 0 ? p : 1];
    const double inf = 1.0 / 0.0;
    int na = 0, iter = 0;
    reduce_target(s, y0);
    memcpy(y, y0, sizeof(double) * (size_t)p);
    /* warm start */
    for (int64_t i = 0; i < nc && na < p; ++i) {
        if (active[i]) {
            rows[na] = i;
            h[na] = reduce_row(s, i, tol, M + (long)na * p);
            ++na;
        }
    }
    if (na) {
        for (int a = 0; a < na; ++a) {
            for (int b = 0; b <= a; ++b) {
                G[a + (long)b * p] = G[b + (long)a * p] = dot(M + (long)a * p, M + (long)b * p, p);
            }
            lam[a] = dot(M + (long)a * p, y0, p) - h[a]; /* G lam = M_A y0 - h_A */
        }
        int ok = gram_factor(na, G, F, p);
        if (ok) {
            cholesky_solve(na, F, p, lam);
            for (int a = 0; a < na; ++a) ok &= lam[a] >= 0.0;
        }
        if (ok) {
            for (int a = 0; a < na; ++a) {
                for (int j = 0; j < p; ++j) y[j] -= lam[a] * M[(long)a * p + j];
            }
        } else {
            na = 0;
            memcpy(y, y0, sizeof(double) * (size_t)p);
        }
    }
    int feasible; /* C u <= d at the last u (checked below: the loop ends at the u it checked last) */
    for (;;) {
        if (!expand_u(s, y)) return WBC_FAILED;
        feasible = check(s) == WBC_FEASIBLE;
        int64_t q = -1;
        double worst = 1e-3 * tol; /* rows held to h + tol/1000 (d = h + tol is only the acceptance) */
        for (int64_t i = 0; i < nc; ++i) {
            const double excess = s->Cu[i] - s->d[i] + tol;
            if (excess > worst) {
                int in = 0;
                for (int a = 0; a < na; ++a) in |= rows[a] == i;
                if (!in) {
                    worst = excess;
                    q = i;
                }
            }
        }
        if (q < 0) break;
        const double hq = reduce_row(s, q, tol, Mq);
        const double nq = sumsq(Mq, p);
        double lq = 0.0;
        for (;;) {
            if (++iter > max_iter) return WBC_FAILED;
            /* r = G^-1 M_A Mq^T, w = Mq^T - M_A^T r (Mq's part outside the active rows' span) */
            for (int a = 0; a < na; ++a) r[a] = dot(M + (long)a * p, Mq, p);
            if (na) {
                if (!gram_factor(na, G, F, p)) return WBC_FAILED;
                double v[na];
                memcpy(v, r, sizeof(double) * (size_t)na);
                cholesky_solve(na, F, p, r);
                if (na < p) { /* q's Gram row and column, kept if q is added */
                    for (int a = 0; a < na; ++a) G[a + (long)na * p] = G[na + (long)a * p] = v[a];
                }
            }
            if (na < p) G[na + (long)na * p] = nq;
            memcpy(w, Mq, sizeof(double) * (size_t)p);
            for (int a = 0; a < na; ++a) {
                for (int j = 0; j < p; ++j) w[j] -= r[a] * M[(long)a * p + j];
            }
            const double ww = sumsq(w, p), excess = dot(Mq, y, p) - hq;
            /* q depends on the active rows (at most p rows are independent): no primal step */
            const double t2 = na < p && ww > 1e-12 * nq ? fmax(excess, 0.0) / ww : inf;
            double t1 = inf;
            int drop = -1;
            for (int a = 0; a < na; ++a) {
                if (r[a] > 0.0 && lam[a] / r[a] < t1) {
                    t1 = lam[a] / r[a];
                    drop = a;
                }
            }
            const double t = fmin(t1, t2);
            if (t == inf) return WBC_INFEASIBLE;
            if (t2 < inf) {
                for (int j = 0; j < p; ++j) y[j] -= t * w[j];
            }
            for (int a = 0; a < na; ++a) lam[a] -= t * r[a];
            lq += t;
            if (t2 <= t1) { /* q joins the active rows (its Gram row was written above) */
                rows[na] = q;
                h[na] = hq;
                lam[na] = lq;
                memcpy(M + (long)na * p, Mq, sizeof(double) * (size_t)p);
                ++na;
                break;
            }
            /* row `drop` leaves: shift the later ones down */
            for (int a = drop; a + 1 < na; ++a) {
                rows[a] = rows[a + 1];
                h[a] = h[a + 1];
                lam[a] = lam[a + 1];
                memcpy(M + (long)a * p, M + (long)(a + 1) * p, sizeof(double) * (size_t)p);
            }
            for (int b = 0; b < na; ++b) { /* G without row and column `drop` */
                for (int a = drop; a + 1 < na; ++a) G[a + (long)b * p] = G[a + 1 + (long)b * p];
            }
            for (int b = drop; b + 1 < na; ++b) memcpy(G + (long)b * p, G + (long)(b + 1) * p, sizeof(double) * (size_t)p);
            --na;
            if (++iter > max_iter) return WBC_FAILED;
        }
    }
    if (!feasible) return WBC_FAILED; /* an active row off by rounding (ill-conditioned H) */
    memset(active, 0, (size_t)nc);
    for (int a = 0; a < na; ++a) active[rows[a]] = 1;
    return WBC_FEASIBLE;
}

/* The one-call step around a solver: the checks, the kernel, the gathers, solve(ctx) (a return code;
 * s->u its answer when WBC_FEASIBLE), the command and its timings (wbc_step, wbc_hierarchy_step). */
static int step_with(wbc_shortcut_data *s, int (*solve)(void *), void *ctx) {
    const int n = s->p + s->m, nv = s->nv;
    double t0 = now_us();
    if (wbc_check_state(s) != WBC_FEASIBLE) return WBC_BAD_INPUT;
    if (s->kernel(s->arg, s->res, s->iw, s->w, 0)) return WBC_KERNEL_FAILED;
    double t1 = now_us();
    s->t_kernel = t1 - t0;
    gather(s);
    int code = solve(ctx);
    if (code == WBC_FEASIBLE) code = command(s);
    s->t_qp = now_us() - t1;
    if (code == WBC_FEASIBLE) {
        double *tail = s->out + n + nv + s->ne + s->ncontact;
        tail[0] = s->t_kernel;
        tail[1] = s->t_qp;
    }
    return code;
}

/* The shortcut and, when a row binds and binding_step is set, the binding QP. */
static int shortcut_then_binding(void *ctx) {
    wbc_shortcut_data *s = ctx;
    int code = wbc_shortcut(s);
    s->binding_code = -1;
    if (code == WBC_INFEASIBLE && s->binding_step) { /* a row binds: the QP, in C too */
        s->binding_code = wbc_binding(s, s->binding_tol);
        if (s->binding_code == WBC_FEASIBLE) code = WBC_FEASIBLE; /* else the caller solves it otherwise */
    }
    return code;
}

int wbc_step(wbc_shortcut_data *s) { return step_with(s, shortcut_then_binding, s); }

#ifdef WBC_WITH_PYTHON
/* wbc_step on Python objects q and v (called with the GIL held, through ctypes.PyDLL): when both are
 * of the exact type s->vector_type (numpy's ndarray: a subclass such as a masked array is not read
 * here), C-contiguous float64 vectors of the state's sizes, they are copied into the kernel's inputs
 * and wbc_step runs; else WBC_NOT_VECTORS, nothing done, no Python error left set (the caller
 * converts or refuses them). */
static int take_vector(const wbc_shortcut_data *s, PyObject *obj, Py_ssize_t n, double *dst) {
    Py_buffer view;
    if ((const void *)Py_TYPE(obj) != s->vector_type) return 0;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        return 0;
    }
    const int ok = view.ndim == 1 && view.shape[0] == n && view.itemsize == (Py_ssize_t)sizeof(double) &&
                   view.format && view.format[0] == 'd' && view.format[1] == 0;
    if (ok) memcpy(dst, view.buf, sizeof(double) * (size_t)n);
    PyBuffer_Release(&view);
    return ok;
}

/* step_with on Python objects q and v (as wbc_step_objects). */
static int objects_with(wbc_shortcut_data *s, PyObject *q, PyObject *v, int (*solve)(void *), void *ctx) {
    if (!take_vector(s, q, s->nq, (double *)s->q) || !take_vector(s, v, s->nv, (double *)s->v)) {
        return WBC_NOT_VECTORS;
    }
    return step_with(s, solve, ctx);
}

int wbc_step_objects(wbc_shortcut_data *s, PyObject *q, PyObject *v) {
    return objects_with(s, q, v, shortcut_then_binding, s);
}

/* A one-call step on Python objects as a CPython builtin's body (METH_FASTCALL: no ctypes conversions,
 * ~0.6 us less a step): self is a tuple whose first item is the struct's address (the others keep
 * what it points into alive); step(q, v) returns the code as an int. */
static PyObject *step_builtin(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              int (*step)(void *, PyObject *, PyObject *)) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "step(q, v) takes two arguments");
        return NULL;
    }
    void *data = PyLong_AsVoidPtr(PyTuple_GET_ITEM(self, 0));
    if (data == NULL) return NULL;
    return PyLong_FromLong(step(data, args[0], args[1]));
}

static int step_objects(void *s, PyObject *q, PyObject *v) { return wbc_step_objects(s, q, v); }

/* wbc_step_objects as a builtin. */
static PyObject *wbc_step_builtin(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return step_builtin(self, args, nargs, step_objects);
}

static PyMethodDef wbc_step_definition = {"step", (PyCFunction)(void (*)(void))wbc_step_builtin, METH_FASTCALL,
                                          "The one-call step on q and v (a return code)."};

/* The method definition of wbc_step_builtin (static: it outlives every function made from it). */
void *wbc_step_method(void) { return &wbc_step_definition; }
#endif

/* The ABI the Python side checks when it loads the library: the struct's size, then two tables of
 * (name, value): every field's offset, in declaration order (table 0), every return code (table 1). */
typedef struct {
    const char *name;
    long value;
} wbc_abi_entry_t;
#define WBC_FIELD(name) {#name, (long)offsetof(wbc_shortcut_data, name)}
static const wbc_abi_entry_t wbc_fields[] = {
    WBC_FIELD(k),        WBC_FIELD(p),      WBC_FIELD(m),         WBC_FIELD(nc),        WBC_FIELD(ng),
    WBC_FIELD(c0),       WBC_FIELD(nspan),  WBC_FIELD(nb),        WBC_FIELD(nt),        WBC_FIELD(nv),
    WBC_FIELD(ne),       WBC_FIELD(ncontact), WBC_FIELD(reg),     WBC_FIELD(A),         WBC_FIELD(b),
    WBC_FIELD(Aeq),      WBC_FIELD(beq),    WBC_FIELD(Cg),        WBC_FIELD(g_rows),    WBC_FIELD(b_rows),
    WBC_FIELD(b_cols),   WBC_FIELD(b_sign), WBC_FIELD(G),         WBC_FIELD(traced),    WBC_FIELD(d),
    WBC_FIELD(u),        WBC_FIELD(Cu),     WBC_FIELD(L),         WBC_FIELD(X),         WBC_FIELD(S),
    WBC_FIELD(H),        WBC_FIELD(rf),     WBC_FIELD(W),         WBC_FIELD(kernel),    WBC_FIELD(arg),
    WBC_FIELD(res),      WBC_FIELD(iw),     WBC_FIELD(w),         WBC_FIELD(q),         WBC_FIELD(v),
    WBC_FIELD(nq),       WBC_FIELD(n_unit), WBC_FIELD(check),     WBC_FIELD(unit_tol),  WBC_FIELD(unit),
    WBC_FIELD(a0),       WBC_FIELD(Bhat),   WBC_FIELD(errors),    WBC_FIELD(normal),    WBC_FIELD(out),
    WBC_FIELD(t_kernel), WBC_FIELD(t_qp),   WBC_FIELD(Cdense),    WBC_FIELD(traced_at), WBC_FIELD(vector_type),
    WBC_FIELD(ngather),  WBC_FIELD(gather_len), WBC_FIELD(gather_src), WBC_FIELD(gather_idx), WBC_FIELD(gather_dst),
    WBC_FIELD(nh),       WBC_FIELD(h_rows), WBC_FIELD(h_index),   WBC_FIELD(h_sign),    WBC_FIELD(h_at),
    WBC_FIELD(Bu),       WBC_FIELD(na),     WBC_FIELD(nat),       WBC_FIELD(A_traced),  WBC_FIELD(at_rows),
    WBC_FIELD(a_rows),   WBC_FIELD(a_index), WBC_FIELD(a_scale),  WBC_FIELD(A_full),    WBC_FIELD(a_blocks),
    WBC_FIELD(rx),       WBC_FIELD(binding_active), WBC_FIELD(binding_rows), WBC_FIELD(binding_M),
    WBC_FIELD(binding_work), WBC_FIELD(binding_iterations), WBC_FIELD(binding_step), WBC_FIELD(binding_tol),
    WBC_FIELD(binding_code),
};
#define WBC_CODE(name) {#name, WBC_##name}
static const wbc_abi_entry_t wbc_codes[] = {
    WBC_CODE(FEASIBLE),      WBC_CODE(INFEASIBLE),  WBC_CODE(FAILED),
    WBC_CODE(BAD_INPUT),     WBC_CODE(KERNEL_FAILED), WBC_CODE(NOT_VECTORS),
};

size_t wbc_abi_size(void) { return sizeof(wbc_shortcut_data); }

/* Entry i of table `table` (0: fields, 1: codes): its name and *value, or NULL past the end. */
const char *wbc_abi_entry(int table, int i, long *value) {
    const wbc_abi_entry_t *entries = table == 0 ? wbc_fields : wbc_codes;
    const int count = table == 0 ? (int)(sizeof wbc_fields / sizeof wbc_fields[0])
                                 : (int)(sizeof wbc_codes / sizeof wbc_codes[0]);
    if (i < 0 || i >= count) return NULL;
    *value = entries[i].value;
    return entries[i].name;
}
