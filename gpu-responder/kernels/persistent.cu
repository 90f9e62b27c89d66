// The persistent coprocessor kernel: launched once, one block, it polls its request ring for
// the next round's seq, runs the function chosen by the request's decoder_id, writes the
// reply (payload, header, seq last with a system-scope release) and moves on, until the host
// asks it to stop. The same source is compiled by NVRTC (CUDA), hiprtc/hipcc (HIP) and a host
// C++ compiler (the host emulation); port.h is the only place the three differ.
//
// Host protocol (BlControl, in mapped host memory):
//   - stop != 0: return (looked at every poll_batch polls while waiting for a request);
//   - pause != paused: a new controller attaches; acknowledge (paused = pause), then wait
//     until resume == pause, meanwhile the host zeroes both rings and may set a new geometry
//     (depth, slot_bytes); start again at round 0 with it.
#include "port.h"
#include "backline_gpu.h"

// Block-shared state: the outcome of the message being served and the reductions of the
// decoders. Reset by thread 0 before a message is released to the block.
struct BlShared {
    // (At most BL_SHARED_BYTES: the block-shared scratch the host provides.)
    bl_u32 action;
    bl_u32 status;
    bl_u32 reply_len;
    bl_u32 nonzero;
    bl_u32 mismatch[4];
    bl_u32 changed[4];
    bl_u32 pivot[3];
    bl_u32 count[3];
    bl_u32 nan;
    bl_u32 pending;
    bl_u32 base;
    bl_u32 best_t;
    bl_u64 best;
};

BL_STATIC_ASSERT(sizeof(BlShared) <= BL_SHARED_BYTES, "block-shared scratch");

// The ring shape in force (from the control block, at start and at every resume).
struct BlGeometry {
    bl_u32 depth, slot_bytes;
};

#define BL_ACT_SERVE 0u
#define BL_ACT_RESET 1u
#define BL_ACT_STOP 2u

#include "bposd.cuh"

#if defined(BL_USER_FN)
// The user's device function (see gpu-responder/README.md for the contract): called by every
// thread of the block; thread 0's return value is the reply length, BL_USER_FAILED a failure.
BL_USER_FUNCTION bl_u32 BL_USER_FN(const bl_u8 *in, bl_u32 in_len, bl_u8 *out, bl_u32 out_cap,
                                   bl_u32 decoder_id);
#endif

BL_DEV void bl_reset_shared(BlShared *sh) {
    sh->status = BL_STATUS_OK;
    sh->reply_len = 0;
    sh->nonzero = 0;
    for (int i = 0; i < 4; i++) sh->mismatch[i] = 0, sh->changed[i] = 0;
    for (int i = 0; i < 3; i++) sh->pivot[i] = BL_NONE, sh->count[i] = 0;
    sh->nan = 0;
    sh->pending = 0;
    sh->base = 0;
    sh->best_t = BL_NONE;
    sh->best = ~0ull;
}

BL_DEV void bl_fn_echo(const bl_u8 *in, bl_u32 len, bl_u8 *out, bl_u32 cap, BlShared *sh) {
    const bl_u32 tid = bl_tid(), nt = bl_nthreads();
    if (len > cap) {
        if (tid == 0) sh->status = BL_STATUS_BAD_LENGTH, sh->reply_len = 0;
        return;
    }
    for (bl_u32 i = tid; i < len; i += nt) out[i] = in[i];
    if (tid == 0) sh->status = BL_STATUS_OK, sh->reply_len = len;
}

BL_DEV void bl_fn_steane(const bl_u8 *in, bl_u32 len, bl_u8 *out, bl_u32 cap, BlShared *sh) {
    if (bl_tid() != 0) return;
    if (len == 0) {
        sh->status = BL_STATUS_BAD_LENGTH, sh->reply_len = 0;
    } else if (cap == 0) {
        sh->status = BL_STATUS_DECODER_FAILED, sh->reply_len = 0;
    } else {
        const bl_u8 table[8] = BL_STEANE_TABLE;
        out[0] = table[in[0] & 7u];
        sh->status = BL_STATUS_OK, sh->reply_len = 1;
    }
}

// Thread 0: waits for the request of `round`, a stop or a pause.
BL_DEV bl_u32 bl_wait_request(const BlLaunch *a, BlGeometry g, BlControl *ctl, bl_u64 round) {
    const bl_u32 slot = (bl_u32)round & (g.depth - 1u);
    const bl_u32 *seq =
        (const bl_u32 *)(a->req + (bl_u64)(slot + 1) * g.slot_bytes - BL_HEADER_BYTES +
                         BL_HDR_SEQ);
    const bl_u32 want = (bl_u32)round + 1u;
    for (bl_u32 batches = 0;; batches++) {
        for (bl_u32 i = 0; i < a->poll_batch; i++) {
            // Acquire: pairs with the controller's release store of seq, so the body read
            // after it (by this block, after the barrier) is the one written before it.
            if (bl_ld_acquire_sys(seq) == want) return BL_ACT_SERVE;
            bl_pause();
        }
        if (bl_ld_relaxed_sys(&ctl->stop)) return BL_ACT_STOP;
        const bl_u32 pause = bl_ld_acquire_sys(&ctl->pause);
        if (pause != bl_ld_relaxed_sys(&ctl->paused)) {
            bl_st_release_sys(&ctl->paused, pause);
            // The host zeroes the rings now; its release store of resume orders that before.
            while (bl_ld_acquire_sys(&ctl->resume) != pause) {
                if (bl_ld_relaxed_sys(&ctl->stop)) return BL_ACT_STOP;
                bl_pause();
            }
            return BL_ACT_RESET;
        }
#if defined(BL_HOST)
        // The emulation shares the CPUs with its controller: spin ~200 µs (as a CPU server's
        // waits do), then yield, and nap once idle for ~10 ms.
        if (batches > 4096)
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        else if (batches > 80)
            std::this_thread::yield();
#endif
    }
}

// Copies the 16-byte chunks [first, last) of a slot in host memory into `raw` (device).
BL_DEV void bl_read_chunks(const bl_u8 *slot, bl_u8 *raw, bl_u32 first, bl_u32 last) {
    for (bl_u32 c = first + bl_tid(); c < last; c += bl_nthreads()) {
        bl_u32 w[4];
        bl_ld16_relaxed_sys((const bl_u32 *)(slot + 16u * c), w);
        bl_u32 *d = (bl_u32 *)(raw + 16u * c);
        d[0] = w[0], d[1] = w[1], d[2] = w[2], d[3] = w[3];
    }
}

BL_DEV bl_u32 bl_read_u32(const bl_u8 *p) {
    return (bl_u32)p[0] | (bl_u32)p[1] << 8 | (bl_u32)p[2] << 16 | (bl_u32)p[3] << 24;
}

// Serves the request of `round`.
BL_DEV void bl_serve(const BlLaunch *a, BlGeometry g, BlShared *sh, bl_u64 round) {
    const bl_u32 tid = bl_tid(), nt = bl_nthreads();
    const bl_u32 sb = g.slot_bytes, chunks = sb / 16u, cap = sb - BL_HEADER_BYTES;
    const bl_u32 slot = (bl_u32)round & (g.depth - 1u);
    const bl_u8 *req = (const bl_u8 *)(a->req + (bl_u64)slot * sb);
    bl_u8 *rep = (bl_u8 *)(a->rep + (bl_u64)slot * sb);
    bl_u8 *raw = (bl_u8 *)a->stage_in;
    bl_u8 *fout = (bl_u8 *)a->stage_out;

    // The request: a slot of at most one chunk per thread in one go, otherwise the header
    // first and then only the payload's chunks.
    const bl_u8 *hdr = raw + sb - BL_HEADER_BYTES;
    if (chunks <= nt) {
        bl_read_chunks(req, raw, 0, chunks);
        bl_sync();
    } else {
        bl_read_chunks(req, raw, chunks - 1u, chunks);
        bl_sync();
        bl_u32 len = bl_read_u32(hdr + BL_HDR_PAYLOAD_LEN);
        len = len < cap ? len : cap;
        bl_read_chunks(req, raw, (cap - len) / 16u, chunks - 1u);
        bl_sync();
    }
    const bl_u32 len = bl_read_u32(hdr + BL_HDR_PAYLOAD_LEN);
    const bl_u32 id = bl_read_u32(hdr + BL_HDR_DECODER_ID);
    const bl_u8 *in = raw + cap - (len < cap ? len : cap);

    if (len > cap) {
        if (tid == 0) sh->status = BL_STATUS_BAD_LENGTH, sh->reply_len = 0;
    } else {
        const BlFunction *fns = (const BlFunction *)a->fns;
        bl_u32 f = BL_NONE;
        for (bl_u32 i = 0; i < a->n_fns; i++)
            if (fns[i].decoder_id == id) {
                f = i;
                break;
            }
        if (f == BL_NONE) {
            if (tid == 0) sh->status = BL_STATUS_UNKNOWN_DECODER, sh->reply_len = 0;
        } else if (fns[f].kind == BL_FN_ECHO) {
            bl_fn_echo(in, len, fout, cap, sh);
        } else if (fns[f].kind == BL_FN_STEANE) {
            bl_fn_steane(in, len, fout, cap, sh);
        } else if (fns[f].kind == BL_FN_BPOSD) {
            bl_fn_bposd((const BlBposd *)fns[f].data, in, len, fout, cap, sh);
#if defined(BL_USER_FN)
        } else if (fns[f].kind == BL_FN_USER) {
            bl_u32 n = BL_USER_FN(in, len, fout, cap, id);
            if (tid == 0) {
                if (n == BL_USER_FAILED || n > cap)
                    sh->status = BL_STATUS_DECODER_FAILED, sh->reply_len = 0;
                else
                    sh->status = BL_STATUS_OK, sh->reply_len = n;
            }
#endif
        } else if (tid == 0) {
            sh->status = BL_STATUS_UNKNOWN_DECODER, sh->reply_len = 0;
        }
    }
    bl_sync();

    // The reply: payload chunks (the bytes in front of the payload are the slot's unused
    // space), then the header words, each writer fencing its stores; seq last, released.
    const bl_u32 n = sh->reply_len, start = cap - n;
    for (bl_u32 c = start / 16u + tid; c < cap / 16u; c += nt) {
        bl_u32 w[4];
        for (bl_u32 q = 0; q < 4; q++) {
            bl_u32 v = 0;
            for (bl_u32 b = 0; b < 4; b++) {
                bl_u32 o = 16u * c + 4u * q + b;
                if (o >= start) v |= (bl_u32)fout[o - start] << (8 * b);
            }
            w[q] = v;
        }
        bl_st16_relaxed_sys((bl_u32 *)(rep + 16u * c), w);
        bl_fence_sys();
    }
    bl_u32 *rh = (bl_u32 *)(rep + cap);
    if (tid == 0) {
        bl_st_relaxed_sys(rh + BL_HDR_PAYLOAD_LEN / 4u, n);
        bl_st_relaxed_sys(rh + BL_HDR_DECODER_ID / 4u, id);
        bl_st_relaxed_sys(rh + BL_HDR_STATUS / 4u,
                          sh->status | BL_KIND_REPLY << 16 | BL_WIRE_VERSION << 24);
    }
    bl_sync();
    if (tid == 0) {
        // Release at system scope: the payload and header stores of every thread (each
        // fenced, then ordered before this store by the barrier) are visible to a controller
        // whose acquire load sees this seq.
        bl_fence_sys();
        bl_st_release_sys(rh + BL_HDR_SEQ / 4u, (bl_u32)round + 1u);
    }
}

// The geometry the host set, clamped to what the launch provides (a bad value never makes the
// kernel touch memory outside its rings and stage buffers).
BL_DEV BlGeometry bl_read_geometry(const BlLaunch *a, BlControl *ctl) {
    BlGeometry g;
    g.depth = bl_ld_relaxed_sys(&ctl->depth);
    g.slot_bytes = bl_ld_relaxed_sys(&ctl->slot_bytes);
    if (g.slot_bytes < 64u || (g.slot_bytes & (g.slot_bytes - 1u)) || g.slot_bytes > a->stage_bytes)
        g.slot_bytes = 64u;
    if (g.depth == 0 || (g.depth & (g.depth - 1u)) ||
        (bl_u64)g.depth * g.slot_bytes > a->ring_capacity)
        g.depth = 1;
    return g;
}

BL_KERNEL void bl_persistent(const BlLaunch *a) {
    BlShared *sh = (BlShared *)bl_block_shared();
    BlControl *ctl = (BlControl *)a->ctl;
    const bl_u32 tid = bl_tid();
    bl_u64 round = 0;
    bl_u32 served = 0, failed = 0;
    // Acquire: the host's set-up of the control block is seen before its fields are read.
    (void)bl_ld_acquire_sys(&ctl->pause);
    BlGeometry g = bl_read_geometry(a, ctl);
    if (tid == 0) bl_st_release_sys(&ctl->running, 1u);
    for (;;) {
        if (tid == 0) {
            sh->action = bl_wait_request(a, g, ctl, round);
            bl_reset_shared(sh);
        }
        bl_sync();
        const bl_u32 action = sh->action;
        if (action == BL_ACT_STOP) break;
        if (action == BL_ACT_RESET) {
            round = 0;
            g = bl_read_geometry(a, ctl);
        } else {
            bl_serve(a, g, sh, round);
            round++;
            if (tid == 0) {
                served++;
                failed += sh->status != BL_STATUS_OK;
                bl_st_relaxed_sys(&ctl->served, served);
                bl_st_relaxed_sys(&ctl->failed, failed);
            }
        }
        bl_sync();
    }
    if (tid == 0) {
        bl_fence_sys();
        bl_st_release_sys(&ctl->exited, 1u);
    }
}

// The same-run floor: seq bounced through one word of mapped host memory. The host writes
// odd values, the kernel answers each with the next even one.
BL_KERNEL void bl_floor(const BlFloor *f) {
    if (bl_tid() != 0) return;
    bl_u32 *word = (bl_u32 *)f->word;
    BlControl *ctl = (BlControl *)f->ctl;
    bl_st_release_sys(&ctl->running, 1u);
    bl_u32 want = 1;
    for (bl_u32 polls = 0;; polls++) {
        if (bl_ld_acquire_sys(word) == want) {
            bl_st_release_sys(word, want + 1u);
            want += 2;
            polls = 0;
            continue;
        }
        if ((polls & 1023u) == 1023u) {
            if (bl_ld_relaxed_sys(&ctl->stop)) break;
#if defined(BL_HOST)
            if (polls > (1u << 20)) std::this_thread::yield();
#endif
        }
        bl_pause();
    }
    bl_st_release_sys(&ctl->exited, 1u);
}
