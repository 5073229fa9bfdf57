//! The machine a trace file was recorded on, for its header (format 1.5): the boot id, which says
//! whether two files' `CLOCK_MONOTONIC` times compare, and the host name. Both are read once per
//! process, the first time a header is made (at a trace's start or save, never on the recording
//! path nor in the crash handler, which writes a header made at start).

use std::sync::OnceLock;

use phosphor_format::file::{parse_boot_id, BootId};

/// The boot id and the host name, each `None` where the system does not say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Host {
    pub(crate) boot_id: Option<BootId>,
    pub(crate) host_name: Option<String>,
}

/// This machine, read on first use.
pub(crate) fn this_host() -> &'static Host {
    static HOST: OnceLock<Host> = OnceLock::new();
    HOST.get_or_init(|| Host { boot_id: read_boot_id(), host_name: read_host_name() })
}

/// Linux's boot id: a random UUID the kernel draws at each boot.
fn read_boot_id() -> Option<BootId> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    parse_boot_id(&std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?)
}

/// The host name (`gethostname`), if it is UTF-8 and not empty.
fn read_host_name() -> Option<String> {
    #[cfg(unix)]
    {
        // POSIX's HOST_NAME_MAX is at most 255; one more byte for the terminating NUL.
        let mut buf = [0u8; 256];
        // SAFETY: [1] `buf` is valid for writes of `buf.len()` bytes for the call's duration;
        // [2] gethostname writes at most that many and keeps no pointer to it.
        let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        if r != 0 {
            return None;
        }
        // A name that fills the buffer may come without its NUL (it was cut): taken as it is.
        let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        let name = std::str::from_utf8(&buf[..len]).ok()?;
        (!name.is_empty()).then(|| name.to_owned())
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn the_boot_id_is_the_kernels() {
        let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
        let id = this_host().boot_id.expect("Linux has a boot id");
        assert_eq!(phosphor_format::file::format_boot_id(&id), text.trim());
    }

    #[test]
    #[cfg(unix)]
    fn the_host_name_is_unames() {
        // SAFETY: [1] `u` is a valid, writable `utsname`; [2] uname keeps no pointer to it.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        assert_eq!(unsafe { libc::uname(&mut u) }, 0);
        // SAFETY: [1] uname NUL-terminates `nodename` within the array.
        let node = unsafe { std::ffi::CStr::from_ptr(u.nodename.as_ptr()) };
        assert_eq!(this_host().host_name.as_deref(), Some(node.to_str().unwrap()));
    }
}
