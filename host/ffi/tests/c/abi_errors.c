/* Bad calls through the C ABI: each returns its documented status, none crashes. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "backline.h"

static int failures = 0;

#define EXPECT(call, want)                                                                  \
    do {                                                                                    \
        backline_status s_ = (call);                                                        \
        if (s_ != (want)) {                                                                 \
            char m_[256];                                                                   \
            backline_last_error(m_, sizeof m_);                                             \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, \
                    #call, backline_status_name(s_), backline_status_name(want), m_);       \
            failures++;                                                                     \
        }                                                                                   \
    } while (0)

static size_t always_fails(const void *in, size_t n, void *out, size_t cap, void *ctx) {
    (void)in; (void)n; (void)out; (void)cap; (void)ctx;
    return SIZE_MAX;
}

int main(void) {
    backline_config cfg;
    backline_reply r;
    backline_session *s = NULL, *cop = NULL, *ctl = NULL;
    EXPECT(backline_config_default(&cfg), BACKLINE_STATUS_OK);
    EXPECT(backline_config_default(NULL), BACKLINE_STATUS_INVALID_ARGUMENT);

    /* Null, forged and stale handles. */
    EXPECT(backline_session_start(NULL), BACKLINE_STATUS_NULL_HANDLE);
    EXPECT(backline_session_collect(NULL, &r), BACKLINE_STATUS_NULL_HANDLE);
    EXPECT(backline_session_start((backline_session *)(uintptr_t)0xdeadbeef), BACKLINE_STATUS_STALE_HANDLE);
    EXPECT(backline_session_create("cpu", "controller", "gone", &cfg, &s), BACKLINE_STATUS_OK);
    EXPECT(backline_session_destroy(s), BACKLINE_STATUS_OK);
    EXPECT(backline_session_start(s), BACKLINE_STATUS_STALE_HANDLE);
    EXPECT(backline_session_destroy(s), BACKLINE_STATUS_STALE_HANDLE);

    /* Bad arguments. */
    EXPECT(backline_session_create("cpu", "boss", "k", &cfg, &s), BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_session_create("cpu", NULL, "k", &cfg, &s), BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_session_create("cpu", "controller", "k", &cfg, NULL), BACKLINE_STATUS_INVALID_ARGUMENT);
    cfg.transport = "carrier-pigeon";
    EXPECT(backline_session_create("cpu", "controller", "k", &cfg, &s), BACKLINE_STATUS_INVALID_ARGUMENT);
    cfg.transport = "memcpy";
    cfg.ring_depth = 3;
    EXPECT(backline_session_create("cpu", "controller", "k", &cfg, &s), BACKLINE_STATUS_INVALID_ARGUMENT);
    cfg.ring_depth = 4;
    cfg.rdma_gid_index = 300;
    EXPECT(backline_session_create("cpu", "controller", "k", &cfg, &s), BACKLINE_STATUS_INVALID_ARGUMENT);
    cfg.rdma_gid_index = -1;
    cfg.in_flight = 2;

    /* Out of order. */
    EXPECT(backline_session_create("cpu", "coprocessor", "e", &cfg, &cop), BACKLINE_STATUS_OK);
    EXPECT(backline_session_create("cpu", "coprocessor", "e", &cfg, &s), BACKLINE_STATUS_ERROR);
    EXPECT(backline_session_start(cop), BACKLINE_STATUS_OUT_OF_ORDER);
    EXPECT(backline_session_exchange_keys(cop), BACKLINE_STATUS_OUT_OF_ORDER);
    EXPECT(backline_session_connect(cop, "", 0), BACKLINE_STATUS_OK);
    EXPECT(backline_session_exchange_keys(cop), BACKLINE_STATUS_OK);
    EXPECT(backline_session_establish_channel(cop, "udp"), BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_session_establish_channel(cop, "memcpy"), BACKLINE_STATUS_OK);
    EXPECT(backline_session_set_message_sizes(cop, 8, 8), BACKLINE_STATUS_OUT_OF_ORDER);
    EXPECT(backline_session_set_coprocessor_fn(cop, 0, NULL, NULL), BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_session_set_coprocessor_builtin(cop, 0, "no-such-fn"), BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_session_set_coprocessor_builtin(cop, 0, "/nonexistent/lib.so:f"), BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_session_set_coprocessor_builtin(cop, 0, "echo"), BACKLINE_STATUS_OK);
    EXPECT(backline_session_set_coprocessor_fn(cop, 7, always_fails, NULL), BACKLINE_STATUS_OK);
    EXPECT(backline_session_start(cop), BACKLINE_STATUS_OK);

    EXPECT(backline_session_create("cpu", "controller", "e", &cfg, &ctl), BACKLINE_STATUS_OK);
    EXPECT(backline_session_post(ctl, NULL), BACKLINE_STATUS_OUT_OF_ORDER);
    EXPECT(backline_session_connect(ctl, "e", 0), BACKLINE_STATUS_OK);
    EXPECT(backline_session_exchange_keys(ctl), BACKLINE_STATUS_OK);
    EXPECT(backline_session_establish_channel(ctl, NULL), BACKLINE_STATUS_OK);
    EXPECT(backline_session_set_message_sizes(ctl, 100, 8), BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_session_set_message_sizes(ctl, 8, 8), BACKLINE_STATUS_OK);
    EXPECT(backline_session_collect(ctl, &r), BACKLINE_STATUS_OUT_OF_ORDER);
    EXPECT(backline_session_start(ctl), BACKLINE_STATUS_OK);
    EXPECT(backline_session_collect(ctl, &r), BACKLINE_STATUS_OUT_OF_ORDER);
    EXPECT(backline_session_post(ctl, NULL), BACKLINE_STATUS_OUT_OF_ORDER);
    EXPECT(backline_session_set_coprocessor_builtin(ctl, 0, "echo"), BACKLINE_STATUS_OUT_OF_ORDER);
    EXPECT(backline_session_stage_payload(cop, "x", 1, 0), BACKLINE_STATUS_OUT_OF_ORDER);
    EXPECT(backline_session_stage_payload(ctl, NULL, 4, 0), BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_session_stage_payload(ctl, "123456789", 9, 0), BACKLINE_STATUS_INVALID_ARGUMENT);

    /* Two in flight, the third is back-pressured; replies come back in order. */
    EXPECT(backline_session_stage_payload(ctl, "a", 1, 0), BACKLINE_STATUS_OK);
    EXPECT(backline_session_post(ctl, NULL), BACKLINE_STATUS_OK);
    EXPECT(backline_session_stage_payload(ctl, "b", 1, 7), BACKLINE_STATUS_OK);
    EXPECT(backline_session_post(ctl, NULL), BACKLINE_STATUS_OK);
    EXPECT(backline_session_stage_payload(ctl, "c", 1, 0), BACKLINE_STATUS_BACKPRESSURE);
    EXPECT(backline_session_collect(ctl, NULL), BACKLINE_STATUS_INVALID_ARGUMENT);
    EXPECT(backline_session_collect(ctl, &r), BACKLINE_STATUS_OK);
    if (r.status != 0 || r.payload_len != 1 || r.payload[0] != 'a') { fprintf(stderr, "echo reply wrong\n"); failures++; }
    EXPECT(backline_session_collect(ctl, &r), BACKLINE_STATUS_OK);
    if (r.status != 3 || r.decoder_id != 7 || r.payload_len != 0) { fprintf(stderr, "failing C fn: status %u\n", r.status); failures++; }
    /* An unknown decoder id is a reply status, not a call failure. */
    EXPECT(backline_session_stage_payload(ctl, "d", 1, 42), BACKLINE_STATUS_OK);
    EXPECT(backline_session_post(ctl, NULL), BACKLINE_STATUS_OK);
    EXPECT(backline_session_collect(ctl, &r), BACKLINE_STATUS_OK);
    if (r.status != 1 || r.decoder_id != 42) { fprintf(stderr, "unknown decoder: status %u\n", r.status); failures++; }

    /* get_session finds registered sessions. */
    EXPECT(backline_get_session("controller", "e", &s), BACKLINE_STATUS_OK);
    if (s != ctl) { fprintf(stderr, "get_session returned another handle\n"); failures++; }
    EXPECT(backline_get_session("controller", "nope", &s), BACKLINE_STATUS_INVALID_ARGUMENT);

    /* A dead coprocessor: the controller times out, then reports the session stuck. */
    EXPECT(backline_session_destroy(cop), BACKLINE_STATUS_OK);
    EXPECT(backline_session_stage_payload(ctl, "e", 1, 0), BACKLINE_STATUS_OK);
    EXPECT(backline_session_post(ctl, NULL), BACKLINE_STATUS_OK);
    backline_status st = backline_session_collect(ctl, &r);
    if (st != BACKLINE_STATUS_TIMEOUT && st != BACKLINE_STATUS_STUCK) {
        fprintf(stderr, "collect from a dead coprocessor: %s\n", backline_status_name(st));
        failures++;
    }
    EXPECT(backline_session_stage_payload(ctl, "f", 1, 0), BACKLINE_STATUS_STUCK);
    EXPECT(backline_session_destroy(ctl), BACKLINE_STATUS_OK);

    /* Any number as a status: a name, never a crash. */
    if (strcmp(backline_status_name(99), "unknown status") != 0 ||
        strcmp(backline_status_name(0xFFFFFFFFu), "unknown status") != 0 ||
        strcmp(backline_status_name(BACKLINE_STATUS_TIMEOUT), "timeout") != 0) {
        fprintf(stderr, "status names wrong\n");
        failures++;
    }
    /* The rdma port is numbered from 1. */
    backline_config bad = cfg;
    bad.transport = "rdma";
    bad.rdma_port = 0;
    EXPECT(backline_session_create("cpu", "controller", "p0", &bad, &s), BACKLINE_STATUS_INVALID_ARGUMENT);

    /* A reply longer than the reply size the controller set is not delivered. */
    EXPECT(backline_session_create("cpu", "coprocessor", "long", &cfg, &cop), BACKLINE_STATUS_OK);
    EXPECT(backline_session_connect(cop, "", 0), BACKLINE_STATUS_OK);
    EXPECT(backline_session_exchange_keys(cop), BACKLINE_STATUS_OK);
    EXPECT(backline_session_establish_channel(cop, "memcpy"), BACKLINE_STATUS_OK);
    EXPECT(backline_session_set_coprocessor_builtin(cop, 0, "echo"), BACKLINE_STATUS_OK);
    EXPECT(backline_session_start(cop), BACKLINE_STATUS_OK);
    EXPECT(backline_session_create("cpu", "controller", "long", &cfg, &ctl), BACKLINE_STATUS_OK);
    EXPECT(backline_session_connect(ctl, "long", 0), BACKLINE_STATUS_OK);
    EXPECT(backline_session_exchange_keys(ctl), BACKLINE_STATUS_OK);
    EXPECT(backline_session_establish_channel(ctl, "memcpy"), BACKLINE_STATUS_OK);
    EXPECT(backline_session_set_message_sizes(ctl, 8, 2), BACKLINE_STATUS_OK);
    EXPECT(backline_session_start(ctl), BACKLINE_STATUS_OK);
    EXPECT(backline_session_stage_payload(ctl, "12345", 5, 0), BACKLINE_STATUS_OK);
    EXPECT(backline_session_post(ctl, NULL), BACKLINE_STATUS_OK);
    EXPECT(backline_session_collect(ctl, &r), BACKLINE_STATUS_ERROR);
    {
        char m[256];
        backline_last_error(m, sizeof m);
        if (!strstr(m, "exceeds the reply size")) { fprintf(stderr, "long reply: %s\n", m); failures++; }
    }
    /* The round is over; the next one goes on. */
    EXPECT(backline_session_stage_payload(ctl, "12", 2, 0), BACKLINE_STATUS_OK);
    EXPECT(backline_session_post(ctl, NULL), BACKLINE_STATUS_OK);
    EXPECT(backline_session_collect(ctl, &r), BACKLINE_STATUS_OK);
    if (r.payload_len != 2) { fprintf(stderr, "after a long reply: %zu bytes\n", r.payload_len); failures++; }
    EXPECT(backline_session_destroy(ctl), BACKLINE_STATUS_OK);
    EXPECT(backline_session_destroy(cop), BACKLINE_STATUS_OK);

    /* An allocation that fails is a status, not an abort: 4 GiB rings under a 1 GiB limit. */
    struct rlimit lim = {1ul << 30, 1ul << 30};
    if (setrlimit(RLIMIT_AS, &lim) == 0) {
        backline_config huge = cfg;
        huge.ring_depth = 65536;
        huge.slot_bytes = 65536;
        huge.in_flight = 1;
        EXPECT(backline_session_create("cpu", "coprocessor", "huge", &huge, &cop), BACKLINE_STATUS_OK);
        EXPECT(backline_session_connect(cop, "", 0), BACKLINE_STATUS_OK);
        EXPECT(backline_session_exchange_keys(cop), BACKLINE_STATUS_OK);
        EXPECT(backline_session_establish_channel(cop, "memcpy"), BACKLINE_STATUS_OK);
        EXPECT(backline_session_set_coprocessor_builtin(cop, 0, "echo"), BACKLINE_STATUS_OK);
        EXPECT(backline_session_start(cop), BACKLINE_STATUS_OK);
        EXPECT(backline_session_create("cpu", "controller", "huge", &huge, &ctl), BACKLINE_STATUS_OK);
        EXPECT(backline_session_connect(ctl, "huge", 0), BACKLINE_STATUS_OK);
        EXPECT(backline_session_exchange_keys(ctl), BACKLINE_STATUS_OK);
        EXPECT(backline_session_establish_channel(ctl, "memcpy"), BACKLINE_STATUS_OUT_OF_MEMORY);
        EXPECT(backline_session_destroy(ctl), BACKLINE_STATUS_OK);
        EXPECT(backline_session_destroy(cop), BACKLINE_STATUS_OK);
    }

    char small[8];
    size_t n = backline_last_error(small, sizeof small);
    if (n == 0 && failures == 0) { /* the last call succeeded; nothing to show */ }
    if (failures) { fprintf(stderr, "%d failures\n", failures); return 1; }
    printf("abi errors ok\n");
    return 0;
}
