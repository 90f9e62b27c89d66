//! Raw libibverbs bindings, written for this crate and loaded at run time with `dlopen`, so
//! that the crate builds, and the other transports run, on machines without rdma-core.
//!
//! Only what the rdma transport needs is declared. Struct layouts are those of rdma-core's
//! `<infiniband/verbs.h>` on 64-bit Linux (the ABI has been stable since libibverbs 1.1);
//! the sizes are pinned by compile-time assertions below, and the test
//! `layouts_match_verbs_h` compares every offset used here with the installed header when a C
//! compiler and the header are present.
//!
//! `ibv_post_send` and `ibv_poll_cq` are `static inline` functions in the header: they call
//! through the `ops` table of `struct ibv_context`. We do the same, reading the two function
//! pointers from that table once per queue pair ([`OPS_POLL_CQ`], [`OPS_POST_SEND`]). This is
//! the legacy verbs path every provider fills (the `ibv_wr_*` path would need the extended
//! QP structures as well, for no gain on a one-WRITE-per-round data path).
//!
//! Everything here is `unsafe` plumbing; the safe wrappers live in `verbs.rs`.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use libloading::Library;

/// The shared object we load (the SONAME of rdma-core's libibverbs).
pub const LIBIBVERBS: &str = "libibverbs.so.1";

// enum ibv_qp_type
pub const IBV_QPT_RC: c_int = 2;
// enum ibv_qp_state
pub const IBV_QPS_INIT: c_int = 1;
pub const IBV_QPS_RTR: c_int = 2;
pub const IBV_QPS_RTS: c_int = 3;
// enum ibv_access_flags
pub const IBV_ACCESS_LOCAL_WRITE: c_int = 1;
pub const IBV_ACCESS_REMOTE_WRITE: c_int = 2;
// enum ibv_qp_attr_mask
pub const IBV_QP_STATE: c_int = 1;
pub const IBV_QP_ACCESS_FLAGS: c_int = 1 << 3;
pub const IBV_QP_PKEY_INDEX: c_int = 1 << 4;
pub const IBV_QP_PORT: c_int = 1 << 5;
pub const IBV_QP_AV: c_int = 1 << 7;
pub const IBV_QP_PATH_MTU: c_int = 1 << 8;
pub const IBV_QP_TIMEOUT: c_int = 1 << 9;
pub const IBV_QP_RETRY_CNT: c_int = 1 << 10;
pub const IBV_QP_RNR_RETRY: c_int = 1 << 11;
pub const IBV_QP_RQ_PSN: c_int = 1 << 12;
pub const IBV_QP_MAX_QP_RD_ATOMIC: c_int = 1 << 13;
pub const IBV_QP_MIN_RNR_TIMER: c_int = 1 << 15;
pub const IBV_QP_SQ_PSN: c_int = 1 << 16;
pub const IBV_QP_MAX_DEST_RD_ATOMIC: c_int = 1 << 17;
pub const IBV_QP_DEST_QPN: c_int = 1 << 20;
// enum ibv_wr_opcode
pub const IBV_WR_RDMA_WRITE: c_int = 0;
// enum ibv_send_flags
pub const IBV_SEND_SIGNALED: c_uint = 1 << 1;
pub const IBV_SEND_INLINE: c_uint = 1 << 3;
// enum ibv_wc_status
pub const IBV_WC_SUCCESS: c_int = 0;
pub const IBV_WC_WR_FLUSH_ERR: c_int = 5;
pub const IBV_WC_RETRY_EXC_ERR: c_int = 12;
// enum ibv_port_state
pub const IBV_PORT_ACTIVE: c_int = 4;

/// Index of `poll_cq` in `struct ibv_context_ops` (a table of pointers).
pub const OPS_POLL_CQ: usize = 11;
/// Index of `post_send` in `struct ibv_context_ops`.
pub const OPS_POST_SEND: usize = 25;
/// Pointers in `struct ibv_context_ops`.
pub const OPS_LEN: usize = 32;

/// `struct ibv_device`: only ever handled by pointer.
#[repr(C)]
pub struct ibv_device {
    _opaque: [u8; 0],
}

/// `struct ibv_pd`: only ever handled by pointer.
#[repr(C)]
pub struct ibv_pd {
    _opaque: [u8; 0],
}

/// The leading fields of `struct ibv_context` (never allocated by us).
#[repr(C)]
pub struct ibv_context {
    pub device: *mut ibv_device,
    /// `struct ibv_context_ops`: 32 function pointers.
    pub ops: [*const c_void; OPS_LEN],
}

/// The leading fields of `struct ibv_cq`.
#[repr(C)]
pub struct ibv_cq {
    pub context: *mut ibv_context,
}

/// The leading fields of `struct ibv_qp`.
#[repr(C)]
pub struct ibv_qp {
    pub context: *mut ibv_context,
    pub qp_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut c_void,
    pub handle: u32,
    pub qp_num: u32,
    pub state: c_int,
    pub qp_type: c_int,
}

/// `struct ibv_mr`.
#[repr(C)]
pub struct ibv_mr {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub addr: *mut c_void,
    pub length: usize,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// `union ibv_gid`: 16 bytes, 8-byte aligned (its other member is two `__be64`).
#[repr(C, align(8))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ibv_gid {
    pub raw: [u8; 16],
}

/// `struct ibv_device_attr`.
#[repr(C)]
pub struct ibv_device_attr {
    pub fw_ver: [c_char; 64],
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: c_uint,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    /// `max_mr` … `max_srq_sge`: 22 ints we do not read.
    pub _more: [c_int; 22],
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

/// `struct ibv_port_attr`.
#[repr(C)]
pub struct ibv_port_attr {
    pub state: c_int,
    pub max_mtu: c_int,
    pub active_mtu: c_int,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
}

/// `struct ibv_qp_cap`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ibv_qp_cap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// `struct ibv_qp_init_attr`.
#[repr(C)]
pub struct ibv_qp_init_attr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut c_void,
    pub cap: ibv_qp_cap,
    pub qp_type: c_int,
    pub sq_sig_all: c_int,
}

/// `struct ibv_global_route`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_global_route {
    pub dgid: ibv_gid,
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
}

/// `struct ibv_ah_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_ah_attr {
    pub grh: ibv_global_route,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}

/// `struct ibv_qp_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_attr {
    pub qp_state: c_int,
    pub cur_qp_state: c_int,
    pub path_mtu: c_int,
    pub path_mig_state: c_int,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: c_uint,
    pub cap: ibv_qp_cap,
    pub ah_attr: ibv_ah_attr,
    pub alt_ah_attr: ibv_ah_attr,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub sq_draining: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub rate_limit: u32,
}

/// `struct ibv_sge`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ibv_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// `struct ibv_send_wr`, with the `wr` union spelled as its `rdma` member and the unions we
/// do not use as padding.
#[repr(C)]
pub struct ibv_send_wr {
    pub wr_id: u64,
    pub next: *mut ibv_send_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    pub opcode: c_int,
    pub send_flags: c_uint,
    pub imm_data: u32,
    /// `wr.rdma.remote_addr`.
    pub remote_addr: u64,
    /// `wr.rdma.rkey`.
    pub rkey: u32,
    /// The rest of the `wr` union (its `atomic` member is 32 bytes).
    pub _wr_rest: [u32; 5],
    /// `qp_type.xrc.remote_srqn`.
    pub remote_srqn: u32,
    pub _pad: u32,
    /// The `bind_mw` / `tso` union.
    pub _bind_mw: [u64; 6],
}

/// `struct ibv_wc`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ibv_wc {
    pub wr_id: u64,
    pub status: c_int,
    pub opcode: c_int,
    pub vendor_err: u32,
    pub byte_len: u32,
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: c_uint,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(offset_of!(ibv_context, ops) == 8);
    assert!(offset_of!(ibv_qp, qp_num) == 52);
    assert!(size_of::<ibv_mr>() == 48 && offset_of!(ibv_mr, rkey) == 40);
    assert!(size_of::<ibv_gid>() == 16);
    assert!(
        size_of::<ibv_device_attr>() == 232 && offset_of!(ibv_device_attr, phys_port_cnt) == 227
    );
    assert!(size_of::<ibv_port_attr>() == 52);
    assert!(size_of::<ibv_qp_cap>() == 20);
    assert!(size_of::<ibv_qp_init_attr>() == 64);
    assert!(size_of::<ibv_global_route>() == 24);
    assert!(size_of::<ibv_ah_attr>() == 32);
    assert!(size_of::<ibv_qp_attr>() == 144 && offset_of!(ibv_qp_attr, rate_limit) == 136);
    assert!(size_of::<ibv_sge>() == 16);
    assert!(size_of::<ibv_send_wr>() == 128 && offset_of!(ibv_send_wr, remote_srqn) == 72);
    assert!(size_of::<ibv_wc>() == 48);
};

/// `ibv_poll_cq` as found in the context's ops table.
pub type PollCqFn = unsafe extern "C" fn(*mut ibv_cq, c_int, *mut ibv_wc) -> c_int;
/// `ibv_post_send` as found in the context's ops table.
pub type PostSendFn =
    unsafe extern "C" fn(*mut ibv_qp, *mut ibv_send_wr, *mut *mut ibv_send_wr) -> c_int;

/// The exported libibverbs functions we call, resolved once.
pub struct Verbs {
    pub get_device_list: unsafe extern "C" fn(*mut c_int) -> *mut *mut ibv_device,
    pub free_device_list: unsafe extern "C" fn(*mut *mut ibv_device),
    pub get_device_name: unsafe extern "C" fn(*mut ibv_device) -> *const c_char,
    pub open_device: unsafe extern "C" fn(*mut ibv_device) -> *mut ibv_context,
    pub close_device: unsafe extern "C" fn(*mut ibv_context) -> c_int,
    pub query_device: unsafe extern "C" fn(*mut ibv_context, *mut ibv_device_attr) -> c_int,
    pub query_port: unsafe extern "C" fn(*mut ibv_context, u8, *mut ibv_port_attr) -> c_int,
    pub query_gid: unsafe extern "C" fn(*mut ibv_context, u8, c_int, *mut ibv_gid) -> c_int,
    pub alloc_pd: unsafe extern "C" fn(*mut ibv_context) -> *mut ibv_pd,
    pub dealloc_pd: unsafe extern "C" fn(*mut ibv_pd) -> c_int,
    pub reg_mr: unsafe extern "C" fn(*mut ibv_pd, *mut c_void, usize, c_int) -> *mut ibv_mr,
    pub dereg_mr: unsafe extern "C" fn(*mut ibv_mr) -> c_int,
    pub create_cq: unsafe extern "C" fn(
        *mut ibv_context,
        c_int,
        *mut c_void,
        *mut c_void,
        c_int,
    ) -> *mut ibv_cq,
    pub destroy_cq: unsafe extern "C" fn(*mut ibv_cq) -> c_int,
    pub create_qp: unsafe extern "C" fn(*mut ibv_pd, *mut ibv_qp_init_attr) -> *mut ibv_qp,
    pub destroy_qp: unsafe extern "C" fn(*mut ibv_qp) -> c_int,
    pub modify_qp: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int) -> c_int,
    pub wc_status_str: unsafe extern "C" fn(c_int) -> *const c_char,
    /// Keeps the library mapped while the pointers above are in use (forever: it lives in a
    /// `static`).
    _lib: Library,
}

impl Verbs {
    fn load() -> Result<Verbs, String> {
        // SAFETY: loading libibverbs runs its initialisers, which only set up its own state
        // (provider search paths); it has no documented preconditions.
        let lib = unsafe { Library::new(LIBIBVERBS) }.map_err(|e| e.to_string())?;
        macro_rules! sym {
            ($name:literal) => {{
                // SAFETY: the symbol is the exported libibverbs function of that name, whose C
                // prototype (verbs.h) is the function-pointer type of the field it fills.
                let s = unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{}: {e}", $name))?;
                *s
            }};
        }
        Ok(Verbs {
            get_device_list: sym!("ibv_get_device_list"),
            free_device_list: sym!("ibv_free_device_list"),
            get_device_name: sym!("ibv_get_device_name"),
            open_device: sym!("ibv_open_device"),
            close_device: sym!("ibv_close_device"),
            query_device: sym!("ibv_query_device"),
            query_port: sym!("ibv_query_port"),
            query_gid: sym!("ibv_query_gid"),
            alloc_pd: sym!("ibv_alloc_pd"),
            dealloc_pd: sym!("ibv_dealloc_pd"),
            reg_mr: sym!("ibv_reg_mr"),
            dereg_mr: sym!("ibv_dereg_mr"),
            create_cq: sym!("ibv_create_cq"),
            destroy_cq: sym!("ibv_destroy_cq"),
            create_qp: sym!("ibv_create_qp"),
            destroy_qp: sym!("ibv_destroy_qp"),
            modify_qp: sym!("ibv_modify_qp"),
            wc_status_str: sym!("ibv_wc_status_str"),
            _lib: lib,
        })
    }
}

/// libibverbs, loaded on first use; the error says why it could not be.
pub fn verbs() -> Result<&'static Verbs, &'static str> {
    static VERBS: OnceLock<Result<Verbs, String>> = OnceLock::new();
    VERBS
        .get_or_init(Verbs::load)
        .as_ref()
        .map_err(|e| e.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};
    use std::process::Command;

    /// `(offsetof(struct T, f), our offset)`.
    macro_rules! offset {
        ($t:ident, $f:ident) => {
            (
                concat!(
                    "offsetof(struct ",
                    stringify!($t),
                    ", ",
                    stringify!($f),
                    ")"
                ),
                offset_of!($t, $f),
            )
        };
    }
    /// `(sizeof(struct T), our size)`.
    macro_rules! size {
        ($t:ident) => {
            (
                concat!("sizeof(struct ", stringify!($t), ")"),
                size_of::<$t>(),
            )
        };
    }
    /// `(C, our value)` of a constant of the same name.
    macro_rules! constant {
        ($c:ident) => {
            (stringify!($c), $c as usize)
        };
    }

    /// Every offset and constant used above, as (C expression, our value).
    fn facts() -> Vec<(&'static str, usize)> {
        let mut facts = layout_facts();
        facts.extend(constant_facts());
        facts
    }

    /// The offsets and sizes of the structs laid out above.
    fn layout_facts() -> Vec<(&'static str, usize)> {
        vec![
            offset!(ibv_context, ops),
            (
                "offsetof(struct ibv_context_ops, poll_cq) / sizeof(void *)",
                OPS_POLL_CQ,
            ),
            (
                "offsetof(struct ibv_context_ops, post_send) / sizeof(void *)",
                OPS_POST_SEND,
            ),
            ("sizeof(struct ibv_context_ops) / sizeof(void *)", OPS_LEN),
            offset!(ibv_qp, context),
            offset!(ibv_qp, qp_num),
            offset!(ibv_qp, qp_type),
            offset!(ibv_cq, context),
            size!(ibv_mr),
            offset!(ibv_mr, addr),
            offset!(ibv_mr, lkey),
            offset!(ibv_mr, rkey),
            ("sizeof(union ibv_gid)", size_of::<ibv_gid>()),
            ("_Alignof(union ibv_gid)", std::mem::align_of::<ibv_gid>()),
            size!(ibv_device_attr),
            offset!(ibv_device_attr, max_qp_wr),
            offset!(ibv_device_attr, max_cqe),
            offset!(ibv_device_attr, phys_port_cnt),
            size!(ibv_port_attr),
            offset!(ibv_port_attr, active_mtu),
            offset!(ibv_port_attr, gid_tbl_len),
            offset!(ibv_port_attr, link_layer),
            size!(ibv_qp_init_attr),
            offset!(ibv_qp_init_attr, cap),
            offset!(ibv_qp_init_attr, qp_type),
            offset!(ibv_qp_init_attr, sq_sig_all),
            size!(ibv_qp_attr),
            offset!(ibv_qp_attr, cap),
            offset!(ibv_qp_attr, ah_attr),
            offset!(ibv_qp_attr, pkey_index),
            offset!(ibv_qp_attr, max_rd_atomic),
            offset!(ibv_qp_attr, timeout),
            offset!(ibv_qp_attr, rnr_retry),
            offset!(ibv_qp_attr, rate_limit),
            offset!(ibv_ah_attr, dlid),
            offset!(ibv_ah_attr, is_global),
            offset!(ibv_ah_attr, port_num),
            offset!(ibv_global_route, sgid_index),
            offset!(ibv_global_route, hop_limit),
            size!(ibv_send_wr),
            offset!(ibv_send_wr, num_sge),
            offset!(ibv_send_wr, opcode),
            offset!(ibv_send_wr, send_flags),
            (
                "offsetof(struct ibv_send_wr, wr.rdma.remote_addr)",
                offset_of!(ibv_send_wr, remote_addr),
            ),
            (
                "offsetof(struct ibv_send_wr, wr.rdma.rkey)",
                offset_of!(ibv_send_wr, rkey),
            ),
            size!(ibv_sge),
            size!(ibv_wc),
            offset!(ibv_wc, status),
            offset!(ibv_wc, vendor_err),
        ]
    }

    /// The enum and flag values named above.
    fn constant_facts() -> Vec<(&'static str, usize)> {
        vec![
            constant!(IBV_QPT_RC),
            constant!(IBV_QPS_INIT),
            constant!(IBV_QPS_RTR),
            constant!(IBV_QPS_RTS),
            constant!(IBV_ACCESS_LOCAL_WRITE),
            constant!(IBV_ACCESS_REMOTE_WRITE),
            constant!(IBV_QP_STATE),
            constant!(IBV_QP_ACCESS_FLAGS),
            constant!(IBV_QP_PKEY_INDEX),
            constant!(IBV_QP_PORT),
            constant!(IBV_QP_AV),
            constant!(IBV_QP_PATH_MTU),
            constant!(IBV_QP_TIMEOUT),
            constant!(IBV_QP_RETRY_CNT),
            constant!(IBV_QP_RNR_RETRY),
            constant!(IBV_QP_RQ_PSN),
            constant!(IBV_QP_MAX_QP_RD_ATOMIC),
            constant!(IBV_QP_MIN_RNR_TIMER),
            constant!(IBV_QP_SQ_PSN),
            constant!(IBV_QP_MAX_DEST_RD_ATOMIC),
            constant!(IBV_QP_DEST_QPN),
            constant!(IBV_WR_RDMA_WRITE),
            constant!(IBV_SEND_SIGNALED),
            constant!(IBV_SEND_INLINE),
            constant!(IBV_WC_SUCCESS),
            constant!(IBV_WC_WR_FLUSH_ERR),
            constant!(IBV_WC_RETRY_EXC_ERR),
            constant!(IBV_PORT_ACTIVE),
        ]
    }

    /// Compiles a C program that prints each fact from the installed `verbs.h` and compares.
    /// Skipped (with a note) where there is no header or no C compiler.
    #[test]
    fn layouts_match_verbs_h() {
        let header = std::path::Path::new("/usr/include/infiniband/verbs.h");
        if !header.exists() {
            eprintln!(
                "skipped: {} not installed (libibverbs-dev)",
                header.display()
            );
            return;
        }
        let dir =
            std::env::temp_dir().join(format!("backline-verbs-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = String::from(
            "#include <stdio.h>\n#include <stddef.h>\n#include <infiniband/verbs.h>\nint main(void) {\n",
        );
        for (expr, _) in facts() {
            c.push_str(&format!("  printf(\"%zu\\n\", (size_t)({expr}));\n"));
        }
        c.push_str("  return 0;\n}\n");
        let src = dir.join("layout.c");
        let exe = dir.join("layout");
        std::fs::write(&src, c).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let built = match Command::new(&cc).arg(&src).arg("-o").arg(&exe).output() {
            Ok(o) => o,
            Err(e) => {
                eprintln!("skipped: no C compiler `{cc}` ({e})");
                let _ = std::fs::remove_dir_all(&dir);
                return;
            }
        };
        assert!(
            built.status.success(),
            "compiling the layout probe failed:\n{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let out = Command::new(&exe).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let text = String::from_utf8(out.stdout).unwrap();
        let values: Vec<usize> = text.lines().map(|l| l.parse().unwrap()).collect();
        let facts = facts();
        assert_eq!(values.len(), facts.len());
        let wrong: Vec<String> = facts
            .iter()
            .zip(&values)
            .filter(|((_, ours), c)| *ours != **c)
            .map(|((expr, ours), c)| format!("{expr}: verbs.h says {c}, we use {ours}"))
            .collect();
        assert!(wrong.is_empty(), "layout mismatches:\n{}", wrong.join("\n"));
    }
}
