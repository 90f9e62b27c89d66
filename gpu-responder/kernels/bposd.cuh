// BP+OSD on the GPU: belief propagation (min-sum or product-sum, flooding schedule) and
// ordered-statistics decoding (OSD-0, OSD-CS) with GF(2) elimination on bit-packed rows,
// run by one block. The update rules, their floating-point operations and their order are
// those of backline-decoders (which follows ldpc 2.x), so the corrections are the same bit for
// bit; see backline-decoders's bp.rs and osd.rs for the derivation. Parallelism is across
// checks, bits, rows and candidates: every value is computed by exactly one thread in the
// same order as on the CPU, so the result does not depend on the number of threads.
//
// Included by persistent.cu after port.h, backline_gpu.h and the BlShared declaration.

#define BL_ABS_MASK 0x7FFFFFFFFFFFFFFFull
#define BL_F64_MAX_BITS 0x7FEFFFFFFFFFFFFFull

BL_DEV bl_u32 bl_row_bit(const bl_u64 *row, bl_u32 j) {
    return (bl_u32)(row[j >> 6] >> (j & 63u)) & 1u;
}

// Order-preserving key of a float without NaN: -0.0 and 0.0 are equal (the caller adds 0.0).
BL_DEV bl_u64 bl_ordered(double v) {
    bl_u64 b = bl_double_bits(v);
    return (b >> 63) ? ~b : (b | (1ull << 63));
}

// The min-sum message of check r to each of its edges, from the other inputs, with factor
// alpha: sign from the syndrome bit and the inputs <= 0, magnitude alpha times the smallest
// other input magnitude (f64::MAX when there is none; compared as bit patterns, so a NaN
// magnitude is never a minimum).
BL_DEV void bl_check_min_sum(const BlBposd *d, bl_u32 r, double alpha) {
    const bl_u32 *rs = (const bl_u32 *)d->row_start;
    const bl_u32 *re = (const bl_u32 *)d->row_edges;
    const double *b2c = (const double *)d->b2c;
    double *c2b = (double *)d->c2b;
    bl_u32 parity = ((const bl_u32 *)d->syndrome)[r];
    bl_u64 min1 = BL_F64_MAX_BITS, min2 = BL_F64_MAX_BITS;
    for (bl_u32 k = rs[r]; k < rs[r + 1]; k++) {
        double v = b2c[re[k]];
        parity ^= (bl_u32)(v <= 0.0);
        bl_u64 a = bl_double_bits(v) & BL_ABS_MASK;
        bl_u64 hi = min1 > a ? min1 : a;
        min2 = min2 < hi ? min2 : hi;
        min1 = min1 < a ? min1 : a;
    }
    double s1 = bl_bits_double(min1) * alpha;
    double s2 = bl_bits_double(min2) * alpha;
    bl_u64 sign_all = (bl_u64)parity << 63;
    for (bl_u32 k = rs[r]; k < rs[r + 1]; k++) {
        double v = b2c[re[k]];
        bl_u64 sign = sign_all ^ ((bl_u64)(v <= 0.0) << 63);
        double mag = ((bl_double_bits(v) & BL_ABS_MASK) == min1) ? s2 : s1;
        c2b[re[k]] = bl_bits_double(bl_double_bits(mag) ^ sign);
    }
}

BL_DEV double bl_log_ratio(double x) {
    if (x == 1.0) return BL_INF;
    if (x == -1.0) return -BL_INF;
    return bl_log((1.0 + x) / (1.0 - x));
}

// The product-sum message of check r to each edge: (-1)^s ln((1 + x)/(1 - x)), x the product
// of the other inputs' tanh(v/2), as (product before) * (product after, from the back).
BL_DEV void bl_check_product_sum(const BlBposd *d, bl_u32 r) {
    const bl_u32 *rs = (const bl_u32 *)d->row_start;
    const bl_u32 *re = (const bl_u32 *)d->row_edges;
    const double *b2c = (const double *)d->b2c;
    double *c2b = (double *)d->c2b;
    double *t = (double *)d->edge_tmp;
    double acc = 1.0;
    for (bl_u32 k = rs[r]; k < rs[r + 1]; k++) {
        bl_u32 e = re[k];
        double th = bl_tanh(b2c[e] / 2.0);
        t[e] = th;
        c2b[e] = acc;
        acc *= th;
    }
    double sign = ((const bl_u32 *)d->syndrome)[r] ? -1.0 : 1.0;
    acc = 1.0;
    for (bl_u32 k = rs[r + 1]; k-- > rs[r];) {
        bl_u32 e = re[k];
        c2b[e] = sign * bl_log_ratio(c2b[e] * acc);
        acc *= t[e];
    }
}

// Bit c's update: soft output prior + the incoming messages in ascending row order, its hard
// decision (flipping the parity of its checks), and each outgoing message as the forward
// partial sum before it plus the later incoming messages summed from the back. Returns
// whether any outgoing message changed (bit for bit).
BL_DEV bl_u32 bl_bit_update(const BlBposd *d, bl_u32 c) {
    const bl_u32 *cs = (const bl_u32 *)d->col_start;
    const bl_u32 *er = (const bl_u32 *)d->edge_row;
    double *b2c = (double *)d->b2c;
    const double *c2b = (const double *)d->c2b;
    double *pre = (double *)d->edge_tmp;
    double sum = ((const double *)d->prior)[c];
    for (bl_u32 e = cs[c]; e < cs[c + 1]; e++) {
        pre[e] = sum;
        sum += c2b[e];
    }
    ((double *)d->llr)[c] = sum;
    bl_u32 flip = (bl_u32)(sum <= 0.0);
    ((bl_u32 *)d->decision)[c] = flip;
    bl_u32 changed = 0;
    double suffix = 0.0;
    for (bl_u32 e = cs[c + 1]; e-- > cs[c];) {
        double out = pre[e] + suffix;
        suffix += c2b[e];
        changed |= (bl_u32)(bl_double_bits(out) != bl_double_bits(b2c[e]));
        b2c[e] = out;
        if (flip) bl_atomic_xor_u32(&((bl_u32 *)d->parity)[er[e]], 1u);
    }
    return changed;
}

// Flooding BP. Returns 1 when the hard decision reproduces the syndrome. Two barriers per
// iteration: the check pass of iteration it also tests the decisions of iteration it - 1, so
// the flags of an iteration live in slot it % 4 and are cleared two iterations later, when
// every thread has read them.
BL_DEV bl_u32 bl_bp(const BlBposd *d, BlShared *sh) {
    const bl_u32 tid = bl_tid(), nt = bl_nthreads();
    const bl_u32 *syn = (const bl_u32 *)d->syndrome;
    bl_u32 *parity = (bl_u32 *)d->parity;
    const double *alpha = (const double *)d->alpha;
    for (bl_u32 it = 1;; it++) {
        for (bl_u32 r = tid; r < d->m; r += nt) {
            if (it > 1) {
                if (parity[r] != syn[r]) bl_atomic_or_u32(&sh->mismatch[(it - 1) & 3u], 1u);
                parity[r] = 0;
            }
            if (it <= d->max_iter) {
                if (d->method == BL_BP_MIN_SUM)
                    bl_check_min_sum(d, r, alpha[it]);
                else
                    bl_check_product_sum(d, r);
            }
        }
        bl_sync();
        if (it > 1) {
            if (sh->mismatch[(it - 1) & 3u] == 0) return 1;
            if (d->fixed_point && sh->changed[(it - 1) & 3u] == 0) return 0;
        }
        if (it > d->max_iter) return 0;
        if (tid == 0) {
            sh->changed[(it + 2) & 3u] = 0;
            sh->mismatch[(it + 2) & 3u] = 0;
        }
        bl_u32 changed = 0;
        for (bl_u32 c = tid; c < d->n; c += nt) changed |= bl_bit_update(d, c);
        if (changed) bl_atomic_or_u32(&sh->changed[it & 3u], 1u);
        bl_sync();
    }
}

// ldpc's qsort comparator: greater, smaller, else equal (so NaN equals everything).
BL_DEV int bl_compare(double a, double b) { return a > b ? 1 : (a < b ? -1 : 0); }

// glibc's top-down merge sort of (value, index) pairs, without recursion: an explicit stack of
// (start, length, stage) frames visits the same halves in the same order. One thread.
BL_DEV void bl_merge_sort(bl_u64 *b, bl_u64 *tmp, bl_u32 n) {
    bl_u32 lo_s[64], n_s[64], st_s[64];
    int sp = 0;
    lo_s[0] = 0;
    n_s[0] = n;
    st_s[0] = 0;
    while (sp >= 0) {
        bl_u32 lo = lo_s[sp], len = n_s[sp];
        if (len <= 1) {
            sp--;
            continue;
        }
        bl_u32 n1 = len / 2;
        if (st_s[sp] == 0) {
            st_s[sp] = 1;
            sp++;
            lo_s[sp] = lo, n_s[sp] = n1, st_s[sp] = 0;
            continue;
        }
        if (st_s[sp] == 1) {
            st_s[sp] = 2;
            sp++;
            lo_s[sp] = lo + n1, n_s[sp] = len - n1, st_s[sp] = 0;
            continue;
        }
        bl_u32 i = 0, j = 0, k = 0, n2 = len - n1;
        bl_u64 *l = b + 2 * lo, *r = b + 2 * (lo + n1);
        while (i < n1 && j < n2) {
            if (bl_compare(bl_bits_double(l[2 * i]), bl_bits_double(r[2 * j])) <= 0) {
                tmp[2 * k] = l[2 * i], tmp[2 * k + 1] = l[2 * i + 1];
                i++;
            } else {
                tmp[2 * k] = r[2 * j], tmp[2 * k + 1] = r[2 * j + 1];
                j++;
            }
            k++;
        }
        for (; i < n1; i++, k++) tmp[2 * k] = l[2 * i], tmp[2 * k + 1] = l[2 * i + 1];
        for (bl_u32 q = 0; q < 2 * k; q++) l[q] = tmp[q];
        sp--;
    }
}

// Orders the columns by soft output ascending, ties by index (ldpc's qsort): without NaN by
// rank counting over unique keys, with NaN by the merge sort itself.
BL_DEV void bl_sort_columns(const BlBposd *d, BlShared *sh) {
    const bl_u32 tid = bl_tid(), nt = bl_nthreads(), n = d->n;
    const double *llr = (const double *)d->llr;
    bl_u32 *perm = (bl_u32 *)d->perm, *pos = (bl_u32 *)d->pos;
    for (bl_u32 c = tid; c < n; c += nt)
        if (llr[c] != llr[c]) bl_atomic_or_u32(&sh->nan, 1u);
    bl_sync();
    if (!sh->nan) {
        for (bl_u32 c = tid; c < n; c += nt) {
            bl_u64 kc = bl_ordered(llr[c] + 0.0);
            bl_u32 p = 0;
            for (bl_u32 j = 0; j < n; j++) {
                bl_u64 kj = bl_ordered(llr[j] + 0.0);
                p += (bl_u32)(kj < kc || (kj == kc && j < c));
            }
            pos[c] = p;
            perm[p] = c;
        }
    } else if (tid == 0) {
        bl_u64 *buf = (bl_u64 *)d->sort_buf;
        for (bl_u32 c = 0; c < n; c++) buf[2 * c] = bl_double_bits(llr[c]), buf[2 * c + 1] = c;
        bl_merge_sort(buf, (bl_u64 *)d->sort_tmp, n);
        for (bl_u32 p = 0; p < n; p++) {
            perm[p] = (bl_u32)buf[2 * p + 1];
            pos[perm[p]] = p;
        }
    }
    bl_sync();
}

// The value candidate t gives bit b. Candidates are numbered as the sweep visits them: 0 is
// OSD-0, 1 + i flips free position i, and 1 + k + q flips the q-th pair (i < j) among the
// first `order` free positions in lexicographic order.
struct BlFlips {
    bl_u32 f0, f1;  // flipped positions, or BL_NONE
};

BL_DEV BlFlips bl_flips_of(const BlBposd *d, bl_u32 t, bl_u32 k) {
    const bl_u32 *fp = (const bl_u32 *)d->free_pos;
    BlFlips f = {BL_NONE, BL_NONE};
    if (t == 0) return f;
    if (t <= k) {
        f.f0 = fp[t - 1];
        return f;
    }
    bl_u32 q = t - 1 - k, i = 0;
    while (q >= d->order - 1 - i) q -= d->order - 1 - i, i++;
    f.f0 = fp[i];
    f.f1 = fp[i + 1 + q];
    return f;
}

BL_DEV bl_u32 bl_candidate_bit(const BlBposd *d, BlFlips f, bl_u32 b, bl_u32 rank) {
    const bl_u64 *a = (const bl_u64 *)d->a;
    bl_u32 j = ((const bl_u32 *)d->pos)[b];
    bl_u32 r = ((const bl_u32 *)d->pivot_row)[j];
    if (r != BL_NONE && r < rank) {
        const bl_u64 *row = a + (bl_u64)r * d->wpr;
        bl_u32 v = bl_row_bit(row, d->n);
        if (f.f0 != BL_NONE) v ^= bl_row_bit(row, f.f0);
        if (f.f1 != BL_NONE) v ^= bl_row_bit(row, f.f1);
        return v;
    }
    return (bl_u32)(j == f.f0 || j == f.f1);
}

// OSD on the soft output of BP; writes the correction to d->decision.
BL_DEV void bl_osd(const BlBposd *d, BlShared *sh) {
    const bl_u32 tid = bl_tid(), nt = bl_nthreads(), n = d->n, m = d->m, wpr = d->wpr;
    bl_u64 *a = (bl_u64 *)d->a;
    const bl_u32 *syn = (const bl_u32 *)d->syndrome;
    bl_u32 *free_pos = (bl_u32 *)d->free_pos, *pivots = (bl_u32 *)d->pivots;
    bl_u32 *pivot_row = (bl_u32 *)d->pivot_row;
    const bl_u32 *pos = (const bl_u32 *)d->pos;

    bl_sort_columns(d, sh);

    // The column-permuted checks augmented with the syndrome at position n, one row a thread.
    const bl_u32 *rs = (const bl_u32 *)d->row_start, *re = (const bl_u32 *)d->row_edges;
    const bl_u32 *ec = (const bl_u32 *)d->edge_col;
    for (bl_u32 r = tid; r < m; r += nt) {
        bl_u64 *row = a + (bl_u64)r * wpr;
        for (bl_u32 w = 0; w < wpr; w++) row[w] = 0;
        for (bl_u32 k = rs[r]; k < rs[r + 1]; k++) {
            bl_u32 p = pos[ec[re[k]]];
            row[p >> 6] |= 1ull << (p & 63u);
        }
        if (syn[r]) row[n >> 6] |= 1ull << (n & 63u);
        if (syn[r]) bl_atomic_add_u32(&sh->pending, 1u);
    }
    for (bl_u32 j = tid; j < n; j += nt) pivot_row[j] = BL_NONE;
    bl_sync();

    // Gauss-Jordan elimination left to right. OSD-0 stops once the syndrome lies in the span
    // of the pivots found so far (no row at or below the rank has its syndrome bit set).
    const bl_u32 early = d->order == 0;
    bl_u32 rank = 0, nfree = 0;
    if (!(early && sh->pending == 0)) {
        for (bl_u32 j = 0; j < n; j++) {
            if (rank == d->rank) {
                for (bl_u32 t = tid; t < n - j; t += nt) free_pos[nfree + t] = j + t;
                nfree += n - j;
                break;
            }
            const bl_u32 s = j % 3u, w = j >> 6;
            const bl_u64 bit = 1ull << (j & 63u);
            if (tid == 0) {
                sh->pivot[(j + 1) % 3u] = BL_NONE;
                sh->count[(j + 1) % 3u] = 0;
            }
            for (bl_u32 r = rank + tid; r < m; r += nt) {
                if (a[(bl_u64)r * wpr + w] & bit) {
                    bl_atomic_min_u32(&sh->pivot[s], r);
                    break;
                }
            }
            bl_sync();
            const bl_u32 p = sh->pivot[s];
            if (p == BL_NONE) {
                if (tid == 0) free_pos[nfree] = j;
                nfree++;
                continue;
            }
            if (p != rank) {
                for (bl_u32 q = w + tid; q < wpr; q += nt) {
                    bl_u64 x = a[(bl_u64)p * wpr + q];
                    a[(bl_u64)p * wpr + q] = a[(bl_u64)rank * wpr + q];
                    a[(bl_u64)rank * wpr + q] = x;
                }
                bl_sync();
            }
            const bl_u64 *pr = a + (bl_u64)rank * wpr;
            for (bl_u32 r = tid; r < m; r += nt) {
                bl_u64 *row = a + (bl_u64)r * wpr;
                if (r != rank && (row[w] & bit))
                    for (bl_u32 q = w; q < wpr; q++) row[q] ^= pr[q];
            }
            if (tid == 0) pivots[rank] = j;
            rank++;
            bl_sync();
            if (early) {
                for (bl_u32 r = rank + tid; r < m; r += nt)
                    if (bl_row_bit(a + (bl_u64)r * wpr, n)) bl_atomic_add_u32(&sh->count[s], 1u);
                bl_sync();
                if (sh->count[s] == 0) break;
            }
        }
    }
    for (bl_u32 r = tid; r < rank; r += nt) pivot_row[pivots[r]] = r;
    bl_sync();

    // The combination sweep: the candidate of least weight, the first one on ties.
    bl_u32 choice = 0;
    if (d->order > 0) {
        const bl_u32 k = nfree, total = 1 + k + d->order * (d->order - 1) / 2;
        if (d->uniform) {
            for (bl_u32 r = tid; r < rank; r += nt)
                if (bl_row_bit(a + (bl_u64)r * wpr, n)) bl_atomic_add_u32(&sh->base, 1u);
            bl_sync();
            const bl_i32 base = (bl_i32)sh->base;
            bl_u64 best = ~0ull;
            for (bl_u32 t = tid; t < total; t += nt) {
                BlFlips f = bl_flips_of(d, t, k);
                bl_i32 wgt = base;
                if (t > 0 && t <= k) {
                    // Flipping one free column changes the pivot part by one per row it
                    // touches: -1 where the reduced syndrome is 1, +1 where it is 0.
                    bl_i32 delta = 0;
                    for (bl_u32 r = 0; r < rank; r++) {
                        const bl_u64 *row = a + (bl_u64)r * wpr;
                        if (bl_row_bit(row, f.f0)) delta += bl_row_bit(row, n) ? -1 : 1;
                    }
                    wgt = base + delta + 1;
                } else if (t > k) {
                    wgt = 2;
                    for (bl_u32 r = 0; r < rank; r++) {
                        const bl_u64 *row = a + (bl_u64)r * wpr;
                        wgt += (bl_i32)(bl_row_bit(row, n) ^ bl_row_bit(row, f.f0) ^
                                        bl_row_bit(row, f.f1));
                    }
                }
                bl_u64 key = ((bl_u64)(bl_u32)wgt << 32) | t;
                if (key < best) best = key;
            }
            bl_atomic_min_u64(&sh->best, best);
            bl_sync();
            choice = (bl_u32)(sh->best & 0xFFFFFFFFull);
        } else {
            // Per-bit weights: each candidate's weight summed in bit-index order.
            const double *weight = (const double *)d->weight;
            bl_u64 best_w = ~0ull;
            bl_u32 best_t = BL_NONE;
            for (bl_u32 t = tid; t < total; t += nt) {
                BlFlips f = bl_flips_of(d, t, k);
                double acc = 0.0;
                for (bl_u32 b = 0; b < n; b++)
                    if (bl_candidate_bit(d, f, b, rank)) acc += weight[b];
                bl_u64 wb = bl_double_bits(acc);
                if (wb < best_w) best_w = wb, best_t = t;
            }
            bl_atomic_min_u64(&sh->best, best_w);
            bl_sync();
            if (best_w == sh->best) bl_atomic_min_u32(&sh->best_t, best_t);
            bl_sync();
            choice = sh->best_t;
        }
    }
    BlFlips f = bl_flips_of(d, choice, nfree);
    bl_u32 *dec = (bl_u32 *)d->decision;
    for (bl_u32 b = tid; b < n; b += nt) dec[b] = bl_candidate_bit(d, f, b, rank);
    bl_sync();
}

// The CSS decoder's coprocessor function for one check type (backline-decoders's
// CssDecoder::respond): the syndrome bit-packed LSB-first, ceil(m/8) bytes with zero padding
// bits (or more, every byte after them zero: a fixed-size message), in; the correction
// bit-packed, ceil(n/8) bytes, out.
BL_DEV void bl_fn_bposd(const BlBposd *d, const bl_u8 *in, bl_u32 len, bl_u8 *out, bl_u32 cap,
                        BlShared *sh) {
    const bl_u32 tid = bl_tid(), nt = bl_nthreads();
    bl_u32 status = BL_STATUS_OK;
    if (len < d->in_bytes)
        status = BL_STATUS_BAD_LENGTH;
    else if ((d->m & 7u) && (in[d->in_bytes - 1] >> (d->m & 7u)))
        status = BL_STATUS_BAD_LENGTH;
    else if (cap < d->out_bytes)
        status = BL_STATUS_DECODER_FAILED;
    for (bl_u32 i = d->in_bytes; status == BL_STATUS_OK && i < len; ++i)
        if (in[i]) status = BL_STATUS_BAD_LENGTH;
    if (status != BL_STATUS_OK) {
        if (tid == 0) sh->status = status, sh->reply_len = 0;
        return;
    }
    bl_u32 *syn = (bl_u32 *)d->syndrome, *parity = (bl_u32 *)d->parity;
    for (bl_u32 r = tid; r < d->m; r += nt) {
        syn[r] = (in[r >> 3] >> (r & 7u)) & 1u;
        parity[r] = 0;
        if (syn[r]) bl_atomic_or_u32(&sh->nonzero, 1u);
    }
    const bl_u32 *ec = (const bl_u32 *)d->edge_col;
    const double *prior = (const double *)d->prior;
    double *b2c = (double *)d->b2c;
    for (bl_u32 e = tid; e < d->edges; e += nt) b2c[e] = prior[ec[e]];
    bl_sync();
    bl_u32 *dec = (bl_u32 *)d->decision;
    if (!sh->nonzero) {
        // A zero syndrome gives the zero correction without running BP.
        for (bl_u32 b = tid; b < d->n; b += nt) dec[b] = 0;
    } else if (!bl_bp(d, sh) && d->osd != BL_OSD_OFF) {
        bl_osd(d, sh);
    }
    bl_sync();
    for (bl_u32 k = tid; k < d->out_bytes; k += nt) {
        bl_u32 byte = 0;
        for (bl_u32 b = 8 * k; b < 8 * k + 8 && b < d->n; b++) byte |= dec[b] << (b - 8 * k);
        out[k] = (bl_u8)byte;
    }
    if (tid == 0) sh->status = BL_STATUS_OK, sh->reply_len = d->out_bytes;
}
