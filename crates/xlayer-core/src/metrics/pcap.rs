//! A streaming pcap writer: one capture per node, in the libpcap format with nanosecond
//! timestamps and link type 127 (`LINKTYPE_IEEE802_11_RADIOTAP`: a radiotap header, then the
//! 802.11 frame with its FCS), readable by Wireshark, tshark and scapy.
//!
//! The core opens no files: the caller passes a sink (any `std::io::Write`, a file for a
//! real run), which [`PcapWriter`] wraps in a buffer of [`BUFFER_BYTES`], so records go out as
//! they are produced and memory stays bounded whatever the capture's length. Writing a record
//! allocates nothing. A write error (a full disk, a folder removed) is kept, not raised: the
//! writer stops writing and [`PcapWriter::error`] reports it, so the run loop never panics over
//! I/O and the caller turns the error into its own (the binding raises `OSError`).
//!
//! Each record holds at most `snaplen` bytes (radiotap header included); its original length
//! is the full one, as libpcap writes truncated captures.

use std::io::{self, BufWriter, Write};

use crate::sim::SimTime;
use crate::wire::radiotap::{Channel, LINKTYPE_IEEE802_11_RADIOTAP};

/// Bytes of buffer between a capture and its sink.
pub const BUFFER_BYTES: usize = 32 * 1024;
/// The largest snap length (libpcap's `MAXIMUM_SNAPLEN`, pcap-int.h).
pub const MAX_SNAPLEN: u32 = 262_144;
/// The magic number of a pcap file with nanosecond timestamps (pcap-savefile(5)).
pub const MAGIC_NANOSECONDS: u32 = 0xa1b2_3c4d;

/// What a capture records besides the frames: the same for every node of a scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaptureConfig {
    /// Bytes kept of each record (radiotap header included).
    pub snaplen: u32,
    pub channel: Channel,
    pub short_preamble: bool,
    /// The scenario's transmit power (dBm); a node's tuning offset adds to it.
    pub tx_power_dbm: f64,
    /// Data frames are QoS Data with the level as TID (an EDCA MAC of more than one level).
    pub qos: bool,
}

/// A sink a capture streams into.
pub type Sink = Box<dyn Write + Send>;

/// One node's capture.
pub struct PcapWriter {
    out: BufWriter<Sink>,
    pub config: CaptureConfig,
    error: Option<io::Error>,
    /// Records and bytes (headers included) handed to the sink.
    pub records: u64,
    pub bytes: u64,
}

impl std::fmt::Debug for PcapWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapWriter")
            .field("config", &self.config)
            .field("records", &self.records)
            .field("bytes", &self.bytes)
            .field("error", &self.error)
            .finish()
    }
}

impl PcapWriter {
    /// A capture into `sink`, its 24-byte file header written first.
    pub fn new(sink: Sink, config: CaptureConfig) -> PcapWriter {
        let mut w = PcapWriter {
            out: BufWriter::with_capacity(BUFFER_BYTES, sink),
            config,
            error: None,
            records: 0,
            bytes: 0,
        };
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&MAGIC_NANOSECONDS.to_le_bytes());
        header[4..6].copy_from_slice(&2u16.to_le_bytes()); // version 2.4
        header[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone 0, sigfigs 0 (bytes 8..16)
        header[16..20].copy_from_slice(&config.snaplen.to_le_bytes());
        header[20..24].copy_from_slice(&LINKTYPE_IEEE802_11_RADIOTAP.to_le_bytes());
        w.write(&header);
        w
    }

    fn write(&mut self, bytes: &[u8]) {
        if self.error.is_none() {
            match self.out.write_all(bytes) {
                Ok(()) => self.bytes += bytes.len() as u64,
                Err(e) => self.error = Some(e),
            }
        }
    }

    /// Appends a record at `t`: the radiotap header, then the frame, cut at the snap length.
    pub fn record(&mut self, t: SimTime, radiotap: &[u8], frame: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let ns = t.ns();
        let orig = radiotap.len() + frame.len();
        let incl = orig.min(self.config.snaplen as usize);
        let mut header = [0u8; 16];
        header[0..4].copy_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        header[4..8].copy_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        header[8..12].copy_from_slice(&(incl as u32).to_le_bytes());
        header[12..16].copy_from_slice(&(orig as u32).to_le_bytes());
        self.write(&header);
        let rt = radiotap.len().min(incl);
        self.write(&radiotap[..rt]);
        self.write(&frame[..incl - rt]);
        self.records += 1;
    }

    /// The first write error, if any (the capture has stopped there).
    pub fn error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// Writes out what is buffered; the first error of this capture, if any.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.error.is_none() {
            if let Err(e) = self.out.flush() {
                self.error = Some(e);
            }
        }
        match &self.error {
            None => Ok(()),
            Some(e) => Err(match e.raw_os_error() {
                Some(code) => io::Error::from_raw_os_error(code),
                None => io::Error::new(e.kind(), e.to_string()),
            }),
        }
    }
}

/// A capture that could not be written: the node and the sink's error.
#[derive(Debug)]
pub struct CaptureError {
    pub node: u32,
    pub error: io::Error,
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot write the pcap capture of node {}: {}",
            self.node, self.error
        )
    }
}

impl std::error::Error for CaptureError {}

/// An in-memory sink whose bytes stay readable through its clones: for tests and for callers
/// that want a short capture in memory.
#[derive(Debug, Clone, Default)]
pub struct SharedBuffer(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl SharedBuffer {
    /// A copy of the bytes written so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("capture buffer poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::radiotap::CHANNEL_CCK;

    fn config(snaplen: u32) -> CaptureConfig {
        CaptureConfig {
            snaplen,
            channel: Channel::new(2412.0, CHANNEL_CCK),
            short_preamble: false,
            tx_power_dbm: 16.0,
            qos: false,
        }
    }

    #[test]
    fn header_is_24_bytes_and_records_carry_length_and_nanoseconds() {
        let buf = SharedBuffer::default();
        let mut p = PcapWriter::new(Box::new(buf.clone()), config(65535));
        p.record(SimTime(1_500_000_000), &[9, 9], &[1, 2, 3]);
        p.flush().unwrap();
        let b = buf.bytes();
        assert_eq!(b.len(), 24 + 16 + 5);
        assert_eq!(&b[0..4], &MAGIC_NANOSECONDS.to_le_bytes());
        assert_eq!(&b[16..20], &65535u32.to_le_bytes());
        assert_eq!(&b[20..24], &127u32.to_le_bytes());
        assert_eq!(&b[24..28], &1u32.to_le_bytes());
        assert_eq!(&b[28..32], &500_000_000u32.to_le_bytes());
        assert_eq!(&b[40..], &[9, 9, 1, 2, 3]);
        assert_eq!((p.records, p.bytes), (1, 45));
    }

    #[test]
    fn records_are_cut_at_the_snap_length_keeping_their_original_length() {
        let buf = SharedBuffer::default();
        let mut p = PcapWriter::new(Box::new(buf.clone()), config(4));
        p.record(SimTime(0), &[7, 7, 7], &[1, 2, 3]);
        p.record(SimTime(0), &[7, 7, 7, 7, 7], &[1]);
        p.flush().unwrap();
        let b = buf.bytes();
        assert_eq!(&b[32..36], &4u32.to_le_bytes(), "included");
        assert_eq!(&b[36..40], &6u32.to_le_bytes(), "original");
        assert_eq!(&b[40..44], &[7, 7, 7, 1]);
        assert_eq!(&b[44 + 16..44 + 20], &[7, 7, 7, 7]);
        assert_eq!(b.len(), 44 + 20);
    }

    /// A sink that takes `room` bytes, then fails as a full disk does.
    struct Full {
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failing_sink_stops_the_capture_and_reports_its_error_without_panicking() {
        let mut p = PcapWriter::new(Box::new(Full { room: 100 }), config(65535));
        let frame = vec![0u8; 1000];
        for i in 0..200 {
            p.record(SimTime(i), &[], &frame);
        }
        assert!(
            p.error().is_some(),
            "the buffer overflowed into the full sink"
        );
        let records = p.records;
        p.record(SimTime(1000), &[], &frame);
        assert_eq!(p.records, records, "nothing more is written");
        let e = p.flush().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(p.flush().unwrap_err().kind(), io::ErrorKind::StorageFull);
    }
}
