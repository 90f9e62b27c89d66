//! Safe wrappers over the raw bindings of `sys.rs`: an opened device (context, protection
//! domain, port and GID), and an [`Endpoint`] — one side's registered ring memory plus an RC
//! queue pair and its send completion queue, with the selective-signalling bookkeeping that
//! keeps the send queue from overflowing. All `unsafe` of the rdma transport is in this file
//! and in `sys.rs`.

use std::alloc::Layout;
use std::ffi::{CStr, c_int};
use std::io;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::{Duration, Instant};

use backline_ring::RingView;
use backline_wire::{Geometry, Seq};

use super::sys::{self, Verbs};
use crate::{Error, RdmaOptions, Result};

/// An error of a verbs call that returned an error number (or -1 with `errno` set).
fn rc_error(what: &str, rc: c_int) -> Error {
    let source = if rc > 0 {
        io::Error::from_raw_os_error(rc)
    } else {
        io::Error::last_os_error()
    };
    Error::Io {
        what: what.to_string(),
        source,
    }
}

/// An error of a verbs call that returned NULL and set `errno`.
fn null_error(what: &str) -> Error {
    Error::Io {
        what: what.to_string(),
        source: io::Error::last_os_error(),
    }
}

/// libibverbs, or the plain reason this machine cannot do RDMA.
pub(crate) fn load() -> Result<&'static Verbs> {
    sys::verbs().map_err(|e| {
        Error::Unsupported(format!(
            "no RDMA support on this machine: {} cannot be loaded ({e}); install rdma-core's \
             libibverbs1 and ibverbs-providers",
            sys::LIBIBVERBS
        ))
    })
}

/// Names of the RDMA devices present.
pub(crate) fn device_names() -> Result<Vec<String>> {
    let v = load()?;
    let mut n: c_int = 0;
    // SAFETY: `n` is a valid out-pointer; the list is freed below.
    let list = unsafe { (v.get_device_list)(&mut n) };
    if list.is_null() {
        let e = io::Error::last_os_error();
        return Err(Error::Unsupported(
            if e.raw_os_error() == Some(libc::ENOSYS) {
                "no RDMA device: this kernel has no RDMA support (ibv_get_device_list: ENOSYS); \
             on Linux, load a driver or create a Soft-RoCE device with `rdma link add rxe0 \
             type rxe netdev IFACE`"
                    .to_string()
            } else {
                format!("no RDMA device: ibv_get_device_list failed: {e}")
            },
        ));
    }
    let mut names = Vec::new();
    for i in 0..n.max(0) as usize {
        // SAFETY: the list holds `n` valid device pointers.
        let dev = unsafe { *list.add(i) };
        // SAFETY: a valid device; the name is a NUL-terminated string it owns.
        let name = unsafe { CStr::from_ptr((v.get_device_name)(dev)) };
        names.push(name.to_string_lossy().into_owned());
    }
    // SAFETY: the list came from ibv_get_device_list and is freed once.
    unsafe { (v.free_device_list)(list) };
    Ok(names)
}

/// The MTU enum of verbs in bytes.
fn mtu_bytes(mtu: c_int) -> u32 {
    match mtu {
        1..=5 => 128 << mtu,
        _ => 0,
    }
}

/// The GID type of table entry `index`, from sysfs (`RoCE v2`, `IB/RoCE v1`), if readable.
fn gid_type(device: &str, port: u8, index: usize) -> Option<String> {
    let p = format!("/sys/class/infiniband/{device}/ports/{port}/gid_attrs/types/{index}");
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// A GID in the usual notation; an IPv4-mapped one as `::ffff:a.b.c.d`.
pub(crate) fn gid_text(g: &[u8; 16]) -> String {
    let ip = std::net::Ipv6Addr::from(*g);
    match ip.to_ipv4_mapped() {
        Some(v4) => format!("::ffff:{v4}"),
        None => ip.to_string(),
    }
}

/// An opened RDMA device: context, protection domain, and the port and GID in use.
pub(crate) struct Device {
    v: &'static Verbs,
    ctx: NonNull<sys::ibv_context>,
    pd: Option<NonNull<sys::ibv_pd>>,
    /// Device name, e.g. `rxe0`.
    pub name: String,
    /// Port number.
    pub port: u8,
    /// GID table index.
    pub gid_index: u8,
    /// The GID at that index.
    pub gid: [u8; 16],
    /// Its type as sysfs names it (empty when unknown).
    pub gid_type: String,
    /// The port's active MTU (verbs enum).
    active_mtu: c_int,
    /// Largest send queue the device allows.
    max_qp_wr: u32,
}

// SAFETY: libibverbs objects may be used from any thread (verbs calls are thread-safe); the
// device is only mutated through verbs calls.
unsafe impl Send for Device {}
// SAFETY: as above.
unsafe impl Sync for Device {}

impl Device {
    /// Opens the device, port and GID of `opts`, checking each.
    pub(crate) fn open(opts: &RdmaOptions) -> Result<Device> {
        let v = load()?;
        let names = device_names()?;
        if names.is_empty() {
            return Err(Error::Unsupported(
                "no RDMA device found (for Soft-RoCE: `rdma link add rxe0 type rxe netdev \
                 IFACE`)"
                    .into(),
            ));
        }
        let index = match &opts.device {
            None => 0,
            Some(want) => names.iter().position(|n| n == want).ok_or_else(|| {
                Error::Invalid(format!(
                    "RDMA device `{want}` does not exist (devices here: {})",
                    names.join(", ")
                ))
            })?,
        };
        let name = names[index].clone();
        let mut n: c_int = 0;
        // SAFETY: as in `device_names`.
        let list = unsafe { (v.get_device_list)(&mut n) };
        if list.is_null() || (n as usize) <= index {
            if !list.is_null() {
                // SAFETY: freed once.
                unsafe { (v.free_device_list)(list) };
            }
            return Err(Error::Failed(format!("RDMA device `{name}` went away")));
        }
        // SAFETY: `index < n`; the device stays valid after the list is freed once opened
        // (libibverbs keeps opened devices alive).
        let ctx = unsafe { (v.open_device)(*list.add(index)) };
        // SAFETY: freed once; `ctx` holds its own reference to the device.
        unsafe { (v.free_device_list)(list) };
        let ctx = NonNull::new(ctx).ok_or_else(|| null_error(&format!("opening {name}")))?;
        // From here on, `dev` owns the context (and closes it on an early return).
        let mut dev = Device {
            v,
            ctx,
            pd: None,
            name,
            port: opts.port,
            gid_index: 0,
            gid: [0; 16],
            gid_type: String::new(),
            active_mtu: 0,
            max_qp_wr: 0,
        };
        dev.query(opts)?;
        // SAFETY: a valid context.
        let pd = unsafe { (v.alloc_pd)(ctx.as_ptr()) };
        dev.pd = Some(NonNull::new(pd).ok_or_else(|| {
            null_error(&format!("allocating a protection domain on {}", dev.name))
        })?);
        Ok(dev)
    }

    fn pd(&self) -> *mut sys::ibv_pd {
        self.pd.expect("allocated in open").as_ptr()
    }

    /// Checks port and GID; fills the fields.
    fn query(&mut self, opts: &RdmaOptions) -> Result<()> {
        let v = self.v;
        // SAFETY: an all-zero ibv_device_attr is valid plain data.
        let mut da: sys::ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: a valid context and a writable attribute struct of the right layout.
        let rc = unsafe { (v.query_device)(self.ctx.as_ptr(), &mut da) };
        if rc != 0 {
            return Err(rc_error(&format!("querying {}", self.name), rc));
        }
        if opts.port == 0 || opts.port > da.phys_port_cnt {
            return Err(Error::Invalid(format!(
                "port {} does not exist on {} (it has {} port{}, numbered from 1)",
                opts.port,
                self.name,
                da.phys_port_cnt,
                if da.phys_port_cnt == 1 { "" } else { "s" }
            )));
        }
        self.max_qp_wr = da.max_qp_wr.max(1) as u32;
        // A generous buffer: the exported ibv_query_port of older ABIs may write less.
        #[repr(C)]
        struct PortBuf {
            attr: sys::ibv_port_attr,
            _spare: [u8; 64],
        }
        // SAFETY: all-zero plain data.
        let mut pa: PortBuf = unsafe { std::mem::zeroed() };
        // SAFETY: a valid context, a valid port number and a writable buffer at least as
        // large as struct ibv_port_attr.
        let rc = unsafe { (v.query_port)(self.ctx.as_ptr(), opts.port, &mut pa.attr) };
        if rc != 0 {
            return Err(rc_error(
                &format!("querying {} port {}", self.name, opts.port),
                rc,
            ));
        }
        let pa = pa.attr;
        if pa.state != sys::IBV_PORT_ACTIVE {
            return Err(Error::Invalid(format!(
                "{} port {} is not active (port state {}): is its network interface up?",
                self.name, opts.port, pa.state
            )));
        }
        self.active_mtu = pa.active_mtu;
        let table = pa.gid_tbl_len.max(0) as usize;
        let read_gid = |i: usize| -> Option<[u8; 16]> {
            let mut g = sys::ibv_gid::default();
            // SAFETY: a valid context and port, an index below the table length, and a
            // writable ibv_gid.
            let rc = unsafe { (v.query_gid)(self.ctx.as_ptr(), opts.port, i as c_int, &mut g) };
            (rc == 0 && g.raw != [0; 16]).then_some(g.raw)
        };
        let (index, gid) = match opts.gid_index {
            Some(i) if i as usize >= table => {
                return Err(Error::Invalid(format!(
                    "GID index {i} is out of range: {} port {} has {table} GID entries (0..={})",
                    self.name,
                    opts.port,
                    table.saturating_sub(1)
                )));
            }
            Some(i) => match read_gid(i as usize) {
                Some(g) => (i as usize, g),
                None => {
                    let used: Vec<String> = (0..table.min(256))
                        .filter(|&j| read_gid(j).is_some())
                        .map(|j| j.to_string())
                        .collect();
                    return Err(Error::Invalid(format!(
                        "GID index {i} of {} port {} is empty (no address behind it); the port has {table} GID entries, those in use: {}",
                        self.name,
                        opts.port,
                        if used.is_empty() {
                            "none".to_string()
                        } else {
                            used.join(", ")
                        }
                    )));
                }
            },
            None => {
                // Prefer RoCE v2 with an IPv4 address, then any RoCE v2, then any GID.
                let entries: Vec<(usize, [u8; 16], String)> = (0..table.min(256))
                    .filter_map(|i| {
                        read_gid(i)
                            .map(|g| (i, g, gid_type(&self.name, opts.port, i).unwrap_or_default()))
                    })
                    .collect();
                let v2 = |t: &str| t.eq_ignore_ascii_case("RoCE v2");
                let mapped = |g: &[u8; 16]| std::net::Ipv6Addr::from(*g).to_ipv4_mapped().is_some();
                let pick = entries
                    .iter()
                    .find(|(_, g, t)| v2(t) && mapped(g))
                    .or_else(|| entries.iter().find(|(_, _, t)| v2(t)))
                    .or_else(|| entries.first())
                    .ok_or_else(|| {
                        Error::Invalid(format!(
                            "{} port {} has no GID (no address on its network interface?)",
                            self.name, opts.port
                        ))
                    })?;
                (pick.0, pick.1)
            }
        };
        self.gid_index = index as u8;
        self.gid = gid;
        self.gid_type = gid_type(&self.name, opts.port, index).unwrap_or_default();
        Ok(())
    }

    /// `rxe0 port 1, GID index 1 (RoCE v2 ::ffff:10.0.0.1), MTU 1024`.
    pub(crate) fn describe(&self) -> String {
        let t = if self.gid_type.is_empty() {
            String::new()
        } else {
            format!("{} ", self.gid_type)
        };
        format!(
            "{} port {}, GID index {} ({t}{}), MTU {}",
            self.name,
            self.port,
            self.gid_index,
            gid_text(&self.gid),
            mtu_bytes(self.active_mtu)
        )
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: every queue pair, CQ and MR holds an Arc<Device>, so none is left; the PD
        // (if allocated) and the context are released once, in this order.
        unsafe {
            if let Some(pd) = self.pd {
                (self.v.dealloc_pd)(pd.as_ptr());
            }
            (self.v.close_device)(self.ctx.as_ptr());
        }
    }
}

/// Where the peer's receive ring is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RemoteRing {
    /// Virtual address of its first slot.
    pub addr: u64,
    /// Its rkey.
    pub rkey: u32,
}

/// Our side of a connection, as sent in the handshake.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocalEnd {
    pub qpn: u32,
    pub psn: u32,
    pub gid: [u8; 16],
    pub rkey: u32,
    pub ring_addr: u64,
}

/// What a queue pair needs to know of the peer to connect.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeerEnd {
    pub qpn: u32,
    pub psn: u32,
    pub gid: [u8; 16],
    pub ring: RemoteRing,
}

/// Bytes of a floor line (one cache line, the counter in its last four bytes).
pub(crate) const FLOOR_LINE: usize = 64;

/// A memory registration, deregistered on drop.
struct Mr {
    v: &'static Verbs,
    mr: NonNull<sys::ibv_mr>,
}

impl Mr {
    fn lkey(&self) -> u32 {
        // SAFETY: a live registration; lkey is written once by ibv_reg_mr.
        unsafe { (*self.mr.as_ptr()).lkey }
    }
    fn rkey(&self) -> u32 {
        // SAFETY: as above.
        unsafe { (*self.mr.as_ptr()).rkey }
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: registered once, deregistered once; no queue pair uses it any more (the
        // Endpoint drops its queue pair first).
        unsafe { (self.v.dereg_mr)(self.mr.as_ptr()) };
    }
}

/// One side's memory: `[receive ring | floor receive line]` registered for remote writes,
/// then, on its own pages, `[send staging ring | floor send line]` registered for local use
/// only. The peer's WRITEs land in the first part; ours are sent from the second.
struct Region {
    base: NonNull<u8>,
    layout: Layout,
    geometry: Geometry,
    /// Offset of the local part.
    local_at: usize,
    recv: RingView,
    send: RingView,
    remote_mr: Option<Mr>,
    local_mr: Option<Mr>,
}

// SAFETY: the allocation is owned by the region; its rings are accessed through RingViews
// (whose protocol makes the accesses data-race free) and the floor words atomically.
unsafe impl Send for Region {}

impl Region {
    fn new(dev: &Device, geometry: Geometry) -> Result<Region> {
        let geometry = geometry.validate()?;
        let ring = geometry.ring_bytes();
        let page = 4096;
        let local_at = (ring + FLOOR_LINE).div_ceil(page) * page;
        let size = (local_at + ring + FLOOR_LINE).div_ceil(page) * page;
        let layout = Layout::from_size_align(size, page)
            .map_err(|e| Error::Invalid(format!("ring region of {size} bytes: {e}")))?;
        // SAFETY: non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(base) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        // SAFETY: the fresh allocation is page-aligned, `size` long and ours; touching every
        // page now keeps page faults out of round 0 (registration pins the pages anyway).
        unsafe { crate::os::populate_write(base.as_ptr(), size) };
        // SAFETY: both rings lie inside the allocation, 64-byte aligned (page-aligned base,
        // offsets multiples of 64), and live as long as the region, which owns the views'
        // memory and is dropped only after every user of the views (Endpoint owns both).
        let (recv, send) = unsafe {
            (
                RingView::new(base, geometry, None)?,
                RingView::new(base.add(local_at), geometry, None)?,
            )
        };
        let mut r = Region {
            base,
            layout,
            geometry,
            local_at,
            recv,
            send,
            remote_mr: None,
            local_mr: None,
        };
        let reg = |at: usize, len: usize, access: c_int, what: &str| -> Result<Mr> {
            // SAFETY: `[base + at, base + at + len)` lies in the allocation, which outlives
            // the registration (Region drops its MRs before freeing the memory).
            let mr = unsafe { (dev.v.reg_mr)(dev.pd(), base.as_ptr().add(at).cast(), len, access) };
            NonNull::new(mr)
                .map(|mr| Mr { v: dev.v, mr })
                .ok_or_else(|| {
                    null_error(&format!(
                        "registering the {what} ({len} bytes) on {}",
                        dev.name
                    ))
                })
        };
        r.remote_mr = Some(reg(
            0,
            ring + FLOOR_LINE,
            sys::IBV_ACCESS_LOCAL_WRITE | sys::IBV_ACCESS_REMOTE_WRITE,
            "receive ring",
        )?);
        r.local_mr = Some(reg(
            local_at,
            ring + FLOOR_LINE,
            sys::IBV_ACCESS_LOCAL_WRITE,
            "send ring",
        )?);
        Ok(r)
    }

    fn addr(&self, offset: usize) -> u64 {
        self.base.as_ptr() as u64 + offset as u64
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        debug_assert!(offset + 4 <= self.layout.size() && offset.is_multiple_of(4));
        // SAFETY: an aligned u32 inside the allocation, alive as long as `&self`; floor words
        // are only ever accessed atomically (locally) or written whole by the NIC.
        unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(offset).cast()) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        self.remote_mr = None;
        self.local_mr = None;
        // SAFETY: allocated in `new` with this layout; the registrations are gone.
        unsafe { std::alloc::dealloc(self.base.as_ptr(), self.layout) };
    }
}

/// A queue pair with its completion queue.
struct QueuePair {
    v: &'static Verbs,
    cq: NonNull<sys::ibv_cq>,
    qp: NonNull<sys::ibv_qp>,
    post_send: sys::PostSendFn,
    poll_cq: sys::PollCqFn,
    qpn: u32,
    max_inline: u32,
}

impl QueuePair {
    /// An RC queue pair in state INIT, allowing remote writes, with `sq_depth` send slots.
    fn create(dev: &Device, sq_depth: u32, want_inline: u32) -> Result<QueuePair> {
        let v = dev.v;
        // SAFETY: valid context; no completion channel; the CQ is destroyed in Drop (or
        // below if the QP cannot be created).
        let cq = unsafe {
            (v.create_cq)(
                dev.ctx.as_ptr(),
                sq_depth as c_int + 1,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        let cq = NonNull::new(cq)
            .ok_or_else(|| null_error(&format!("creating a completion queue on {}", dev.name)))?;
        let mut inline = want_inline;
        let qp = loop {
            let mut init = sys::ibv_qp_init_attr {
                qp_context: std::ptr::null_mut(),
                send_cq: cq.as_ptr(),
                recv_cq: cq.as_ptr(),
                srq: std::ptr::null_mut(),
                cap: sys::ibv_qp_cap {
                    max_send_wr: sq_depth,
                    max_recv_wr: 1,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: inline,
                },
                qp_type: sys::IBV_QPT_RC,
                sq_sig_all: 0,
            };
            // SAFETY: valid PD and CQ; the attribute struct is fully initialised.
            let qp = unsafe { (v.create_qp)(dev.pd(), &mut init) };
            if let Some(qp) = NonNull::new(qp) {
                // The library writes back what it granted.
                inline = init.cap.max_inline_data;
                break qp;
            }
            if inline == 0 {
                let e = null_error(&format!("creating an RC queue pair on {}", dev.name));
                // SAFETY: the CQ was created above and nothing uses it.
                unsafe { (v.destroy_cq)(cq.as_ptr()) };
                return Err(e);
            }
            // Some devices refuse large inline sizes: ask for less.
            inline = if inline > 64 { inline / 2 } else { 0 };
        };
        // SAFETY: a live QP; its context pointer and the ops table it points to live as long
        // as the device.
        let (ops, qpn) = unsafe {
            let ctx = (*qp.as_ptr()).context;
            ((*ctx).ops, (*qp.as_ptr()).qp_num)
        };
        let (post, poll) = (ops[sys::OPS_POST_SEND], ops[sys::OPS_POLL_CQ]);
        let mut q = QueuePair {
            v,
            cq,
            qp,
            // Placeholders, replaced below once checked to be non-null.
            post_send: unreachable_post,
            poll_cq: unreachable_poll,
            qpn,
            max_inline: inline,
        };
        if post.is_null() || poll.is_null() {
            return Err(Error::Unsupported(format!(
                "the {} provider does not fill post_send/poll_cq in its ops table",
                dev.name
            )));
        }
        // SAFETY: non-null entries of the ops table at the indices of post_send and poll_cq
        // (checked against verbs.h by the layout test), whose C types these are.
        unsafe {
            q.post_send = std::mem::transmute::<*const std::ffi::c_void, sys::PostSendFn>(post);
            q.poll_cq = std::mem::transmute::<*const std::ffi::c_void, sys::PollCqFn>(poll);
        }
        let mut attr = sys::ibv_qp_attr {
            qp_state: sys::IBV_QPS_INIT,
            pkey_index: 0,
            port_num: dev.port,
            qp_access_flags: (sys::IBV_ACCESS_LOCAL_WRITE | sys::IBV_ACCESS_REMOTE_WRITE) as u32,
            ..Default::default()
        };
        q.modify(
            &mut attr,
            sys::IBV_QP_STATE
                | sys::IBV_QP_PKEY_INDEX
                | sys::IBV_QP_PORT
                | sys::IBV_QP_ACCESS_FLAGS,
            "INIT",
        )?;
        Ok(q)
    }

    fn modify(&self, attr: &mut sys::ibv_qp_attr, mask: c_int, state: &str) -> Result<()> {
        // SAFETY: a live QP and a fully initialised attribute struct.
        let rc = unsafe { (self.v.modify_qp)(self.qp.as_ptr(), attr, mask) };
        if rc != 0 {
            return Err(rc_error(
                &format!("moving queue pair {:#x} to {state}", self.qpn),
                rc,
            ));
        }
        Ok(())
    }

    /// INIT → RTR → RTS, towards `peer`.
    fn connect(&self, dev: &Device, local_psn: u32, peer: &PeerEnd) -> Result<()> {
        let mut attr = sys::ibv_qp_attr {
            qp_state: sys::IBV_QPS_RTR,
            path_mtu: dev.active_mtu,
            dest_qp_num: peer.qpn,
            rq_psn: peer.psn,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
            ah_attr: sys::ibv_ah_attr {
                grh: sys::ibv_global_route {
                    dgid: sys::ibv_gid { raw: peer.gid },
                    flow_label: 0,
                    sgid_index: dev.gid_index,
                    hop_limit: 64,
                    traffic_class: 0,
                },
                dlid: 0,
                sl: 0,
                src_path_bits: 0,
                static_rate: 0,
                is_global: 1,
                port_num: dev.port,
            },
            ..Default::default()
        };
        self.modify(
            &mut attr,
            sys::IBV_QP_STATE
                | sys::IBV_QP_AV
                | sys::IBV_QP_PATH_MTU
                | sys::IBV_QP_DEST_QPN
                | sys::IBV_QP_RQ_PSN
                | sys::IBV_QP_MAX_DEST_RD_ATOMIC
                | sys::IBV_QP_MIN_RNR_TIMER,
            "RTR",
        )?;
        let mut attr = sys::ibv_qp_attr {
            qp_state: sys::IBV_QPS_RTS,
            // 4.096 µs × 2^14 ≈ 67 ms per try, 7 tries: a vanished peer fails a WRITE in
            // about half a second.
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            sq_psn: local_psn,
            max_rd_atomic: 1,
            ..Default::default()
        };
        self.modify(
            &mut attr,
            sys::IBV_QP_STATE
                | sys::IBV_QP_TIMEOUT
                | sys::IBV_QP_RETRY_CNT
                | sys::IBV_QP_RNR_RETRY
                | sys::IBV_QP_SQ_PSN
                | sys::IBV_QP_MAX_QP_RD_ATOMIC,
            "RTS",
        )
    }

    /// Posts one RDMA WRITE of `len` bytes at `local` (registered under `lkey`) to
    /// `remote`. Inline when it fits, so the source may be rewritten at once.
    #[inline]
    fn write(
        &self,
        wr_id: u64,
        mut sge: sys::ibv_sge,
        remote: u64,
        rkey: u32,
        signaled: bool,
    ) -> Result<()> {
        let len = sge.length;
        // SAFETY: all-zero is a valid ibv_send_wr (null pointers, zero counts).
        let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = wr_id;
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        wr.opcode = sys::IBV_WR_RDMA_WRITE;
        wr.send_flags = if signaled { sys::IBV_SEND_SIGNALED } else { 0 }
            | if len <= self.max_inline {
                sys::IBV_SEND_INLINE
            } else {
                0
            };
        wr.remote_addr = remote;
        wr.rkey = rkey;
        let mut bad = std::ptr::null_mut();
        // SAFETY: a live QP; `wr` and `sge` outlive the call (the provider copies the WQE,
        // and the data too when inline); the local range is registered memory of the
        // endpoint, which outlives the queue pair.
        let rc = unsafe { (self.post_send)(self.qp.as_ptr(), &mut wr, &mut bad) };
        if rc != 0 {
            return Err(rc_error("posting an RDMA WRITE", rc));
        }
        Ok(())
    }

    /// Polls up to `wcs.len()` completions.
    #[inline]
    fn poll(&self, wcs: &mut [sys::ibv_wc]) -> Result<usize> {
        // SAFETY: a live CQ and a writable array of `len` work completions.
        let n = unsafe { (self.poll_cq)(self.cq.as_ptr(), wcs.len() as c_int, wcs.as_mut_ptr()) };
        if n < 0 {
            return Err(rc_error("polling the completion queue", -n));
        }
        Ok(n as usize)
    }

    fn status_text(&self, status: c_int) -> String {
        // SAFETY: ibv_wc_status_str returns a static string for any value.
        unsafe { CStr::from_ptr((self.v.wc_status_str)(status)) }
            .to_string_lossy()
            .into_owned()
    }
}

unsafe extern "C" fn unreachable_post(
    _: *mut sys::ibv_qp,
    _: *mut sys::ibv_send_wr,
    _: *mut *mut sys::ibv_send_wr,
) -> c_int {
    libc::ENOSYS
}

unsafe extern "C" fn unreachable_poll(_: *mut sys::ibv_cq, _: c_int, _: *mut sys::ibv_wc) -> c_int {
    -libc::ENOSYS
}

// SAFETY: a queue pair and its CQ may be used from any thread; the endpoint that owns them
// uses them from one thread at a time (`&mut self` for every post and poll).
unsafe impl Send for QueuePair {}
// SAFETY: a registration is immutable after ibv_reg_mr; its keys may be read from any thread.
unsafe impl Send for Mr {}

impl Drop for QueuePair {
    fn drop(&mut self) {
        // SAFETY: created once, destroyed once, QP before its CQ.
        unsafe {
            (self.v.destroy_qp)(self.qp.as_ptr());
            (self.v.destroy_cq)(self.cq.as_ptr());
        }
    }
}

/// A WRITE that completed with an error: the connection is broken.
#[derive(Debug, Clone)]
pub(crate) struct WriteFailed {
    /// `ibv_wc_status_str` of the completion.
    pub status: String,
    /// True for "transport retry counter exceeded" and flushes: the peer is unreachable.
    pub peer_gone: bool,
}

/// Send-queue slots of every endpoint (clamped to the device's limit).
const SQ_DEPTH: u32 = 128;
/// Inline data we ask for: enough for a 64-byte slot image four times over.
const WANT_INLINE: u32 = 256;

/// One side of an RDMA connection: its registered rings, its queue pair, and the peer's ring.
///
/// Selective signalling: only every `signal_every`-th WRITE asks for a completion. A
/// completion retires its WRITE and every earlier one, so at most `sq_depth` WRITEs are ever
/// outstanding: before a WRITE that would make it more, the endpoint polls the completion
/// queue until an earlier signalled one has completed. Failed WRITEs always complete, so an
/// error is seen at the latest when the next signalled one is reaped.
pub(crate) struct Endpoint {
    // Field order is drop order: the queue pair goes before the memory it writes from/to.
    qp: QueuePair,
    region: Region,
    dev: Arc<Device>,
    psn: u32,
    peer: Option<RemoteRing>,
    posted: u64,
    retired: u64,
    sq_depth: u64,
    signal_every: u64,
    /// How long a full send queue may take to drain.
    drain_timeout: Duration,
    failed: Option<WriteFailed>,
    wcs: [sys::ibv_wc; 8],
}

impl Endpoint {
    /// Registers the rings of `geometry` and creates a queue pair (state INIT).
    pub(crate) fn new(
        dev: Arc<Device>,
        geometry: Geometry,
        drain_timeout: Duration,
    ) -> Result<Endpoint> {
        let region = Region::new(&dev, geometry)?;
        let sq_depth = SQ_DEPTH.min(dev.max_qp_wr).max(2);
        let qp = QueuePair::create(&dev, sq_depth, WANT_INLINE)?;
        Ok(Endpoint {
            qp,
            region,
            psn: random_psn(),
            dev,
            peer: None,
            posted: 0,
            retired: 0,
            sq_depth: sq_depth as u64,
            signal_every: (sq_depth / 2) as u64,
            drain_timeout,
            failed: None,
            wcs: [sys::ibv_wc::default(); 8],
        })
    }

    /// What the peer needs to know of us.
    pub(crate) fn local(&self) -> LocalEnd {
        LocalEnd {
            qpn: self.qp.qpn,
            psn: self.psn,
            gid: self.dev.gid,
            rkey: self.region.remote_mr.as_ref().expect("registered").rkey(),
            ring_addr: self.region.addr(0),
        }
    }

    /// Bytes of inline data each WRITE may carry (what the device granted).
    #[cfg(test)]
    pub(crate) fn max_inline(&self) -> u32 {
        self.qp.max_inline
    }

    /// Connects the queue pair to the peer (RTR, then RTS).
    pub(crate) fn connect(&mut self, peer: &PeerEnd) -> Result<()> {
        self.qp.connect(&self.dev, self.psn, peer)?;
        self.peer = Some(peer.ring);
        Ok(())
    }

    /// The ring the peer writes into.
    pub(crate) fn recv(&self) -> &RingView {
        &self.region.recv
    }

    /// The local ring our messages are staged in before their WRITE.
    pub(crate) fn send(&self) -> &RingView {
        &self.region.send
    }

    /// The counter word the peer's floor WRITEs land in.
    pub(crate) fn floor_recv(&self) -> &AtomicU32 {
        self.region
            .word(self.region.geometry.ring_bytes() + FLOOR_LINE - 4)
    }

    /// Sends the staged message of `seq` (payload of `payload_len` bytes, header, `seq`
    /// last) with one WRITE into the same place of the peer's receive ring.
    #[inline]
    pub(crate) fn write_slot(&mut self, seq: Seq, payload_len: usize) -> Result<(), WriteError> {
        let (off, len) = self.region.geometry.message_range(seq, payload_len);
        let peer = self.peer.ok_or(WriteError::NotConnected)?;
        let local = self.region.addr(self.region.local_at + off);
        self.post(local, len as u32, peer.addr + off as u64, peer.rkey)
    }

    /// Writes `value` into the peer's floor counter.
    #[inline]
    pub(crate) fn write_floor(&mut self, value: u32) -> Result<(), WriteError> {
        let peer = self.peer.ok_or(WriteError::NotConnected)?;
        let ring = self.region.geometry.ring_bytes();
        let at = self.region.local_at + ring + FLOOR_LINE - 4;
        self.region
            .word(at)
            .store(value, std::sync::atomic::Ordering::Relaxed);
        let remote = peer.addr + (ring + FLOOR_LINE - 4) as u64;
        self.post(self.region.addr(at), 4, remote, peer.rkey)
    }

    #[inline]
    fn post(&mut self, local: u64, len: u32, remote: u64, rkey: u32) -> Result<(), WriteError> {
        if let Some(f) = &self.failed {
            return Err(WriteError::Failed(f.clone()));
        }
        if self.posted - self.retired >= self.signal_every {
            self.reap()?;
            if self.posted - self.retired >= self.sq_depth {
                let t0 = Instant::now();
                while self.posted - self.retired >= self.sq_depth {
                    self.reap()?;
                    if t0.elapsed() > self.drain_timeout {
                        return Err(WriteError::Stuck(t0.elapsed()));
                    }
                    core::hint::spin_loop();
                }
            }
        }
        let signaled = self.posted % self.signal_every == self.signal_every - 1;
        let lkey = self.region.local_mr.as_ref().expect("registered").lkey();
        let sge = sys::ibv_sge {
            addr: local,
            length: len,
            lkey,
        };
        self.qp
            .write(self.posted, sge, remote, rkey, signaled)
            .map_err(WriteError::Post)?;
        self.posted += 1;
        Ok(())
    }

    /// Takes completions off the queue; an error completion breaks the endpoint for good.
    pub(crate) fn reap(&mut self) -> Result<(), WriteError> {
        loop {
            let n = self.qp.poll(&mut self.wcs).map_err(WriteError::Post)?;
            for wc in &self.wcs[..n] {
                if wc.status != sys::IBV_WC_SUCCESS {
                    let f = WriteFailed {
                        status: format!(
                            "{} (status {}, vendor error {:#x})",
                            self.qp.status_text(wc.status),
                            wc.status,
                            wc.vendor_err
                        ),
                        peer_gone: matches!(
                            wc.status,
                            sys::IBV_WC_RETRY_EXC_ERR | sys::IBV_WC_WR_FLUSH_ERR
                        ),
                    };
                    self.failed = Some(f.clone());
                    return Err(WriteError::Failed(f));
                }
                self.retired = self.retired.max(wc.wr_id + 1);
            }
            if n < self.wcs.len() {
                return Ok(());
            }
        }
    }

    /// The failure seen so far, if any (after `reap`).
    pub(crate) fn failure(&self) -> Option<&WriteFailed> {
        self.failed.as_ref()
    }
}

/// Why a WRITE could not be posted.
#[derive(Debug)]
pub(crate) enum WriteError {
    /// The queue pair is not connected yet.
    NotConnected,
    /// `ibv_post_send` or `ibv_poll_cq` failed.
    Post(Error),
    /// An earlier WRITE completed with an error.
    Failed(WriteFailed),
    /// The send queue stayed full.
    Stuck(Duration),
}

/// A random 24-bit packet sequence number (from the standard library's per-process random
/// hash keys, mixed with the time).
fn random_psn() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() as u32) & 0x00FF_FFFF
}
