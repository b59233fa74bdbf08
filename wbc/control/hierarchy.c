/* A strict task hierarchy's step in one call: the input checks, the kernel, the layout's gathers, the
 * levels solved one after the other (wbc.control.hierarchy's method, its docstring says why), the
 * feasibility check C u <= d at each level, and the command.
 *
 * Compiled appended to shortcut.c (one translation unit: wbc.control.compiled_hierarchy): it reads the
 * step's data through shortcut.c's struct (the kernel's buffers or their gathered copies, the rows of
 * C u <= d by kind, the command's buffers) and uses its routines (check, gather, assemble_costs,
 * command). Its own struct (wbc_hierarchy_data) holds the levels' rows and the work buffers; the
 * library exports its size and its fields' offsets (wbc_hierarchy_abi_*), checked at load.
 *
 * Method (all matrices column-major; n = p + m variables u = (x, f), p actuators, m contact forces):
 *   1. the equalities eliminated and the variables scaled once: u = T xi + u0, with
 *      N = [I; -Lam^-1 E_x], u0 = [0; Lam^-1 b_eq] (m = 0: N = I, u0 = 0), T = N D,
 *      D = diag(1 / sqrt(|A N e_j|^2 + (N^T diag(r) N)_jj)), r_i = reg |A[:, i]|^2 + 1e-12;
 *      At = A T, bt = b - A u0 (the cost rows in xi);
 *   2. level k searches xi = xi* + Z z, Z an orthonormal basis of the levels above's null space
 *      (Z = I at level 0): with r_i = reg (|A_{<=k}[:, i]|^2 [+ |Bhat[:, i]|^2 above the last level])
 *      + 1e-12 and R = diag(sqrt(r)) T, it minimizes |K Z z - e|^2, K = [At_k; R],
 *      e = [bt_k; -sqrt(r) u0] - K xi*, by one Cholesky solve of (K Z)^T (K Z) (R's actuator rows, a
 *      diagonal, kept out of the products); a level with fewer rows than directions left (a CoM task's
 *      3 and the forces' 12 against Talos's 32 actuators) by the push-through identity instead, an
 *      ld x ld factor (few_rows_step);
 *   3. the level's minimizer is kept when C u <= d holds at u = T xi + u0; otherwise the step returns
 *      WBC_INFEASIBLE (a level binds: the caller solves the levels' QPs, numpy and the backend), or
 *      WBC_FAILED when a factorization fails;
 *   4. Z <- a basis of the null space of At_k Z (singular values at most rank_tol |At_k|_F, as the
 *      numpy solver's SVD decides): Householder reflections of (At_k Z)^T applied to Z, then a Jacobi
 *      SVD of the small triangle R^T; no direction left: the levels below change nothing. While every
 *      level has full rank, Z is kept as its reflectors (Z = (H_0 ... H_{r-1})[:, r:], as in a QR of
 *      the levels' rows) and step 2's normal equations are formed over all p variables and reflected on
 *      both sides, all r reflectors at once in compact WY form (reflect_gram: Z^T (K^T K) Z from
 *      blocked products with a p x p matrix, cheaper than the products K Z and (K Z)^T (K Z), or than
 *      r reflections one after the other); a level of lower rank makes Z explicit.
 * The null space is computed in loops (reflections, Jacobi on a triangle of a few rows): LAPACK's dgesvd
 * with the full V costs 12 us at 3 x 32; the products, the Cholesky factors and the triangular solves
 * are shortcut.c's blocked loops (cheaper than BLAS's and LAPACK's calls at these sizes). Talos, CoM |
 * pelvis orientation | posture (benchmarks.controller --levels): the levels' part of a step, in
 * time-stamp-counter ticks, 25.8k / 37.6k (2 / 3 levels) with one reflection at a time and a p x p
 * factor at level 0, 22.4k / 32.0k now.
 * wbc.control.hierarchy.LexicographicSolver is its reference in the tests and the path of the steps
 * it hands on.
 */

typedef struct {
    wbc_shortcut_data *s;     /* the layout's shortcut data (attached: kernel, gathers, command) */
    int nlev;                 /* priority levels (>= 2) */
    int kmax;                 /* the most rows of one level */
    int lwork;                /* size of work */
    int solved;               /* out: the levels solved by the last call */
    double rank_tol;          /* relative singular-value threshold of the null-space updates */
    const int64_t *lev_rows;  /* (k,) the cost rows, level after level */
    const int64_t *lev_start; /* (nlev + 1,) where each level starts in lev_rows */
    double *sq;               /* (n,) work: |A[:, i]|^2 */
    double *above;            /* (n,) work: |A_{<=k}[:, i]|^2 */
    double *floor_;           /* (n,) work: |Bhat[:, i]|^2 */
    double *sr;               /* (n,) work: sqrt(r) */
    double *a;                /* (p,) work: the regularization's diagonal rows */
    double *T;                /* (n, p) the scaled null space of the equalities (its actuator block is
                               * diagonal: only the diagonal and the force block are written and read) */
    double *u0;               /* (n,) a particular solution of the equalities */
    double *At;               /* (k, p) A T */
    double *bt;               /* (k,) b - A u0 */
    double *K;                /* (kmax + m, p) work: [At_k; R_f] */
    double *e;                /* (kmax + n,) work: the level's right-hand side */
    double *S;                /* (kmax + n, p) work: [K Z; diag(a) Z] */
    double *H;                /* (p, p) work: S^T S (lower), then its factor */
    double *Z;                /* (p, p) the basis of the levels above's null space (columns nz) */
    double *Z2;               /* (p, p) work: the next basis */
    double *xi;               /* (p,) the solution so far */
    double *z;                /* (p,) work: the level's step */
    double *Vt;               /* (p, p) work: right singular vectors of R^T */
    double *sv;               /* (p,) work: singular values (before them: the diagonal rows' right-hand side) */
    double *Mc;               /* (p, kmax) work: (At_k Z)^T, then its Householder reflectors and R */
    double *work;             /* (lwork,) work: R^T (kmax, p), the reflectors' factors (p); reflect_gram's U */
    double *G;                /* (p, p) work: a level's normal equations over all p variables (the WY
                               * factor T when Z becomes explicit) */
    double *Q;                /* (p, p) the implicit basis's reflectors (column j: zero above row j, 1 at j) */
    double *qbeta;            /* (p,) their factors */
    double *y;                /* (p,) work */
} wbc_hierarchy_data;

/* One-sided Jacobi (Hestenes) on the columns of B (rows, cols; column-major): B V has orthogonal
 * columns, V (cols, cols) orthogonal; sv[j] the norm of column j of B V (the singular values, to high
 * relative accuracy). Returns 1 when the sweeps do not converge. */
static int jacobi_svd(int rows, int cols, double *B, double *V, double *sv) {
    for (int j = 0; j < cols; ++j) {
        for (int i = 0; i < cols; ++i) V[i + (long)j * cols] = i == j;
    }
    int converged = cols < 2;
    for (int sweep = 0; sweep < 60 && !converged; ++sweep) {
        converged = 1;
        for (int a = 0; a < cols - 1; ++a) {
            for (int b = a + 1; b < cols; ++b) {
                double *Ba = B + (long)a * rows, *Bb = B + (long)b * rows;
                double alpha = 0.0, beta = 0.0, gamma = 0.0;
                for (int i = 0; i < rows; ++i) {
                    alpha += Ba[i] * Ba[i];
                    beta += Bb[i] * Bb[i];
                    gamma += Ba[i] * Bb[i];
                }
                if (gamma == 0.0 || fabs(gamma) <= 1e-15 * sqrt(alpha * beta)) continue;
                converged = 0;
                const double zeta = (beta - alpha) / (2.0 * gamma);
                const double t = (zeta >= 0.0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                const double c = 1.0 / sqrt(1.0 + t * t), sn = c * t;
                for (int i = 0; i < rows; ++i) {
                    const double x = Ba[i], y = Bb[i];
                    Ba[i] = c * x - sn * y;
                    Bb[i] = sn * x + c * y;
                }
                double *Va = V + (long)a * cols, *Vb = V + (long)b * cols;
                for (int i = 0; i < cols; ++i) {
                    const double x = Va[i], y = Vb[i];
                    Va[i] = c * x - sn * y;
                    Vb[i] = sn * x + c * y;
                }
            }
        }
    }
    for (int j = 0; j < cols; ++j) sv[j] = sqrt(sumsq(B + (long)j * rows, rows));
    return !converged;
}

/* x (len,) <- (I - beta v v^T) x, v (len,) with v[0] = 1 implied (its stored v[0] is not read). */
static void reflect_one(const double *v, double beta, int len, double *x) {
    const double d = beta * (x[0] + dot(v + 1, x + 1, len - 1));
    x[0] -= d;
    for (int i = 1; i < len; ++i) x[i] -= d * v[i];
}

/* Householder reflections Q^T Bt = [R; 0] of Bt (nz, kr) in place, t = min(kr, nz) of them: reflector c
 * is I - beta[c] v v^T, v = [1; Bt[c+1:, c]] on rows c.. (beta[c] = 0: none); R (t, kr) is left in
 * Bt's upper triangle. */
static void householder(int nz, int kr, double *Bt, double *beta) {
    const int t = kr < nz ? kr : nz;
    for (int c = 0; c < t; ++c) { /* reflector c: v = Bt[c:, c] (v[0] = 1 implied), beta */
        double *v = Bt + (long)c * nz + c;
        const int len = nz - c;
        const double tail = len > 1 ? sumsq(v + 1, len - 1) : 0.0;
        if (tail == 0.0) {
            beta[c] = 0.0;
            continue;
        }
        const double x0 = v[0], norm = sqrt(x0 * x0 + tail);
        const double r = x0 > 0.0 ? -norm : norm, v0 = x0 - r;
        for (int i = 1; i < len; ++i) v[i] /= v0;
        beta[c] = -v0 / r; /* 2 / (v^T v) with v[0] = 1 */
        v[0] = r;
        for (int j = c + 1; j < kr; ++j) reflect_one(v, beta[c], len, Bt + (long)j * nz + c); /* the other columns */
    }
}

/* Z (p, nz) <- Z Q, Q the t reflectors householder left in Bt and beta; w (p,) work. */
static void reflect_basis(int p, int nz, int t, const double *Bt, const double *beta, double *Z, double *restrict w) {
    for (int c = 0; c < t; ++c) { /* Z <- Z H_c = Z - beta (Z v) v^T, column by column (w = Z v) */
        if (beta[c] == 0.0) continue;
        const double *v = Bt + (long)c * nz + c;
        const int len = nz - c;
        memcpy(w, Z + (long)c * p, sizeof(double) * (size_t)p);
        for (int i = 1; i < len; ++i) {
            const double vi = v[i], *restrict Zi = Z + (long)(c + i) * p;
            for (int j = 0; j < p; ++j) w[j] += Zi[j] * vi;
        }
        for (int j = 0; j < p; ++j) w[j] *= beta[c];
        for (int i = 0; i < len; ++i) {
            const double vi = i ? v[i] : 1.0;
            double *restrict Zi = Z + (long)(c + i) * p;
            for (int j = 0; j < p; ++j) Zi[j] -= w[j] * vi;
        }
    }
}

/* The singular values sv (t,) of R^T (kr, t) (R householder's triangle in Bt (nz, kr)) by Jacobi, its
 * right singular vectors in V (t, t); Rt (kr, t) work. Returns 1 when the sweeps do not converge. */
static int triangle_svd(int nz, int kr, const double *Bt, double *Rt, double *V, double *sv) {
    const int t = kr < nz ? kr : nz;
    for (int c = 0; c < t; ++c) { /* R^T (kr, t): R (t, kr) is Bt's upper triangle */
        for (int r = 0; r < kr; ++r) Rt[r + (long)c * kr] = r >= c ? Bt[c + (long)r * nz] : 0.0;
    }
    return jacobi_svd(kr, t, Rt, V, sv);
}

/* Whether every singular value of R, the upper triangle householder left in Bt (t x kr, t = min(kr,
 * nz)), is above tol, proven without its SVD: sigma_min(R) >= sigma_min(R_1) >= 1 / |R_1^-1|_F, R_1 its
 * leading t x t triangle (a wider R's trailing columns only raise it). 1: proven (every level of full
 * rank, the common case: the SVD is not needed); 0: not proven (the SVD decides). W (t * t) work. */
static int surely_full_rank(int nz, int kr, const double *Bt, double tol, double *W) {
    const int t = kr < nz ? kr : nz;
    double inverse[t > 0 ? t : 1]; /* the diagonal's reciprocals: independent divisions, out of the chains */
    for (int i = 0; i < t; ++i) {
        const double d = Bt[i + (long)i * nz];
        if (d == 0.0) return 0;
        inverse[i] = 1.0 / d;
    }
    double fro = 0.0; /* |R_1^-1|_F^2, R_1^-1 by columns: R_1 x_j = e_j */
    for (int j = 0; j < t; ++j) {
        double *x = W + (long)j * t;
        for (int i = j; i >= 0; --i) {
            double sum = i == j ? 1.0 : 0.0;
            for (int l = i + 1; l <= j; ++l) sum -= Bt[i + (long)l * nz] * x[l];
            x[i] = sum * inverse[i];
            fro += x[i] * x[i];
        }
    }
    return isfinite(fro) && fro * tol * tol < 1.0;
}

/* The new basis [Z Q_t V_null, Z Q_rest] into Z2 (p, nz - rank) from Z Q (p, nz; reflect_basis), the
 * null singular directions V_j (sv[j] <= tol, j < t): its column count. */
static int next_basis(int p, int nz, int t, const double *Z, double *Z2, const double *V, const double *sv, double tol) {
    int nfree = 0;
    for (int j = 0; j < t; ++j) { /* Z Q_t V_j for the null singular directions */
        if (sv[j] > tol) continue;
        double *dst = Z2 + (long)nfree++ * p;
        memset(dst, 0, sizeof(double) * (size_t)p);
        for (int c = 0; c < t; ++c) {
            const double w = V[c + (long)j * t];
            const double *Zc = Z + (long)c * p;
            for (int i = 0; i < p; ++i) dst[i] += Zc[i] * w;
        }
    }
    memcpy(Z2 + (long)nfree * p, Z + (long)t * p, sizeof(double) * (size_t)p * (size_t)(nz - t));
    return nfree + nz - t;
}

/* The null space of M (kr, nz) (column-major, leading dimension ldm) within the basis Z (p, nz),
 * its rank decided by M's singular values above tol: Householder reflections Q^T M^T = [R; 0] (Q
 * applied to Z's columns in place), then the SVD of R^T (kr, t) by Jacobi, t = min(kr, nz); the new
 * basis [Z Q_t V_null, Z Q_rest] into Z2 (p, nz - rank), returned: its column count, or -1 when the
 * SVD does not converge. Work: Bt (nz, kr), beta (t), Rt (kr, t), V (t, t), sv (t). */
static int null_space(int p, int kr, int nz, const double *M, int ldm, double tol, double *Z, double *Z2,
                      double *Bt, double *beta, double *Rt, double *V, double *sv) {
    const int t = kr < nz ? kr : nz;
    for (int c = 0; c < kr; ++c) {
        for (int i = 0; i < nz; ++i) Bt[i + (long)c * nz] = M[c + (long)i * ldm];
    }
    householder(nz, kr, Bt, beta);
    reflect_basis(p, nz, t, Bt, beta, Z, Z2);
    if (triangle_svd(nz, kr, Bt, Rt, V, sv)) return -1;
    return next_basis(p, nz, t, Z, Z2, V, sv, tol);
}

/* The implicit basis Z = (H_0 ... H_{r-1})[:, r:] of the levels above's null space while each level
 * had full rank: reflector j is I - qbeta[j] v v^T, v = Q[:, j] (zero above row j, 1 at row j).
 * T (r, r), upper triangular, of its compact WY form: H_0 ... H_{r-1} = I - V T V^T, V = Q[:, :r]
 * (LAPACK's dlarft, forward: T[:j, j] = -beta_j T[:j, :j] V[:, :j]^T v_j). */
static void wy_factor(int p, int r, const double *Q, const double *qbeta, double *T) {
    memset(T, 0, sizeof(double) * (size_t)r * (size_t)r);
    for (int j = 0; j < r; ++j) {
        const double *vj = Q + (long)j * p;
        double *Tj = T + (long)j * r;
        for (int i = 0; i < j; ++i) Tj[i] = -qbeta[j] * dot(Q + (long)i * p + j, vj + j, p - j);
        for (int i = 0; i < j; ++i) { /* times T[:j, :j] (upper triangular): row i from column i on */
            double sum = 0.0;
            for (int l = i; l < j; ++l) sum += T[i + (long)l * r] * Tj[l];
            Tj[i] = sum;
        }
        Tj[j] = qbeta[j];
    }
}

/* x (p,) <- Q x, or Q^T x (transpose), Q = H_0 ... H_{r-1} = I - V T V^T in compact WY form (V = Q[:, :r]
 * of the implicit basis, T their wy_factor): the r products
 * V^T x side by side, not a chain of r reflections each waiting on the last. */
static void apply_wy(int p, int r, const double *V, const double *T, int transpose, double *x) {
    double w[r > 0 ? r : 1];
    for (int i = 0; i < r; ++i) w[i] = dot(V + (long)i * p + i, x + i, p - i); /* V^T x (V zero above i) */
    if (transpose) { /* T^T w, bottom up (row i of T^T: T[:i+1, i]) */
        for (int i = r - 1; i >= 0; --i) w[i] = dot(T + (long)i * r, w, i + 1);
    } else { /* T w, top down (row i of T: T[i, i:]) */
        for (int i = 0; i < r; ++i) {
            double sum = 0.0;
            for (int l = i; l < r; ++l) sum += T[i + (long)l * r] * w[l];
            w[i] = sum;
        }
    }
    for (int l = 0; l < r; ++l) { /* x -= V w */
        const double c = w[l], *Vl = V + (long)l * p;
        for (int i = l; i < p; ++i) x[i] -= c * Vl[i];
    }
}

/* The upper triangle of the n x n matrix G (ld) from its lower triangle, by 4 x 4 blocks transposed in
 * registers. */
static void mirror_lower(int n, double *G, int ld) {
    int c = 0;
    for (; c + 4 <= n; c += 4) {
        double *D = G + c + (long)c * ld; /* the diagonal block */
        for (int j = 0; j < 4; ++j) {
            for (int i = j + 1; i < 4; ++i) D[j + (long)i * ld] = D[i + (long)j * ld];
        }
        for (int i = c + 4; i + 4 <= n; i += 4) { /* block (i, c) transposed into block (c, i) */
            const double *B = G + i + (long)c * ld;
            const v4d b0 = load4(B), b1 = load4(B + ld), b2 = load4(B + 2 * ld), b3 = load4(B + 3 * ld);
            const v4di lo = {0, 4, 2, 6}, hi = {1, 5, 3, 7};
            const v4d t0 = __builtin_shuffle(b0, b1, lo), t1 = __builtin_shuffle(b0, b1, hi);
            const v4d t2 = __builtin_shuffle(b2, b3, lo), t3 = __builtin_shuffle(b2, b3, hi);
            const v4di first = {0, 1, 4, 5}, second = {2, 3, 6, 7};
            double *U = G + c + (long)i * ld;
            store4(U, __builtin_shuffle(t0, t2, first));
            store4(U + ld, __builtin_shuffle(t1, t3, first));
            store4(U + 2 * ld, __builtin_shuffle(t0, t2, second));
            store4(U + 3 * ld, __builtin_shuffle(t1, t3, second));
        }
        for (int i = c + 4 + (n - c - 4) / 4 * 4; i < n; ++i) { /* the last rows (fewer than 4) */
            for (int j = c; j < c + 4; ++j) G[j + (long)i * ld] = G[i + (long)j * ld];
        }
    }
    for (; c < n; ++c) {
        for (int i = c + 1; i < n; ++i) G[c + (long)i * ld] = G[i + (long)c * ld];
    }
}

/* G[r:, r:] <- (Z^T G Z) for the implicit basis Z of r reflectors, one at a time: G (p, p) symmetric, its
 * lower triangle read and reflected on both sides (H_0 first; reflector j leaves rows and columns < j
 * unused after it; the upper triangle is neither read nor written); w (p,) work. Cheaper than
 * reflect_gram's blocked products below 16 variables or for one reflector (Talos's 32 variables: the
 * same for one, 3.9k against 1.4k ticks for three; the Panda's 7 and 6 reflectors: 0.4k against 2.2k). */
static void reflect_gram_each(int p, int r, const double *Q, const double *qbeta, double *G, double *restrict w) {
    for (int j = 0; j < r; ++j) { /* H G H = G - v u^T - u v^T, u = beta G v - beta^2 (v^T G v) / 2 v */
        const double beta = qbeta[j];
        if (beta == 0.0) continue;
        const double *v = Q + (long)j * p;
        for (int i = j; i < p; ++i) w[i] = 0.0;
        for (int c = j; c < p; ++c) { /* w = G v: column c's part on and below the diagonal gives w[c] (a
                                       * dot product) and, by symmetry, G[i, c] v[c] to the w[i] below */
            const double *Gc = G + (long)c * p;
            const double vc = v[c];
            w[c] += dot(Gc + c, v + c, p - c);
            for (int i = c + 1; i < p; ++i) w[i] += Gc[i] * vc;
        }
        const double half = 0.5 * beta * beta * dot(v + j, w + j, p - j);
        for (int i = j; i < p; ++i) w[i] = beta * w[i] - half * v[i];
        for (int c = j; c < p; ++c) { /* the lower triangle */
            const double vc = v[c], wc = w[c];
            double *Gc = G + (long)c * p;
            for (int i = c; i < p; ++i) Gc[i] -= v[i] * wc + w[i] * vc;
        }
    }
}

/* G[r:, r:] <- Z^T G Z for the implicit basis Z of r reflectors, all at once (LAPACK's compact WY
 * form): H_0 ... H_{r-1} = I - V T V^T, V = Q[:, :r] (p, r), T (r, r) upper triangular, so with
 * X = G V T and C = T^T V^T X (symmetric), Z^T G Z = G22 - Y2 V2^T - V2 Y2^T, Y = X - V C / 2 and
 * subscript 2 the rows r:. The products are shortcut.c's blocked ones over r4 (r rounded up to a
 * multiple of 4) columns, zero-padded: whole 8 x 4 blocks. Against one reflector at a time
 * (reflect_gram_each), in time-stamp-counter ticks: 1.4k / 2.8k against 3.9k / 7.2k for 3 / 6
 * reflectors of 32 variables; the same for one; more below 16 variables (the caller chooses). G (p, p)
 * symmetric: its lower triangle read (the upper mirrored from it), G[r:, r:]'s lower triangle
 * written (entries above it: work). T: wy_factor's. Work: U (p (3 r4) + 2 r4^2): [Y | V | X], each
 * part r4 columns, the columns past r zero, then T and C zero-padded to r4 x r4. */
static void reflect_gram(int p, int r, const double *Q, const double *T, double *G, double *U) {
    const int r4 = (r + 3) / 4 * 4;
    double *Y = U, *V = Y + (long)r4 * p, *X = V + (long)r4 * p, *Tp = X + (long)r4 * p, *C = Tp + r4 * r4;
    mirror_lower(p, G, p);
    memcpy(V, Q, sizeof(double) * (size_t)p * (size_t)r);
    memset(V + (long)r * p, 0, sizeof(double) * (size_t)p * (size_t)(r4 - r));
    memset(Tp, 0, sizeof(double) * (size_t)(2 * r4 * r4)); /* T and C, zero-padded to r4 x r4 */
    for (int j = 0; j < r; ++j) memcpy(Tp + (long)j * r4, T + (long)j * r, sizeof(double) * (size_t)(j + 1));
    memset(Y, 0, sizeof(double) * (size_t)p * (size_t)r4); /* Y = -G V */
    gemm_minus(p, r4, p, G, p, V, 1, p, Y, p);
    memset(X, 0, sizeof(double) * (size_t)p * (size_t)r4); /* X = G V T = -Y T */
    gemm_minus(p, r4, r4, Y, p, Tp, 1, r4, X, p);
    for (int j = 0; j < r; ++j) { /* C = T^T (V^T X): first V^T X into C */
        for (int i = 0; i < r; ++i) C[i + (long)j * r4] = dot(V + (long)i * p + i, X + (long)j * p + i, p - i);
    }
    for (int j = 0; j < r; ++j) { /* T^T times column j, bottom up (row i of T^T: T[:i+1, i]), halved */
        double *Cj = C + (long)j * r4;
        for (int i = r - 1; i >= 0; --i) Cj[i] = 0.5 * dot(T + (long)i * r, Cj, i + 1);
    }
    gemm_minus(p, r4, r4, V, p, C, 1, r4, X, p); /* Y = X - V C / 2, in X and then Y */
    memcpy(Y, X, sizeof(double) * (size_t)p * (size_t)r4);
    for (int c0 = r; c0 < p; c0 += 4) { /* G22 -= [Y V] [V Y]^T: its lower triangle, 4 columns at a time */
        const int cols = p - c0 < 4 ? p - c0 : 4, up = p - (p - c0 + 3) / 4 * 4, i0 = up > 0 ? up : 0;
        gemm_minus(p - i0, cols, 2 * r4, Y + i0, p, V + c0, p, 1, G + i0 + (long)c0 * p, p); /* from row i0:
                                                                * whole blocks of 4 rows (entries above the
                                                                * diagonal: work, never read) */
    }
}

/* x (n,) <- Q^T x (transpose) or Q x, Q = H_0 ... H_{t-1} the t reflectors householder left in Bt (n, t)
 * and beta (Q^T x: H_0 first). */
static void householder_apply(int n, int t, const double *Bt, const double *beta, int transpose, double *x) {
    for (int i = 0; i < t; ++i) {
        const int c = transpose ? i : t - 1 - i;
        if (beta[c] != 0.0) reflect_one(Bt + (long)c * n + c, beta[c], n - c, x + c);
    }
}

/* A level with fewer rows than directions left (ld < nz, Z implicit, the levels above's r rows all of
 * full rank), by the push-through identity in the variables y = diag(a) xi, whose regularization is
 * |y|^2: Zy an orthonormal basis of the null space of C diag(a)^-1 (C the levels above's rows of At;
 * Householder reflections of its transpose), B = K diag(a)^-1 Zy (ld, nz), c = -Zy^T y*, the level's
 * step z = c + B^T (I + B B^T)^-1 (e - B c), xi += diag(a)^-1 Zy z: an ld x ld factor instead of the
 * reflected nz x nz normal equations (the same minimizer: both bases span the null space of the rows
 * above; level 0: r = 0, Zy = I, c = 0). I + B B^T >= I: its factor fails only on non-finite data; each
 * term is a product, nothing cancels, while the nz x nz normal matrix's condition is the
 * regularization's, ~1e8 (Talos: CoM | pelvis orientation | posture, 15 x 15 factors for the first
 * two levels, not 32 x 32 and 29 x 29). first: the first level (xi = 0). Work: h->Z (p, r) the
 * reflectors, h->S (p, ld) the rows of K diag(a)^-1 reflected, h->H (ld, ld) the factor, h->y, h->z.
 * 1 when the factor fails. */
static int few_rows_step(wbc_hierarchy_data *h, int ld, int r, int first, const double *a, const double *e) {
    const int p = h->s->p, k = h->s->k, nz = p - r;
    const double *K = h->K;
    double *Ct = h->Z, *S = h->S, *M = h->H, *y = h->y, *c = h->z;
    double beta[r > 0 ? r : 1], w[p > 0 ? p : 1], v[ld > 0 ? ld : 1];
    for (int j = 0; j < p; ++j) w[j] = 1.0 / a[j];
    for (int i = 0; i < r; ++i) { /* (C diag(a)^-1)^T: the rows above (the first r of lev_rows) */
        const int64_t row = h->lev_rows[i];
        double *Ci = Ct + (long)i * p;
        for (int j = 0; j < p; ++j) Ci[j] = h->At[row + (long)j * k] * w[j];
    }
    householder(p, r, Ct, beta);
    for (int q = 0; q < ld; ++q) { /* column q of S: Qy^T (row q of K diag(a)^-1); B^T = S[r:, :] */
        double *Sq = S + (long)q * p;
        for (int j = 0; j < p; ++j) Sq[j] = K[q + (long)j * ld] * w[j];
        householder_apply(p, r, Ct, beta, 1, Sq);
    }
    syrk_lower(ld, nz, S + r, p, M, ld); /* I + B B^T */
    for (int q = 0; q < ld; ++q) M[q + (long)q * ld] += 1.0;
    if (cholesky(ld, M, ld)) return 1;
    if (first) { /* xi = 0: c = 0 */
        memset(c, 0, sizeof(double) * (size_t)nz);
        memcpy(v, e, sizeof(double) * (size_t)ld);
    } else {
        for (int j = 0; j < p; ++j) y[j] = a[j] * h->xi[j]; /* c = -Zy^T y* */
        householder_apply(p, r, Ct, beta, 1, y);
        for (int i = 0; i < nz; ++i) c[i] = -y[r + i];
        gemv_t(nz, ld, S + r, p, c, v); /* e - B c */
        for (int q = 0; q < ld; ++q) v[q] = e[q] - v[q];
    }
    cholesky_solve(ld, M, ld, v);
    small_gemv(nz, ld, S + r, p, v, 1.0, c); /* z = c + B^T v */
    memset(y, 0, sizeof(double) * (size_t)r); /* xi += diag(a)^-1 Qy [0; z] */
    memcpy(y + r, c, sizeof(double) * (size_t)nz);
    householder_apply(p, r, Ct, beta, 0, y);
    for (int j = 0; j < p; ++j) h->xi[j] += y[j] * w[j];
    return 0;
}

/* A level's step by its normal equations (step 2), xi += Z z: K (ld, p) the level's rows and the
 * forces' regularization rows, e (ld + p,) their right-hand side, a and ed the diagonal rows' (a and
 * ed: p,), Z of nz columns, implicit (r reflectors in h->Q) or explicit (h->Z; then S = [K Z; diag(a) Z]
 * is formed in h->S, its leading dimension in *lds). 1 when the factor fails. */
static int normal_step(wbc_hierarchy_data *h, int ld, int nz, int r, int implicit, const double *a, double *e,
                       const double *ed, int *lds) {
    const int p = h->s->p;
    const double *K = h->K;
    double *F = h->H; /* the normal matrix, then its factor (leading dimension ldf) */
    int ldf = nz;
    if (implicit) { /* G = K^T K + diag(a^2), g = K^T e + a ed; H = Z^T G Z, z = Z^T g */
        double *G = r ? h->G : h->H, *g = r ? h->y : h->z;
        syrk_lower(p, ld, K, ld, G, p);
        gemv_t(ld, p, K, ld, e, g);
        for (int j = 0; j < p; ++j) {
            G[j + (long)j * p] += a[j] * a[j];
            g[j] += a[j] * ed[j];
        }
        if (r) {
            if (p >= 16 && r >= 2 && 2 * r <= p) { /* (where the blocked products are the cheaper) */
                reflect_gram(p, r, h->Q, h->Vt, G, h->work);
            } else {
                reflect_gram_each(p, r, h->Q, h->qbeta, G, h->z);
            }
            apply_wy(p, r, h->Q, h->Vt, 1, g); /* Z^T g */
            F = G + r + (long)r * p; /* its trailing block, in place */
            ldf = p;
            memcpy(h->z, g + r, sizeof(double) * (size_t)nz);
        }
    } else { /* S = [K Z; diag(a) Z], e = [e; ed]: H = S^T S, g = S^T e */
        const int ls = *lds = ld + p;
        double *S = h->S;
        for (int c = 0; c < nz; ++c) memset(S + (long)c * ls, 0, sizeof(double) * (size_t)ld);
        gemm_minus(ld, nz, p, K, ld, h->Z, 1, p, S, ls); /* -K Z, then its sign */
        for (int c = 0; c < nz; ++c) {
            double *Sc = S + (long)c * ls;
            const double *Zc = h->Z + (long)c * p;
            for (int i = 0; i < ld; ++i) Sc[i] = -Sc[i];
            for (int i = 0; i < p; ++i) Sc[ld + i] = a[i] * Zc[i];
        }
        memcpy(e + ld, ed, sizeof(double) * (size_t)p);
        syrk_lower(nz, ls, S, ls, h->H, nz);
        gemv_t(ls, nz, S, ls, e, h->z);
    }
    if (cholesky(nz, F, ldf)) return 1;
    cholesky_solve(nz, F, ldf, h->z);
    if (implicit && r == 0) {
        for (int j = 0; j < p; ++j) h->xi[j] += h->z[j];
    } else if (implicit) { /* xi += Z z = H_0 ... H_{r-1} [0; z] */
        double *y = h->y;
        memset(y, 0, sizeof(double) * (size_t)r);
        memcpy(y + r, h->z, sizeof(double) * (size_t)nz);
        apply_wy(p, r, h->Q, h->Vt, 0, y);
        for (int j = 0; j < p; ++j) h->xi[j] += y[j];
    } else {
        small_gemv(p, nz, h->Z, p, h->z, 1.0, h->xi);
    }
    return 0;
}

/* u = T xi + u0 into s->u, then C u <= d (shortcut.c's check); WBC_FAILED when u is not finite. */
static int hierarchy_u(wbc_hierarchy_data *h) {
    wbc_shortcut_data *s = h->s;
    const int n = s->p + s->m, p = s->p;
    for (int j = 0; j < p; ++j) s->u[j] = h->T[j + (long)j * n] * h->xi[j]; /* T's actuator block is diagonal */
    if (s->m) small_gemv(s->m, p, h->T + p, n, h->xi, 0.0, s->u + p);
    for (int i = 0; i < n; ++i) {
        s->u[i] += h->u0[i];
        if (!isfinite(s->u[i])) return WBC_FAILED;
    }
    return check(s);
}

/* Step 1: T, u0, At, bt (and sq = |A[:, i]|^2, floor_ = |Bhat[:, i]|^2); WBC_FAILED when the Delassus
 * matrix is not positive definite. */
static int hierarchy_reduce(wbc_hierarchy_data *h) {
    wbc_shortcut_data *s = h->s;
    const int k = s->k, p = s->p, m = s->m, n = p + m, p1 = p + 1, nv = s->nv;
    const double *A = s->A, *Aeq = s->Aeq;
    double *X = s->X, *L = s->L, *T = h->T, *At = h->At;
    column_sumsq(k, n, A, k, h->sq);
    column_sumsq(nv, n, s->Bhat, nv, h->floor_);
    memcpy(h->bt, s->b, sizeof(double) * (size_t)k);
    memcpy(At, A, sizeof(double) * (size_t)k * (size_t)p); /* A_x: A's first p columns */
    memset(h->u0, 0, sizeof(double) * (size_t)n);
    if (m) { /* X = Lam^-1 [E_x, b_eq]; N = [I; -X_x], u0 = [0; X_b]; A N = A_x - A_f X_x, b - A u0 */
        for (int j = 0; j < m; ++j) {
            for (int i = 0; i < m; ++i) L[i + j * m] = Aeq[i + (long)(p + j) * m];
        }
        if (cholesky(m, L, m)) return WBC_FAILED; /* loops, as wbc_shortcut's (LAPACK costs more at m ~ 12) */
        memcpy(X, Aeq, sizeof(double) * (size_t)m * (size_t)p);
        memcpy(X + (long)p * m, s->beq, sizeof(double) * (size_t)m);
        cholesky_solve_many(m, L, m, p1, X, m);
        gemm_minus(k, p, m, A + (long)p * k, k, X, 1, m, At, k);
        gemm_minus(k, 1, m, A + (long)p * k, k, X + (long)p * m, 1, m, h->bt, k);
        for (int l = 0; l < m; ++l) h->u0[p + l] = X[l + (long)p * m];
    }
    /* D: the unit-diagonal Hessian of the weighted problem, D_j = 1 / sqrt(|A N e_j|^2 + (N^T diag(r) N)_jj),
     * N's column j e_j above and -X_x[:, j] below: (N^T diag(r) N)_jj = r_j + |diag(sqrt(r_f)) X_x e_j|^2 */
    double *norms = h->sr, *regs = h->above; /* (work until the levels) */
    column_sumsq(k, p, At, k, norms);
    memset(regs, 0, sizeof(double) * (size_t)p);
    if (m) {
        double root[m], *Xw = h->K; /* diag(sqrt(r_f)) X_x (K: work until the levels) */
        for (int l = 0; l < m; ++l) root[l] = sqrt(s->reg * h->sq[p + l] + 1e-12);
        for (int j = 0; j < p; ++j) {
            for (int l = 0; l < m; ++l) Xw[l + (long)j * m] = root[l] * X[l + (long)j * m];
        }
        column_sumsq(m, p, Xw, m, regs);
    }
    for (int j = 0; j < p; ++j) T[j + (long)j * n] = 1.0 / sqrt(norms[j] + s->reg * h->sq[j] + 1e-12 + regs[j]);
    for (int j = 0; j < p; ++j) { /* T = N D, At = A N D */
        const double inv = T[j + (long)j * n];
        double *Tj = T + (long)j * n, *Aj = At + (long)j * k;
        for (int l = 0; l < m; ++l) Tj[p + l] = -X[l + (long)j * m] * inv;
        for (int i = 0; i < k; ++i) Aj[i] *= inv;
    }
    return WBC_FEASIBLE;
}

/* Steps 2 to 4 over every level; WBC_FEASIBLE with s->u the hierarchy's solution.
 *
 * While every level above had full rank, Z stays implicit: the reflectors of their null-space updates
 * (h->Q, h->qbeta: r of them, Z = (H_0 ... H_{r-1})[:, r:]), and a level's normal equations are those
 * of all p variables, G = K^T K + diag(a^2), g = K^T e + a ed, reflected on both sides, their trailing
 * block kept (Z^T G Z, Z^T g: reflect_gram and apply_wy) instead of the products K Z and (K Z)^T (K Z)
 * over a basis of p columns. A level of lower rank makes Z explicit (h->Z) for the levels below. */
static int hierarchy_levels(wbc_hierarchy_data *h) {
    wbc_shortcut_data *s = h->s;
    const int k = s->k, p = s->p, n = p + s->m;
    int nz = p, code = WBC_FEASIBLE;
    int implicit = 1, r = 0; /* Z implicit: r reflectors (Z = I at level 0) */
    memset(h->xi, 0, sizeof(double) * (size_t)p);
    memset(h->above, 0, sizeof(double) * (size_t)n);
    h->solved = 0;
    for (int lev = 0; lev < h->nlev; ++lev) {
        const int64_t *rows = h->lev_rows + h->lev_start[lev];
        const int kr = (int)(h->lev_start[lev + 1] - h->lev_start[lev]), ld = kr + s->m;
        const int last = lev == h->nlev - 1;
        double *K = h->K, *e = h->e;
        const int64_t r0 = kr ? rows[0] : 0;
        const int block = kr == 0 || rows[kr - 1] - r0 == kr - 1; /* the level's rows are consecutive */
        if (last && h->lev_start[h->nlev] == k) { /* the levels hold every cost row: all of them */
            memcpy(h->above, h->sq, sizeof(double) * (size_t)n);
        } else {
            for (int i = 0; i < n; ++i) { /* this level's regularization */
                const double *Ai = s->A + (long)i * k;
                double a = 0.0;
                if (block) {
                    a = sumsq(Ai + r0, kr);
                } else {
                    for (int q = 0; q < kr; ++q) a += Ai[rows[q]] * Ai[rows[q]];
                }
                h->above[i] += a;
            }
        }
        const double floor_weight = last ? 0.0 : 1.0;
        for (int i = 0; i < n; ++i) { /* (apart: vectorized square roots) */
            h->sr[i] = sqrt(s->reg * (h->above[i] + floor_weight * h->floor_[i]) + 1e-12);
        }
        /* R = diag(sr) T = [diag(a); R_f], a = sr_x D (T's actuator block is D, u0's is 0): K holds
         * At_k and R_f (m rows), the diagonal rows enter H and g as diag(a) Z */
        double *a = h->a, *ed = h->sv;
        for (int j = 0; j < p; ++j) { /* K = [At_k; R_f] */
            double *Kj = K + (long)j * ld;
            const double *Atj = h->At + (long)j * k, *Tj = h->T + (long)j * n;
            if (block) { /* (a loop: a few rows, cheaper than a call) */
                for (int q = 0; q < kr; ++q) Kj[q] = Atj[r0 + q];
            } else {
                for (int q = 0; q < kr; ++q) Kj[q] = Atj[rows[q]];
            }
            for (int i = p; i < n; ++i) Kj[kr + i - p] = h->sr[i] * Tj[i];
            a[j] = h->sr[j] * Tj[j];
            ed[j] = -a[j] * h->xi[j];
        }
        for (int q = 0; q < kr; ++q) e[q] = h->bt[rows[q]];
        for (int i = p; i < n; ++i) e[kr + i - p] = -h->sr[i] * h->u0[i];
        if (lev) gemm_minus(ld, 1, p, K, ld, h->xi, 1, p, e, ld); /* e -= K xi */
        int lds = ld; /* the level's matrix: K (Z implicit) or [K Z; diag(a) Z] in h->S (Z explicit) */
        if (implicit && r) wy_factor(p, r, h->Q, h->qbeta, h->Vt); /* T of the implicit basis, in Vt */
        const int few = implicit && ld < nz && r == h->lev_start[lev]; /* (r: the rows above, all kept) */
        const int failed = few ? few_rows_step(h, ld, r, lev == 0, a, e)
                               : normal_step(h, ld, nz, r, implicit, a, e, ed, &lds);
        if (failed) return WBC_FAILED;
        const double *S = implicit ? K : h->S;
        code = hierarchy_u(h);
        if (code != WBC_FEASIBLE) return code;
        h->solved = lev + 1;
        if (last) break;
        /* the directions this level leaves free: At_k Z's null space (singular values <= rank_tol |At_k|) */
        double scale = 0.0;
        for (int j = 0; j < p; ++j) {
            const double *Kj = K + (long)j * ld;
            for (int q = 0; q < kr; ++q) scale += Kj[q] * Kj[q];
        }
        scale = fmax(sqrt(scale), 1e-300);
        const double tol = h->rank_tol * scale;
        const int t = kr < nz ? kr : nz;
        double *Rt = h->work, *beta = h->work + (long)kr * t, *Bt = h->Mc;
        int nfree;
        if (implicit) { /* (At_k Z)^T = (H_{r-1} ... H_0 At_k^T)[r:] into Bt (nz, kr) */
            double *y = h->y;
            for (int q = 0; q < kr; ++q) {
                for (int j = 0; j < p; ++j) y[j] = K[q + (long)j * ld];
                if (r) apply_wy(p, r, h->Q, h->Vt, 1, y);
                memcpy(Bt + (long)q * nz, y + r, sizeof(double) * (size_t)nz);
            }
            householder(nz, kr, Bt, beta);
            int full = surely_full_rank(nz, kr, Bt, tol, h->Vt);
            if (!full) { /* the SVD decides, as numpy's does (its directions are needed below) */
                if (triangle_svd(nz, kr, Bt, Rt, h->Vt, h->sv)) return WBC_FAILED;
                full = 1;
                for (int j = 0; j < t; ++j) full &= h->sv[j] > tol;
            }
            if (full) { /* the level's reflectors join the implicit basis */
                for (int c = 0; c < t; ++c) {
                    double *v = h->Q + (long)(r + c) * p;
                    memset(v, 0, sizeof(double) * (size_t)(r + c));
                    v[r + c] = 1.0;
                    memcpy(v + r + c + 1, Bt + (long)c * nz + c + 1, sizeof(double) * (size_t)(nz - c - 1));
                    h->qbeta[r + c] = beta[c];
                }
                r += t;
                nz -= t;
                if (nz == 0) break;
                continue;
            }
            if (r) wy_factor(p, r, h->Q, h->qbeta, h->G); /* (Vt's T is spent: G is free) */
            for (int c = 0; c < nz; ++c) { /* Z explicit from now on: Z e_c = H_0 ... H_{r-1} e_{r+c} */
                double *Zc = h->Z + (long)c * p;
                memset(Zc, 0, sizeof(double) * (size_t)p);
                Zc[r + c] = 1.0;
                if (r) apply_wy(p, r, h->Q, h->G, 0, Zc);
            }
            implicit = 0;
            reflect_basis(p, nz, t, Bt, beta, h->Z, h->Z2);
            nfree = next_basis(p, nz, t, h->Z, h->Z2, h->Vt, h->sv, tol);
        } else {
            nfree = null_space(p, kr, nz, S, lds, tol, h->Z, h->Z2, Bt, beta, Rt, h->Vt, h->sv);
            if (nfree < 0) return WBC_FAILED;
        }
        if (nfree == 0) break;
        memcpy(h->Z, h->Z2, sizeof(double) * (size_t)p * (size_t)nfree);
        nz = nfree;
    }
    return code;
}

/* The levels on the current outputs (gathered; the costs assembled where some are rows of Bhat):
 * WBC_FEASIBLE (s->u the hierarchy's solution), WBC_INFEASIBLE (a level's minimizer breaks a row of
 * C u <= d) or WBC_FAILED. */
int wbc_hierarchy(wbc_hierarchy_data *h) {
    wbc_shortcut_data *s = h->s;
    if (s->na) assemble_costs(s, 0, s->p + s->m, s->A_full, s->k); /* s->A is A_full */
    const int code = hierarchy_reduce(h);
    return code == WBC_FEASIBLE ? hierarchy_levels(h) : code;
}

static int hierarchy_solve(void *ctx) { return wbc_hierarchy(ctx); }

/* wbc_step's counterpart: the checks, the kernel, the gathers, the levels, the command. */
int wbc_hierarchy_step(wbc_hierarchy_data *h) { return step_with(h->s, hierarchy_solve, h); }

#ifdef WBC_WITH_PYTHON
/* wbc_hierarchy_step on Python objects q and v (as wbc_step_objects). */
int wbc_hierarchy_step_objects(wbc_hierarchy_data *h, PyObject *q, PyObject *v) {
    return objects_with(h->s, q, v, hierarchy_solve, h);
}

static int hierarchy_step_objects(void *h, PyObject *q, PyObject *v) { return wbc_hierarchy_step_objects(h, q, v); }

/* wbc_hierarchy_step_objects as a builtin step(q, v) (shortcut.c's step_builtin). */
static PyObject *wbc_hierarchy_step_builtin(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return step_builtin(self, args, nargs, hierarchy_step_objects);
}

static PyMethodDef wbc_hierarchy_step_definition = {
    "step", (PyCFunction)(void (*)(void))wbc_hierarchy_step_builtin, METH_FASTCALL,
    "The levels' one-call step on q and v (a return code)."};

/* The method definition of wbc_hierarchy_step_builtin (static: it outlives every function made from it). */
void *wbc_hierarchy_step_method(void) { return &wbc_hierarchy_step_definition; }
#endif

#define WBC_HFIELD(name) {#name, (long)offsetof(wbc_hierarchy_data, name)}
static const wbc_abi_entry_t wbc_hierarchy_fields[] = {
    WBC_HFIELD(s),     WBC_HFIELD(nlev),     WBC_HFIELD(kmax),      WBC_HFIELD(lwork), WBC_HFIELD(solved),
    WBC_HFIELD(rank_tol), WBC_HFIELD(lev_rows), WBC_HFIELD(lev_start), WBC_HFIELD(sq), WBC_HFIELD(above),
    WBC_HFIELD(floor_), WBC_HFIELD(sr), WBC_HFIELD(a),      WBC_HFIELD(T),         WBC_HFIELD(u0),    WBC_HFIELD(At),
    WBC_HFIELD(bt),    WBC_HFIELD(K),        WBC_HFIELD(e),         WBC_HFIELD(S),     WBC_HFIELD(H),
    WBC_HFIELD(Z),     WBC_HFIELD(Z2),       WBC_HFIELD(xi),        WBC_HFIELD(z),     WBC_HFIELD(Vt),
    WBC_HFIELD(sv),    WBC_HFIELD(Mc),       WBC_HFIELD(work),      WBC_HFIELD(G),     WBC_HFIELD(Q),
    WBC_HFIELD(qbeta), WBC_HFIELD(y),
};

size_t wbc_hierarchy_abi_size(void) { return sizeof(wbc_hierarchy_data); }

/* Field i of wbc_hierarchy_data: its name and *offset, or NULL past the end. */
const char *wbc_hierarchy_abi_entry(int i, long *value) {
    if (i < 0 || i >= (int)(sizeof wbc_hierarchy_fields / sizeof wbc_hierarchy_fields[0])) return NULL;
    *value = wbc_hierarchy_fields[i].value;
    return wbc_hierarchy_fields[i].name;
}
