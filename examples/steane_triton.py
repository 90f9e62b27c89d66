"""The Steane [[7,1,3]] lookup written as a Triton decoder (demo 5): a syndrome byte in, the
qubit to flip out (0-6, or 0x0F for none), with the signature ``backline.triton_decoder``
takes. Triton compiles it ahead of time for the GPU; backline links it into its persistent
kernel, so no Python runs on the decode path."""

import triton
import triton.language as tl


@triton.jit
def steane_decode(in_ptr, in_len, out_ptr, out_cap, decoder_id, len_ptr):
    # The [7,4,3] Hamming checks: syndrome s (bit i = check row i) names qubit s - 1.
    s = tl.load(in_ptr).to(tl.int32) & 7
    q = tl.where(s == 0, 15, s - 1)
    ok = (in_len >= 1) & (out_cap >= 1)
    tl.store(out_ptr, q.to(tl.uint8), mask=ok)
    tl.store(len_ptr, tl.where(ok, 1, -1))
