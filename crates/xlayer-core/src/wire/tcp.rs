//! A TCP segment's header as the simulator carries it (RFC 793 flags, RFC 2018 SACK blocks,
//! the MSS option of a SYN); its bytes on the wire are written by `super::packet`. The state
//! machines that make and read it are in `crate::transport::tcp`.

/// TCP header flags (RFC 793).
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const ACK: u8 = 0x10;
/// Not a header bit: marks a SYN carrying the SACK-permitted option (RFC 2018).
pub const SACK_PERMITTED: u8 = 0x80;

/// SACK blocks carried per ACK: three, the most that fit beside the timestamp option
/// (RFC 2018 §3); xlayer carries no timestamps, but Linux and ns-2 also default to three.
pub const MAX_SACK_BLOCKS: usize = 3;

/// Bytes of a TCP header without options (RFC 793).
pub const TCP_HEADER_BYTES: u32 = 20;

/// A TCP segment's header (sequence numbers are relative, 64-bit, never wrap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpHeader {
    pub seq: u64,
    pub ack: u64,
    pub flags: u8,
    /// Advertised window in bytes (after scaling).
    pub wnd: u32,
    /// Payload bytes.
    pub len: u32,
    /// SACK blocks `[left, right)` (RFC 2018), the first `nsack` are valid.
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    pub nsack: u8,
    /// Checksum of the payload bytes (`crate::transport::tcp::content_checksum`), for checking the byte stream.
    pub checksum: u64,
    /// The MSS option of a SYN.
    pub mss: u32,
}

impl TcpHeader {
    /// Bytes of TCP options this header carries on the wire, padded to 32 bits: MSS (4) and
    /// SACK-permitted (2 + 2 NOPs) on a SYN, SACK blocks (2 NOPs + 2 + 8 per block) on an ACK.
    pub fn option_bytes(&self) -> u32 {
        if self.flags & SYN != 0 {
            4 + if self.flags & SACK_PERMITTED != 0 {
                4
            } else {
                0
            }
        } else if self.nsack > 0 {
            4 + 8 * self.nsack as u32
        } else {
            0
        }
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}
