// The adapter between the persistent template and a decoder written in Triton (@triton.jit),
// compiled ahead of time to PTX. backline's linker (src/triton.rs) turns the Triton kernel's
// `.entry` into the device function `bl_triton_decode` and links it into this template, so the
// persistent loop calls it for every message like any user function. The Triton function's
// contract (its signature, fixed): (in_ptr: *u8, in_len: i32, out_ptr: *u8, out_cap: i32,
// decoder_id: i32, len_ptr: *i32) — it writes the reply to out_ptr and its length to
// len_ptr[0] (a negative length reports a failure) — plus the two scratch pointers Triton
// appends (passed as null: the decoder must need no global or profile scratch).
extern "C" __device__ void bl_triton_decode(const bl_u8 *in, int in_len, bl_u8 *out, int out_cap,
                                            int decoder_id, int *len, void *global_scratch,
                                            void *profile_scratch);

__device__ int bl_triton_len;

BL_USER_FUNCTION bl_u32 bl_triton_user(const bl_u8 *in, bl_u32 in_len, bl_u8 *out, bl_u32 out_cap,
                                       bl_u32 decoder_id) {
    if (bl_tid() == 0) bl_triton_len = -1;
    bl_sync();
    bl_triton_decode(in, (int)in_len, out, (int)out_cap, (int)decoder_id, &bl_triton_len,
                     (void *)0, (void *)0);
    bl_sync();
    const int len = *(volatile int *)&bl_triton_len;
    return len < 0 ? BL_USER_FAILED : (bl_u32)len;
}
