/*
 * A coprocessor function in C, loaded at run time by name:
 *
 *   cc -shared -fPIC -O2 -o libsteane_decoder.so steane_decoder.c
 *   backline bench --responder ./libsteane_decoder.so:steane_decode
 *   backline serve --fn 0=./libsteane_decoder.so:steane_decode
 *
 * The signature is the one every coprocessor function has (see include/backline.h).
 */
#include <stddef.h>
#include <stdint.h>

/* Syndrome (byte 0, low 3 bits) -> qubit to flip (0-6), or 0x0F for none. */
size_t steane_decode(const void *in, size_t in_len, void *out, size_t out_cap, void *ctx) {
    (void)ctx;
    if (in_len < 1 || out_cap < 1) return SIZE_MAX;
    uint8_t s = ((const uint8_t *)in)[0] & 7;
    ((uint8_t *)out)[0] = s == 0 ? 0x0F : (uint8_t)(s - 1);
    return 1;
}

/* The same function under the name the reference's listings load it by
 * (`CoprocessorFunction(name="steane_coprocessor", lib_path=LIB)`, examples/paper/). */
size_t steane_coprocessor(const void *in, size_t in_len, void *out, size_t out_cap, void *ctx) {
    return steane_decode(in, in_len, out, out_cap, ctx);
}

/* Always fails: for testing how failures are reported. */
size_t always_fail(const void *in, size_t in_len, void *out, size_t out_cap, void *ctx) {
    (void)in; (void)in_len; (void)out; (void)out_cap; (void)ctx;
    return SIZE_MAX;
}
