/*
 * The C ABI example: one process opens a memcpy placement (a coprocessor session serving the
 * built-in Steane lookup under decoder id 0 and a C function under decoder id 1, and a
 * controller session), runs 1000 rounds and checks every reply.
 *
 * Build: cc -I host/ffi/include memcpy_rounds.c -L target/release -lbackline
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backline.h"

#define CHECK(call)                                                                   \
    do {                                                                              \
        backline_status s_ = (call);                                                  \
        if (s_ != BACKLINE_STATUS_OK) {                                               \
            char msg_[256];                                                           \
            backline_last_error(msg_, sizeof msg_);                                   \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,        \
                    backline_status_name(s_), msg_);                                  \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

/* The Hamming [7,4,3] lookup written in C: syndrome s names qubit s-1; 0 means no error. */
static size_t steane_in_c(const void *in, size_t in_len, void *out, size_t out_cap, void *ctx) {
    if (in_len < 1 || out_cap < 1) return SIZE_MAX;
    uint8_t s = ((const uint8_t *)in)[0] & 7;
    ((uint8_t *)out)[0] = s == 0 ? 0x0F : (uint8_t)(s - 1);
    (*(unsigned *)ctx)++;
    return 1;
}

int main(void) {
    backline_config cfg;
    CHECK(backline_config_default(&cfg));
    cfg.transport = "memcpy";

    unsigned c_calls = 0;
    backline_session *cop = NULL, *ctl = NULL;
    CHECK(backline_session_create("cpu", "coprocessor", "c-demo", &cfg, &cop));
    CHECK(backline_session_connect(cop, "", 0));
    CHECK(backline_session_exchange_keys(cop));
    CHECK(backline_session_establish_channel(cop, "memcpy"));
    CHECK(backline_session_set_coprocessor_builtin(cop, 0, "steane"));
    CHECK(backline_session_set_coprocessor_fn(cop, 1, steane_in_c, &c_calls));
    CHECK(backline_session_start(cop));

    CHECK(backline_session_create("cpu", "controller", "c-demo", &cfg, &ctl));
    CHECK(backline_session_connect(ctl, "c-demo", 0));
    CHECK(backline_session_exchange_keys(ctl));
    CHECK(backline_session_establish_channel(ctl, "memcpy"));
    CHECK(backline_session_set_message_sizes(ctl, 8, 8));
    CHECK(backline_session_start(ctl));

    const int rounds = 1000;
    for (int i = 0; i < rounds; i++) {
        uint64_t syndrome = (uint64_t)(i % 8);
        uint32_t decoder = (uint32_t)(i % 2);
        uint64_t posted = 0;
        backline_reply r;
        CHECK(backline_session_stage_payload(ctl, &syndrome, sizeof syndrome, decoder));
        CHECK(backline_session_post(ctl, &posted));
        CHECK(backline_session_collect(ctl, &r));
        uint8_t want = syndrome == 0 ? 0x0F : (uint8_t)(syndrome - 1);
        if (posted != (uint64_t)i || r.round != (uint64_t)i || r.status != 0 ||
            r.decoder_id != decoder || r.payload_len != 1 || r.payload[0] != want) {
            fprintf(stderr, "round %d: bad reply (status %u, id %u, len %zu, byte %u, want %u)\n", i,
                    r.status, r.decoder_id, r.payload_len, r.payload_len ? r.payload[0] : 0, want);
            return 1;
        }
    }
    CHECK(backline_session_stop(ctl));
    CHECK(backline_session_destroy(ctl));
    CHECK(backline_session_destroy(cop));
    if (c_calls != (unsigned)rounds / 2) {
        fprintf(stderr, "the C function ran %u times, expected %d\n", c_calls, rounds / 2);
        return 1;
    }
    printf("%d rounds ok, every reply checked (%u by the C function)\n", rounds, c_calls);
    return 0;
}
