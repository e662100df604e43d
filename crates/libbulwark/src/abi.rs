//! The `extern "C"` functions: the only place in Bulwark with `unsafe`.
//!
//! Every function checks its pointers for NULL, catches panics before they reach C, and hands
//! out strings that only [`bulwark_string_free`] takes back. `include/bulwark.h` declares the
//! same signatures; `tests/header.rs` keeps the two in step.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use crate::{Handle, internal, invalid};

/// Hands a Rust string to C. JSON never holds a NUL byte (serde escapes it), so the fallback
/// exists only so that this cannot fail.
fn to_c(s: String) -> *mut c_char {
    match CString::new(s) {
        Ok(c) => c.into_raw(),
        Err(_) => {
            CString::from(c"{\"decision\":\"block\",\"reason_code\":\"INVALID_INPUT\"}").into_raw()
        }
    }
}

/// Creates an engine for `policy_yaml` (NULL for the built-in default).
///
/// On failure returns NULL and, when `error_out` is not NULL, stores a message there that the
/// caller frees with [`bulwark_string_free`]; on success stores NULL there.
///
/// # Safety
/// `policy_yaml` is NULL or a NUL-terminated string; `error_out` is NULL or valid to write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bulwark_engine_new(
    policy_yaml: *const c_char,
    error_out: *mut *mut c_char,
) -> *mut Handle {
    let result = catch_unwind(|| {
        let text = if policy_yaml.is_null() {
            None
        } else {
            // SAFETY: the caller passes a NUL-terminated string when not NULL.
            let bytes = unsafe { CStr::from_ptr(policy_yaml) }.to_bytes();
            match std::str::from_utf8(bytes) {
                Ok(t) => Some(t),
                Err(e) => return Err(format!("policy_yaml is not UTF-8: {e}")),
            }
        };
        Handle::new(text)
    })
    .unwrap_or_else(|_| Err("creating the engine failed (an internal error)".into()));
    let (engine, error) = match result {
        Ok(h) => (Box::into_raw(Box::new(h)), ptr::null_mut()),
        Err(msg) => (ptr::null_mut(), to_c(msg)),
    };
    if error_out.is_null() {
        if !error.is_null() {
            // SAFETY: `error` came from `to_c` just above and nobody else holds it.
            drop(unsafe { CString::from_raw(error) });
        }
    } else {
        // SAFETY: the caller passes a writable `char **` when not NULL.
        unsafe { *error_out = error };
    }
    engine
}

/// Decides one call: a `bulwark check` line in, the decision JSON out.
///
/// Never returns NULL. The caller frees the result with [`bulwark_string_free`].
///
/// # Safety
/// `engine` is NULL or came from [`bulwark_engine_new`] and is not yet freed; `call_json` is
/// NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bulwark_evaluate(
    engine: *mut Handle,
    call_json: *const c_char,
) -> *mut c_char {
    if engine.is_null() {
        return to_c(invalid("engine is NULL", ""));
    }
    // SAFETY: the caller passes a live engine; `Handle` is `Sync`, so shared use from many
    // threads is sound.
    let handle = unsafe { &*engine };
    if call_json.is_null() {
        return to_c(handle.invalid("call_json is NULL"));
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(call_json) }.to_bytes();
    // The evaluator recovers its locks after a panic, so continuing to use it is sound.
    let out = catch_unwind(AssertUnwindSafe(|| handle.evaluate(bytes))).unwrap_or_else(|_| {
        let version =
            catch_unwind(AssertUnwindSafe(|| handle.gate.policy_version())).unwrap_or_default();
        internal(&version)
    });
    to_c(out)
}

/// Frees a string this library returned. NULL is ignored.
///
/// # Safety
/// `s` is NULL or came from this library and is not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bulwark_string_free(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: `s` came from `CString::into_raw` in `to_c`.
        drop(unsafe { CString::from_raw(s) });
    }
}

/// Frees an engine. NULL is ignored. No call may be using it.
///
/// # Safety
/// `engine` is NULL or came from [`bulwark_engine_new`] and is not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bulwark_engine_free(engine: *mut Handle) {
    if !engine.is_null() {
        // SAFETY: `engine` came from `Box::into_raw` in `bulwark_engine_new`.
        drop(unsafe { Box::from_raw(engine) });
    }
}
