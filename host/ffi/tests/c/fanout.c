/*
 * Fan-out rounds from C: one controller posts each round to three coprocessors at once
 * (backline_post_all) and collects the three replies as they arrive (backline_collect_all).
 * Coprocessor 0 decodes the Steane code, 1 and 2 echo, with different slot sizes; every reply
 * is checked. Then coprocessor 2 stops: the round fails naming sessions[2] with its status,
 * and the others' replies still arrive. Bad calls: n = 0, a session given twice, NULLs.
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

#define EXPECT(cond)                                                                  \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);       \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

#define N 3
#define ROUNDS 1000

static const char *builtin[N] = {"steane", "echo", "echo"};
static const uint32_t slot[N] = {64, 128, 256};

int main(void) {
    backline_session *cop[N], *ctl[N];
    for (int i = 0; i < N; i++) {
        backline_config cfg;
        CHECK(backline_config_default(&cfg));
        cfg.slot_bytes = slot[i];
        cfg.reply_timeout_ms = 200;
        char key[16], ckey[16];
        snprintf(key, sizeof key, "fan-%d", i);
        snprintf(ckey, sizeof ckey, "fan-%d-c", i);
        CHECK(backline_session_create("cpu", "coprocessor", key, &cfg, &cop[i]));
        CHECK(backline_session_connect(cop[i], "", 0));
        CHECK(backline_session_exchange_keys(cop[i]));
        CHECK(backline_session_establish_channel(cop[i], "memcpy"));
        CHECK(backline_session_set_coprocessor_builtin(cop[i], 0, builtin[i]));
        CHECK(backline_session_start(cop[i]));
        CHECK(backline_session_create("cpu", "controller", ckey, &cfg, &ctl[i]));
        CHECK(backline_session_connect(ctl[i], key, 0));
        CHECK(backline_session_exchange_keys(ctl[i]));
        CHECK(backline_session_establish_channel(ctl[i], "memcpy"));
        CHECK(backline_session_set_message_sizes(ctl[i], 8, 8));
        CHECK(backline_session_start(ctl[i]));
    }
    backline_request req[N];
    backline_reply rep[N];
    backline_status st[N];
    uint8_t payload[N][8];
    for (uint64_t r = 0; r < ROUNDS; r++) {
        payload[0][0] = (uint8_t)(r % 8); /* a Steane syndrome */
        for (int i = 1; i < N; i++) {
            uint64_t v = r * 0x9E3779B97F4A7C15u ^ (uint64_t)i;
            memcpy(payload[i], &v, 8);
        }
        for (int i = 0; i < N; i++) {
            req[i].payload = payload[i];
            req[i].len = i == 0 ? 1 : 8;
            req[i].decoder_id = 0;
        }
        CHECK(backline_post_all(ctl, N, req, st));
        CHECK(backline_collect_all(ctl, N, rep, st));
        for (int i = 0; i < N; i++) {
            EXPECT(st[i] == BACKLINE_STATUS_OK && rep[i].round == r && rep[i].status == 0);
        }
        /* Syndrome s flags qubit s - 1 of the Steane code (0: no flip, 0x0F). */
        uint8_t want = payload[0][0] ? (uint8_t)(payload[0][0] - 1) : 0x0F;
        EXPECT(rep[0].payload_len == 1 && rep[0].payload[0] == want);
        for (int i = 1; i < N; i++) {
            EXPECT(rep[i].payload_len == 8 && memcmp(rep[i].payload, payload[i], 8) == 0);
        }
    }

    /* Bad calls. */
    EXPECT(backline_post_all(ctl, 0, req, st) == BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_post_all(NULL, N, req, st) == BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_post_all(ctl, N, NULL, st) == BACKLINE_STATUS_INVALID_ARGUMENT);
    backline_session *twice[2] = {ctl[0], ctl[0]};
    EXPECT(backline_collect_all(twice, 2, rep, st) == BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_collect_all(cop, N, rep, st) == BACKLINE_STATUS_OUT_OF_ORDER);
    char msg[512];
    backline_last_error(msg, sizeof msg);
    EXPECT(strstr(msg, "sessions[0]") != NULL);

    /* Coprocessor 2 goes away: its part of the round fails, named; the others complete. */
    CHECK(backline_session_stop(cop[2]));
    CHECK(backline_session_destroy(cop[2]));
    backline_status s = backline_post_all(ctl, N, req, st);
    if (s == BACKLINE_STATUS_OK) {
        s = backline_collect_all(ctl, N, rep, st);
    }
    EXPECT(s != BACKLINE_STATUS_OK);
    EXPECT(st[0] == BACKLINE_STATUS_OK && st[1] == BACKLINE_STATUS_OK && st[2] != BACKLINE_STATUS_OK);
    backline_last_error(msg, sizeof msg);
    EXPECT(strstr(msg, "sessions[2]") != NULL && strstr(msg, "sessions[0]") == NULL);
    /* The others stay usable. */
    CHECK(backline_post_all(ctl, 2, req, st));
    CHECK(backline_collect_all(ctl, 2, rep, st));
    EXPECT(memcmp(rep[1].payload, payload[1], 8) == 0);

    for (int i = 0; i < N; i++) {
        backline_session_destroy(ctl[i]);
        if (i < 2) backline_session_destroy(cop[i]);
    }
    printf("fan-out ok: %d rounds to %d coprocessors, a stopped one named\n", ROUNDS, N);
    return 0;
}
