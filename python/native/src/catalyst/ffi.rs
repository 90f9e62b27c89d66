//! The C side of the Catalyst device: the functions `cpp/catalyst_device.cpp` calls, and the
//! factory symbol Catalyst looks up (`BacklineQubitFactory`), re-exported here because a C++
//! symbol linked into a Rust `cdylib` is not exported.
//!
//! Every function takes the device pointer the C++ object holds (made by
//! [`backline_catalyst_new`], freed by [`backline_catalyst_drop`]) and returns null or an
//! error message the caller frees with [`backline_catalyst_free_error`]. A panic is caught
//! here and returned as an error: nothing unwinds out of Rust but the C++ factory's own
//! exceptions (`C-unwind`).

use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::Device;

unsafe extern "C-unwind" {
    /// `new backline_catalyst::Device(kwargs)`; throws a C++ exception on a bad placement.
    fn backline_catalyst_factory(kwargs: *const c_char) -> *mut c_void;
    /// A Pauli channel on the current run's device; throws on an error.
    fn backline_catalyst_qis_channel(name: *const c_char, p: f64, qubit: *mut c_void);
}

/// The runtime symbols PennyLane's noise channels lower to in a compiled program
/// (`__catalyst__qis__<Name>(p, qubit, modifiers)`), which Catalyst's runtime does not define.
/// They resolve when this library is loaded globally (`Backline.get_c_interface()` does so).
macro_rules! channel_symbols {
    ($($symbol:ident => $name:literal),* $(,)?) => {$(
        /// A Pauli channel on the current run's device (see [`channel_symbols`]).
        ///
        /// # Safety
        /// Called by Catalyst's compiled code with a qubit of the current run.
        #[unsafe(no_mangle)]
        #[allow(non_snake_case)]
        pub unsafe extern "C-unwind" fn $symbol(p: f64, qubit: *mut c_void, _modifiers: *const c_void) {
            // SAFETY: a NUL-terminated literal; the C++ side checks that a run is in progress.
            unsafe { backline_catalyst_qis_channel($name.as_ptr(), p, qubit) }
        }
    )*};
}

channel_symbols! {
    __catalyst__qis__BitFlip => c"BitFlip",
    __catalyst__qis__PhaseFlip => c"PhaseFlip",
    __catalyst__qis__DepolarizingChannel => c"DepolarizingChannel",
}

/// Catalyst's entry point: `<DEVICE_NAME>Factory`.
///
/// # Safety
/// `kwargs` is a NUL-terminated string (Catalyst passes the device's kwargs).
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn BacklineQubitFactory(kwargs: *const c_char) -> *mut c_void {
    // SAFETY: the C++ factory reads `kwargs` as the C string the caller guarantees.
    unsafe { backline_catalyst_factory(kwargs) }
}

fn message(text: String) -> *mut c_char {
    CString::new(text.replace('\0', " "))
        .unwrap_or_default()
        .into_raw()
}

/// Runs `f` on the device behind `device`, turning its error or a panic into a message.
fn with(
    device: *mut c_void,
    f: impl FnOnce(&mut Device) -> Result<(), super::DeviceError>,
) -> *mut c_char {
    if device.is_null() {
        return message("backline.qubit: no device".into());
    }
    // SAFETY: `device` came from `backline_catalyst_new` and is not yet dropped; the C++
    // object that owns it calls one function at a time.
    let d = unsafe { &mut *(device as *mut Device) };
    match catch_unwind(AssertUnwindSafe(|| f(d))) {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(e)) => message(format!("backline.qubit: {e}")),
        Err(_) => message(
            "backline.qubit: internal error (a panic in the device; please report it)".into(),
        ),
    }
}

/// A new device for the placement in `kwargs`; on failure null, with `*error` set.
///
/// # Safety
/// `kwargs` is a NUL-terminated string; `error` points to writable storage.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_catalyst_new(
    kwargs: *const c_char,
    error: *mut *mut c_char,
) -> *mut c_void {
    let made = catch_unwind(|| {
        if kwargs.is_null() {
            return Err("backline.qubit: no device kwargs".to_string());
        }
        // SAFETY: a NUL-terminated string, by the caller's contract.
        let kw = unsafe { CStr::from_ptr(kwargs) }.to_string_lossy();
        Device::new(&kw).map_err(|e| format!("backline.qubit: {e}"))
    });
    let err = match made {
        Ok(Ok(d)) => return Box::into_raw(Box::new(d)) as *mut c_void,
        Ok(Err(e)) => e,
        Err(_) => "backline.qubit: internal error (a panic making the device)".to_string(),
    };
    if !error.is_null() {
        // SAFETY: `error` is writable, by the caller's contract.
        unsafe { *error = message(err) };
    }
    std::ptr::null_mut()
}

/// Frees a device.
///
/// # Safety
/// `device` came from [`backline_catalyst_new`] (or is null) and is not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_catalyst_drop(device: *mut c_void) {
    if !device.is_null() {
        // SAFETY: made by Box::into_raw in backline_catalyst_new, dropped once.
        let d = unsafe { Box::from_raw(device as *mut Device) };
        let _ = catch_unwind(AssertUnwindSafe(move || drop(d)));
    }
}

/// Frees an error message.
///
/// # Safety
/// `error` came from one of these functions (or is null) and is not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_catalyst_free_error(error: *mut c_char) {
    if !error.is_null() {
        // SAFETY: made by CString::into_raw in `message`, freed once.
        drop(unsafe { CString::from_raw(error) });
    }
}

/// Allocates `n` wires.
///
/// # Safety
/// `device` is a live device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_catalyst_allocate(device: *mut c_void, n: u64) -> *mut c_char {
    with(device, |d| d.allocate(n))
}

/// Releases the wires.
///
/// # Safety
/// `device` is a live device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_catalyst_release(device: *mut c_void) {
    let e = with(device, |d| {
        d.release();
        Ok(())
    });
    // SAFETY: `e` is null or a message of ours.
    unsafe { backline_catalyst_free_error(e) };
}

/// Wires allocated.
///
/// # Safety
/// `device` is a live device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_catalyst_num_qubits(device: *const c_void) -> u64 {
    // SAFETY: a live device, by the caller's contract.
    unsafe { (device as *const Device).as_ref() }.map_or(0, Device::num_qubits)
}

/// Sets the shots of the run.
///
/// # Safety
/// `device` is a live device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_catalyst_set_shots(device: *mut c_void, shots: u64) {
    let e = with(device, |d| {
        d.set_shots(shots);
        Ok(())
    });
    // SAFETY: `e` is null or a message of ours.
    unsafe { backline_catalyst_free_error(e) };
}

/// Shots of the run.
///
/// # Safety
/// `device` is a live device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_catalyst_shots(device: *const c_void) -> u64 {
    // SAFETY: a live device, by the caller's contract.
    unsafe { (device as *const Device).as_ref() }.map_or(0, Device::shots)
}

/// A slice from a C pointer and length (empty for a null pointer).
///
/// # Safety
/// `ptr` points to `len` valid elements, or `len` is 0.
unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: `len` valid elements, by the caller's contract.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// Applies a named gate.
///
/// # Safety
/// `device` is a live device; each pointer points to its length of elements.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn backline_catalyst_gate(
    device: *mut c_void,
    name: *const c_char,
    name_len: usize,
    params: *const f64,
    n_params: usize,
    wires: *const i64,
    n_wires: usize,
    inverse: bool,
    n_controls: usize,
) -> *mut c_char {
    // SAFETY: the lengths the C++ caller passes with its vectors.
    let (name, params, wires) = unsafe {
        (
            slice(name as *const u8, name_len),
            slice(params, n_params),
            slice(wires, n_wires),
        )
    };
    let name = String::from_utf8_lossy(name);
    with(device, |d| {
        d.gate(&name, params, wires, inverse, n_controls)
    })
}

/// Measures a wire into `*out`.
///
/// # Safety
/// `device` is a live device; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_catalyst_measure(
    device: *mut c_void,
    wire: i64,
    has_postselect: bool,
    postselect: i32,
    out: *mut bool,
) -> *mut c_char {
    with(device, |d| {
        let v = d.measure(wire, has_postselect.then_some(postselect))?;
        if !out.is_null() {
            // SAFETY: writable, by the caller's contract.
            unsafe { *out = v };
        }
        Ok(())
    })
}

/// Samples `wires` for the run's shots into `out` (`shots × n_wires` bytes, 0 or 1).
///
/// # Safety
/// `device` is a live device; `wires` points to `n_wires` elements and `out` to `out_len`
/// writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_catalyst_sample(
    device: *mut c_void,
    wires: *const i64,
    n_wires: usize,
    out: *mut u8,
    out_len: usize,
) -> *mut c_char {
    // SAFETY: the lengths the C++ caller passes with its vectors.
    let wires = unsafe { slice(wires, n_wires) };
    with(device, |d| {
        let bits = d.sample(wires)?;
        if bits.len() != out_len || (out.is_null() && out_len > 0) {
            return Err(super::DeviceError::Usage(format!(
                "{} sample bits for a buffer of {out_len}",
                bits.len()
            )));
        }
        for (i, b) in bits.into_iter().enumerate() {
            // SAFETY: i < out_len writable bytes, checked above.
            unsafe { *out.add(i) = b as u8 };
        }
        Ok(())
    })
}

/// A Pauli channel (`BitFlip`, `PhaseFlip`, `DepolarizingChannel`) with probability `p` on a
/// wire.
///
/// # Safety
/// `device` is a live device; `name` points to `name_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_catalyst_channel(
    device: *mut c_void,
    name: *const c_char,
    name_len: usize,
    p: f64,
    wire: i64,
) -> *mut c_char {
    // SAFETY: the length the C++ caller passes with its string.
    let name = String::from_utf8_lossy(unsafe { slice(name as *const u8, name_len) });
    with(device, |d| d.channel(&name, p, wire))
}
