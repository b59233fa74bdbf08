/* The batch driver of wbc.codegen.batch: one CasADi-generated kernel over N states, in threads.
 *
 * wbc_batch splits the N states into contiguous chunks, one per thread; each thread owns its work
 * vectors (iw, w) and its argument/result pointer arrays, and calls the kernel's C entry point once
 * per state, exactly as a single call does (a batched call equals N single calls bit for bit).
 * Called through ctypes.CDLL, which releases the GIL for the whole call.
 *
 * Return codes: 0 done; 1 the kernel returned nonzero (*failed: the first failing state); 2 no memory
 * for the threads' work vectors (nothing computed).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef long long wbc_int;
typedef int (*wbc_eval)(const double **arg, double **res, wbc_int *iw, double *w, int mem);
typedef int (*wbc_checkout)(void);
typedef void (*wbc_release)(int mem);

typedef struct {
    wbc_eval eval;
    wbc_checkout checkout;
    wbc_release release;
    int n_in;
    const double *const *in;
    const wbc_int *in_stride; /* doubles between states (0: shared by every state) */
    int n_out;
    double *const *out;
    const wbc_int *out_stride;
    const wbc_int *sizes; /* arg, res, iw, w of the kernel */
    wbc_int begin, end;   /* this thread's states */
    wbc_int failed;       /* first failing state of this chunk, or -1 */
    int no_memory;
} wbc_chunk;

static void *wbc_run_chunk(void *opaque) {
    wbc_chunk *c = (wbc_chunk *)opaque;
    wbc_int n_arg = c->sizes[0] > c->n_in ? c->sizes[0] : c->n_in;
    wbc_int n_res = c->sizes[1] > c->n_out ? c->sizes[1] : c->n_out;
    const double **arg = (const double **)calloc((size_t)(n_arg > 0 ? n_arg : 1), sizeof(double *));
    double **res = (double **)calloc((size_t)(n_res > 0 ? n_res : 1), sizeof(double *));
    wbc_int *iw = (wbc_int *)malloc(sizeof(wbc_int) * (size_t)(c->sizes[2] > 0 ? c->sizes[2] : 1));
    double *w = (double *)malloc(sizeof(double) * (size_t)(c->sizes[3] > 0 ? c->sizes[3] : 1));
    c->failed = -1;
    c->no_memory = 0;
    if (!arg || !res || !iw || !w) {
        c->no_memory = 1;
    } else {
        int mem = c->checkout ? c->checkout() : 0;
        for (wbc_int s = c->begin; s < c->end; ++s) {
            for (int j = 0; j < c->n_in; ++j) arg[j] = c->in[j] + c->in_stride[j] * s;
            for (int j = 0; j < c->n_out; ++j) res[j] = c->out[j] + c->out_stride[j] * s;
            if (c->eval(arg, res, iw, w, mem) != 0) {
                c->failed = s;
                break;
            }
        }
        if (c->release) c->release(mem);
    }
    free(arg);
    free(res);
    free(iw);
    free(w);
    return NULL;
}

int wbc_batch(void *eval, void *checkout, void *release, int n_in, const double *const *in,
              const wbc_int *in_stride, int n_out, double *const *out, const wbc_int *out_stride, wbc_int n,
              const wbc_int *sizes, int threads, wbc_int *failed) {
    if (threads < 1) threads = 1;
    if ((wbc_int)threads > n) threads = (int)(n > 0 ? n : 1);
    wbc_chunk *chunks = (wbc_chunk *)calloc((size_t)threads, sizeof(wbc_chunk));
    pthread_t *ids = (pthread_t *)calloc((size_t)threads, sizeof(pthread_t));
    int *started = (int *)calloc((size_t)threads, sizeof(int));
    if (!chunks || !ids || !started) {
        free(chunks);
        free(ids);
        free(started);
        return 2;
    }
    wbc_int per = n / threads, extra = n % threads, at = 0;
    for (int t = 0; t < threads; ++t) {
        wbc_chunk *c = &chunks[t];
        c->eval = (wbc_eval)(uintptr_t)eval;
        c->checkout = (wbc_checkout)(uintptr_t)checkout;
        c->release = (wbc_release)(uintptr_t)release;
        c->n_in = n_in;
        c->in = in;
        c->in_stride = in_stride;
        c->n_out = n_out;
        c->out = out;
        c->out_stride = out_stride;
        c->sizes = sizes;
        c->begin = at;
        at += per + (t < extra ? 1 : 0);
        c->end = at;
    }
    /* the calling thread runs the first chunk; the others get a thread each (or run here if none starts) */
    for (int t = 1; t < threads; ++t) started[t] = pthread_create(&ids[t], NULL, wbc_run_chunk, &chunks[t]) == 0;
    wbc_run_chunk(&chunks[0]);
    for (int t = 1; t < threads; ++t) {
        if (started[t])
            pthread_join(ids[t], NULL);
        else
            wbc_run_chunk(&chunks[t]);
    }
    int status = 0;
    *failed = -1;
    for (int t = 0; t < threads; ++t) {
        if (chunks[t].no_memory) status = 2;
    }
    if (status == 0) {
        for (int t = 0; t < threads; ++t) {
            if (chunks[t].failed >= 0) {
                *failed = chunks[t].failed;
                status = 1;
                break;
            }
        }
    }
    free(chunks);
    free(ids);
    free(started);
    return status;
}
