/*
 * Several controller sessions of one process to one coprocessor session: four controllers
 * (keys ctl-0 … ctl-3) connect to the memcpy coprocessor "shared", each on its own rings, and
 * take turns round by round, two rounds in flight each; every reply is checked against its
 * own controller's request. Then one controller stops and the others go on.
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

#define CONTROLLERS 4
#define ROUNDS 2000

/* Controller c's request of round r: its number and the round, so a crossed reply shows. */
static void request(int c, uint64_t r, uint8_t out[16]) {
    uint64_t a = (uint64_t)c * 0x9E3779B97F4A7C15u, b = r ^ (uint64_t)c << 56;
    memcpy(out, &a, 8);
    memcpy(out + 8, &b, 8);
}

static int collect_and_check(backline_session *ctl, int c, uint64_t *next) {
    backline_reply rep;
    uint8_t want[16];
    CHECK(backline_session_collect(ctl, &rep));
    request(c, *next, want);
    if (rep.round != *next || rep.payload_len != 16 || memcmp(rep.payload, want, 16) != 0) {
        fprintf(stderr, "controller %d round %llu: wrong reply\n", c, (unsigned long long)*next);
        return 1;
    }
    (*next)++;
    return 0;
}

int main(void) {
    backline_config cfg;
    CHECK(backline_config_default(&cfg));
    cfg.in_flight = 2;
    backline_session *cop = NULL, *ctl[CONTROLLERS];
    CHECK(backline_session_create("cpu", "coprocessor", "shared", &cfg, &cop));
    CHECK(backline_session_connect(cop, "", 0));
    CHECK(backline_session_exchange_keys(cop));
    CHECK(backline_session_establish_channel(cop, "memcpy"));
    CHECK(backline_session_set_coprocessor_builtin(cop, 0, "echo"));
    CHECK(backline_session_start(cop));
    for (int c = 0; c < CONTROLLERS; c++) {
        char key[16];
        snprintf(key, sizeof key, "ctl-%d", c);
        CHECK(backline_session_create("cpu", "controller", key, &cfg, &ctl[c]));
        CHECK(backline_session_connect(ctl[c], "shared", 0));
        CHECK(backline_session_exchange_keys(ctl[c]));
        CHECK(backline_session_establish_channel(ctl[c], "memcpy"));
        CHECK(backline_session_set_message_sizes(ctl[c], 16, 16));
        CHECK(backline_session_start(ctl[c]));
    }
    uint64_t posted[CONTROLLERS] = {0}, collected[CONTROLLERS] = {0};
    int live = CONTROLLERS;
    for (uint64_t r = 0; r < ROUNDS; r++) {
        for (int c = 0; c < live; c++) {
            uint8_t req[16];
            if (posted[c] - collected[c] == 2 && collect_and_check(ctl[c], c, &collected[c]))
                return 1;
            request(c, posted[c], req);
            CHECK(backline_session_stage_payload(ctl[c], req, sizeof req, 0));
            CHECK(backline_session_post(ctl[c], NULL));
            posted[c]++;
        }
        if (r == ROUNDS / 2) {
            /* The last controller leaves half-way: the others are not disturbed. */
            int c = live - 1;
            while (collected[c] < posted[c])
                if (collect_and_check(ctl[c], c, &collected[c])) return 1;
            CHECK(backline_session_destroy(ctl[c]));
            live--;
        }
    }
    for (int c = 0; c < live; c++) {
        while (collected[c] < posted[c])
            if (collect_and_check(ctl[c], c, &collected[c])) return 1;
        CHECK(backline_session_destroy(ctl[c]));
    }
    CHECK(backline_session_destroy(cop));
    printf("%d controllers, %llu + %llu rounds, every reply checked: many controllers ok\n",
           CONTROLLERS, (unsigned long long)collected[0] * (CONTROLLERS - 1),
           (unsigned long long)collected[CONTROLLERS - 1]);
    return 0;
}
