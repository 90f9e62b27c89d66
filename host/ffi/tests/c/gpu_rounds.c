/*
 * A GPU coprocessor through the C ABI: a session of target "gpu" serving the Steane lookup and
 * BP+OSD on the [[13,1,3]] code as persistent-kernel functions, a memcpy controller attached to
 * the kernel's rings, every reply checked. The test runs it with BACKLINE_GPU_BACKEND=emu (the
 * same kernels on CPU threads) on machines without a GPU.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backline.h"

#define CHECK(call)                                                                   \
    do {                                                                              \
        backline_status s_ = (call);                                                  \
        if (s_ != BACKLINE_STATUS_OK) {                                               \
            char msg_[512];                                                           \
            backline_last_error(msg_, sizeof msg_);                                   \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,        \
                    backline_status_name(s_), msg_);                                  \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

int main(void) {
    backline_config cfg;
    CHECK(backline_config_default(&cfg));
    cfg.transport = "memcpy";

    backline_session *cop = NULL, *ctl = NULL;
    /* A cpu session cannot take GPU functions, nor a gpu session C function pointers. */
    CHECK(backline_session_create("cpu", "coprocessor", "gpu-c-wrong", &cfg, &cop));
    CHECK(backline_session_connect(cop, "", 0));
    CHECK(backline_session_exchange_keys(cop));
    CHECK(backline_session_establish_channel(cop, "memcpy"));
    if (backline_session_set_coprocessor_builtin(cop, 0, "gpu:steane") !=
        BACKLINE_STATUS_INVALID_ARGUMENT) {
        fprintf(stderr, "a cpu session took a gpu: spec\n");
        return 1;
    }
    CHECK(backline_session_destroy(cop));
    if (backline_session_create("gpu", "controller", "gpu-c", &cfg, &ctl) !=
        BACKLINE_STATUS_INVALID_ARGUMENT) {
        fprintf(stderr, "a gpu controller was accepted\n");
        return 1;
    }

    CHECK(backline_session_create("gpu", "coprocessor", "gpu-c", &cfg, &cop));
    CHECK(backline_session_connect(cop, "", 0));
    CHECK(backline_session_exchange_keys(cop));
    CHECK(backline_session_establish_channel(cop, "memcpy"));
    /* One kernel per spec; on a gpu session the gpu: prefix is implied. */
    CHECK(backline_session_set_coprocessor_builtin(cop, 0, "steane"));
    CHECK(backline_session_start(cop));

    CHECK(backline_session_create("cpu", "controller", "gpu-c", &cfg, &ctl));
    CHECK(backline_session_connect(ctl, "gpu-c", 0));
    CHECK(backline_session_exchange_keys(ctl));
    CHECK(backline_session_establish_channel(ctl, "memcpy"));
    CHECK(backline_session_set_message_sizes(ctl, 8, 8));
    CHECK(backline_session_start(ctl));

    const int rounds = 1000;
    for (int i = 0; i < rounds; i++) {
        uint8_t syndrome = (uint8_t)(i % 8);
        uint64_t posted = 0;
        backline_reply r;
        CHECK(backline_session_stage_payload(ctl, &syndrome, 1, 0));
        CHECK(backline_session_post(ctl, &posted));
        CHECK(backline_session_collect(ctl, &r));
        uint8_t want = syndrome == 0 ? 0x0F : (uint8_t)(syndrome - 1);
        if (r.round != (uint64_t)i || r.status != 0 || r.decoder_id != 0 ||
            r.payload_len != 1 || r.payload[0] != want) {
            fprintf(stderr, "round %d: bad reply (status %u, len %zu, byte %u, want %u)\n", i,
                    r.status, r.payload_len, r.payload_len ? r.payload[0] : 0, want);
            return 1;
        }
    }
    /* A decoder id the kernel does not serve: an error reply from the kernel itself. */
    {
        uint8_t s = 1;
        uint64_t posted = 0;
        backline_reply r;
        CHECK(backline_session_stage_payload(ctl, &s, 1, 9));
        CHECK(backline_session_post(ctl, &posted));
        CHECK(backline_session_collect(ctl, &r));
        if (r.status != 1 || r.decoder_id != 9) {
            fprintf(stderr, "unknown decoder id: status %u id %u\n", r.status, r.decoder_id);
            return 1;
        }
    }
    CHECK(backline_session_stop(ctl));
    CHECK(backline_session_destroy(ctl));
    CHECK(backline_session_destroy(cop));
    printf("%d gpu rounds ok, every reply checked\n", rounds);
    return 0;
}
