// The Steane [[7,1,3]] lookup as a backline GPU device function (demo 5's CUDA/HIP route; the
// signature is gpu-responder/README.md's). A syndrome byte in, bit i the i-th row of the
// [7,4,3] Hamming checks; out, the qubit to flip (s - 1) or 0x0F for none. backline compiles it
// into its persistent kernel when the coprocessor starts (NVRTC, hiprtc, or the host
// emulation's C++ compiler for `--gpu emu`).
BL_USER_FUNCTION bl_u32 steane_kernel(const bl_u8 *in, bl_u32 in_len, bl_u8 *out, bl_u32 out_cap,
                                      bl_u32 decoder_id) {
    (void)decoder_id;
    if (in_len < 1 || out_cap < 1) return BL_USER_FAILED;
    bl_u8 s = in[0] & 7;
    if (bl_tid() == 0) out[0] = s == 0 ? 0x0F : (bl_u8)(s - 1);
    return 1;
}
