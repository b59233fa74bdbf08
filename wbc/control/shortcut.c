/* The controller's shortcut in one call: the equality-constrained least squares by elimination
 * through the Delassus matrix, then the feasibility check C u <= d.
 *
 * Hand-written twin of wbc.control.qp.least_squares_by_elimination and Layout.feasible (the numpy
 * versions stay the reference; tests compare the two). Compiled once per machine through the
 * project's kernel cache (wbc.control.fastpath) and called through ctypes with one pointer. The
 * dense products and factorizations call the BLAS and LAPACK SciPy ships (their addresses come
 * from scipy.linalg.cython_blas / cython_lapack, passed in the struct): the same arithmetic as the
 * numpy version, without its per-call Python overhead.
 *
 * Problem (all matrices column-major, as the kernel writes them):
 *   minimize  1/2 |A u - b|^2 + 1/2 sum_i r_i u_i^2,   r_i = reg |A[:, i]|^2 + 1e-12
 *   subject to E_x x + Lam f = b_eq,   u = (x, f), x: p actuators, f: m contact forces,
 * Lam = A_eq[:, p:] symmetric positive definite (the Delassus matrix).
 * f = Lam^-1 (b_eq - E_x x) is substituted: with X = Lam^-1 [E_x, b_eq] (m, p+1) and
 * R = [A_x, b] - A_f X (k, p+1),  H = R_x^T R_x + X_x^T diag(r_f) X_x + diag(r_x) (p, p),
 * g = R_x^T R_b + X_x^T diag(r_f) X_b, x = H^-1 g, f = X_b - X_x x.
 *
 * Returns 0: u is finite and C u <= d holds (u is the QP's solution); 1: u is finite but some row
 * of C u <= d fails (Cu holds the products); 2: a factorization failed or u is not finite.
 */
#include <math.h>

typedef void dgemm_t(const char *, const char *, const int *, const int *, const int *, const double *,
                     const double *, const int *, const double *, const int *, const double *, double *,
                     const int *);
typedef void dgemv_t(const char *, const int *, const int *, const double *, const double *, const int *,
                     const double *, const int *, const double *, double *, const int *);
typedef void dpotrf_t(const char *, const int *, double *, const int *, int *);
typedef void dpotrs_t(const char *, const int *, const int *, const double *, const int *, double *, const int *,
                      int *);

typedef struct {
    int k, p, m;          /* cost rows, actuator variables, force variables (= equality rows) */
    int nc, nt;           /* rows of C, traced rows among them */
    double reg;           /* relative regularization */
    const double *A;      /* (k, p+m) */
    const double *b;      /* (k,) */
    const double *Aeq;    /* (m, p+m) */
    const double *beq;    /* (m,) */
    const double *C;      /* (nc, p+m) constant rows (zero on the traced rows) */
    const double *G;      /* (nt, p+m) the traced rows' matrix (kernel output) */
    const long *traced;   /* (nt,) their rows in C */
    const double *d;      /* (nc,) right-hand sides, tolerance included */
    double *u;            /* (p+m,) out: the minimizer */
    double *Cu;           /* (nc,) out: C u */
    double *L;            /* (m, m) work: Cholesky factor of Lam */
    double *X;            /* (m, p+1) out: Lam^-1 [E_x, b_eq] */
    double *R;            /* (k, p+1) out: [A_x, b] - A_f X */
    double *H;            /* (p, p+1) out: [chol(H) (lower), g] */
    double *Hfull;        /* (p, p) out: H before its factorization (symmetric) */
    double *rf;           /* (m,) out: the forces' regularization */
    double *W;            /* (m, p+1) work: diag(r_f) X; its first nt entries also hold G u */
    dgemm_t *dgemm;
    dgemv_t *dgemv;
    dpotrf_t *dpotrf;
    dpotrs_t *dpotrs;
} wbc_shortcut_data;

static double sumsq(const double *x, int n) {
    double s0 = 0.0, s1 = 0.0;
    int i = 0;
    for (; i + 2 <= n; i += 2) {
        s0 += x[i] * x[i];
        s1 += x[i + 1] * x[i + 1];
    }
    for (; i < n; ++i) s0 += x[i] * x[i];
    return s0 + s1;
}

int wbc_shortcut(wbc_shortcut_data *s) {
    const int k = s->k, p = s->p, m = s->m, n = s->p + s->m, p1 = s->p + 1, one = 1;
    const double *A = s->A, *Aeq = s->Aeq;
    double *X = s->X, *R = s->R, *H = s->H, *u = s->u, *W = s->W, *L = s->L;
    const double d_one = 1.0, d_minus = -1.0, d_zero = 0.0;
    int info = 0, i, j, l;
    /* 1. X = Lam^-1 [E_x, b_eq] */
    for (j = 0; j < m; ++j) {
        for (i = 0; i < m; ++i) L[i + j * m] = Aeq[i + (long)(p + j) * m];
    }
    s->dpotrf("L", &m, L, &m, &info);
    if (info) return 2;
    for (i = 0; i < m * p; ++i) X[i] = Aeq[i];
    for (i = 0; i < m; ++i) X[(long)p * m + i] = s->beq[i];
    s->dpotrs("L", &m, &p1, L, &m, X, &m, &info);
    if (info) return 2;
    /* 2. R = [A_x, b] - A_f X */
    for (i = 0; i < k * p; ++i) R[i] = A[i];
    for (i = 0; i < k; ++i) R[(long)p * k + i] = s->b[i];
    s->dgemm("N", "N", &k, &p1, &m, &d_minus, A + (long)p * k, &k, X, &m, &d_one, R, &k);
    /* 3. [H | g] = R_x^T R + X_x^T diag(r_f) X, H += diag(r_x) */
    for (l = 0; l < m; ++l) s->rf[l] = s->reg * sumsq(A + (long)(p + l) * k, k) + 1e-12;
    for (j = 0; j < p1; ++j) {
        for (l = 0; l < m; ++l) W[l + (long)j * m] = s->rf[l] * X[l + (long)j * m];
    }
    s->dgemm("T", "N", &p, &p1, &k, &d_one, R, &k, R, &k, &d_zero, H, &p);
    s->dgemm("T", "N", &p, &p1, &m, &d_one, X, &m, W, &m, &d_one, H, &p);
    for (j = 0; j < p; ++j) H[j + (long)j * p] += s->reg * sumsq(A + (long)j * k, k) + 1e-12;
    for (j = 0; j < p; ++j) { /* exactly symmetric (the working-set QP takes H whole) */
        for (i = j + 1; i < p; ++i) {
            const double h = 0.5 * (H[i + (long)j * p] + H[j + (long)i * p]);
            H[i + (long)j * p] = h;
            H[j + (long)i * p] = h;
        }
    }
    /* 4. x = H^-1 g (the factor overwrites H's lower triangle), f = X_b - X_x x */
    for (i = 0; i < p * p; ++i) s->Hfull[i] = H[i];
    s->dpotrf("L", &p, H, &p, &info);
    if (info) return 2;
    for (i = 0; i < p; ++i) u[i] = H[i + (long)p * p];
    s->dpotrs("L", &p, &one, H, &p, u, &p, &info);
    if (info) return 2;
    for (l = 0; l < m; ++l) u[p + l] = X[(long)p * m + l];
    s->dgemv("N", &m, &p, &d_minus, X, &m, u, &one, &d_one, u + p, &one);
    for (i = 0; i < n; ++i) {
        if (!isfinite(u[i])) return 2;
    }
    /* 5. C u <= d */
    const int nc = s->nc, nt = s->nt;
    double *Cu = s->Cu;
    s->dgemv("N", &nc, &n, &d_one, s->C, &nc, u, &one, &d_zero, Cu, &one);
    if (nt) {
        s->dgemv("N", &nt, &n, &d_one, s->G, &nt, u, &one, &d_zero, W, &one);
        for (i = 0; i < nt; ++i) Cu[s->traced[i]] += W[i];
    }
    int ok = 1;
    for (i = 0; i < nc; ++i) ok &= Cu[i] <= s->d[i];
    return ok ? 0 : 1;
}
