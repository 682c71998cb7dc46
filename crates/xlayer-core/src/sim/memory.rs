//! Memory placement of the large per-node arrays, and prefetching from them.
//!
//! At 10,000 nodes the node array is about 14 MB, some 3,400 pages of 4 KiB: an event's first
//! touch of its node's state misses the TLB as well as the cache. Transparent huge pages
//! (2 MiB) cover it with 7 entries. Linux gives them to memory a process asks for with
//! `madvise(MADV_HUGEPAGE)` when `/sys/kernel/mm/transparent_hugepage/enabled` is `madvise`
//! (the common default) or `always`; with `never`, or elsewhere, nothing changes. Placement
//! only: the contents, and so every result, are the same either way.

/// Below this size an array gets no advice: it spans too few pages to matter.
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// Asks the kernel to back `v`'s buffer (its whole capacity) with huge pages. Call it before
/// the buffer is first written, so that its pages are huge from their first fault.
pub fn advise_huge_pages<T>(v: &Vec<T>) {
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    advise(v.as_ptr() as usize, bytes);
}

#[cfg(target_os = "linux")]
fn advise(start: usize, bytes: usize) {
    const PAGE: usize = 4096;
    let first = start.next_multiple_of(PAGE);
    let end = (start + bytes) & !(PAGE - 1);
    if end <= first {
        return;
    }
    // SAFETY: madvise only advises on the pages of [first, end), which lie inside the
    // caller's allocation; MADV_HUGEPAGE changes neither their contents nor their mapping's
    // validity. A failure (an old kernel, THP compiled out) leaves the pages as they were, so
    // its result is ignored.
    unsafe {
        libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_start: usize, _bytes: usize) {}

/// Asks the CPU to bring every cache line that `[p + from, p + to)` touches into its caches (a
/// hint: no fault, no effect on any value; nothing on other architectures).
#[inline(always)]
pub fn prefetch_bytes<T>(p: &T, from: usize, to: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let base = (p as *const T as *const u8).wrapping_add(from);
        // From the start of the line `from` is on: an unaligned span touches one line more
        // than its length in lines.
        let first = base.wrapping_sub(base as usize & 63);
        let lines = (to.saturating_sub(from) + (base as usize & 63)).div_ceil(64);
        for i in 0..lines {
            // SAFETY: a prefetch never faults nor reads into the program; the address is only
            // a hint (wrapping_add keeps the pointer arithmetic defined).
            unsafe {
                core::arch::x86_64::_mm_prefetch(
                    first.wrapping_add(64 * i) as *const i8,
                    core::arch::x86_64::_MM_HINT_T0,
                );
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, from, to);
}
