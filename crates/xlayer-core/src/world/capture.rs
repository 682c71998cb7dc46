//! Captures: each captured node's frames, sent and received, streamed into the sink the
//! caller attached ([`PcapWriter`]), with a radiotap header saying what the radio knew — the
//! rate and channel always, the node's transmit power for its own frames, and for a received
//! frame its power, the noise and its lowest SINR (`crate::phy::RxReport`).
//!
//! A node's capture records a frame it transmits when it starts sending it (even if nobody
//! hears it), and a frame it receives when the frame ends and the PHY decoded it (a frame lost
//! to noise, interference, a lossy link or a switched-off receiver is not recorded).

use super::World;
use crate::mac::Frame;
use crate::metrics::pcap::{CaptureError, PcapWriter};
use crate::net::Packet;
use crate::phy::propagation::mw_to_dbm;
use crate::phy::RxReport;
use crate::sim::SimTime;
use crate::wire::radiotap::{Radiotap, RxMeasure};

/// Which side of the air a recorded frame is on.
#[derive(Debug, Clone, Copy)]
pub(super) enum Side {
    /// The node's own transmission, at its transmit power offset (dB, tuning layer).
    Tx { power_offset_db: f64 },
    /// A frame the node decoded, with what its PHY measured.
    Rx(RxReport),
}

/// Appends `frame` (carrying `packet`) to capture `p` at `now`, building the radiotap header
/// and the frame's bytes in `buf` and the packet's in `body` (both reused: nothing allocated
/// once they have grown to the largest frame).
pub(super) fn record_frame(
    p: &mut PcapWriter,
    now: SimTime,
    frame: &Frame,
    packet: Option<&Packet>,
    side: Side,
    buf: &mut Vec<u8>,
    body: &mut Vec<u8>,
) {
    body.clear();
    if let Some(pk) = packet {
        pk.emit(body);
    }
    buf.clear();
    let c = p.config;
    let (rx, tx_power_dbm) = match side {
        Side::Tx { power_offset_db } => (None, c.tx_power_dbm + power_offset_db),
        Side::Rx(r) => (
            Some(RxMeasure {
                signal_dbm: mw_to_dbm(r.power_mw),
                noise_dbm: mw_to_dbm(r.noise_mw),
                sinr_db: 10.0 * r.min_sinr.log10(),
            }),
            c.tx_power_dbm,
        ),
    };
    Radiotap {
        rate_mbps: frame.rate_mbps,
        channel: c.channel,
        short_preamble: c.short_preamble,
        rx,
        tx_power_dbm,
    }
    .emit(buf);
    let header = buf.len();
    frame.emit(body, c.qos, buf);
    let (radiotap, bytes) = buf.split_at(header);
    p.record(now, radiotap, bytes);
}

impl World {
    /// Streams `node`'s frames into `writer` from now on.
    pub fn attach_capture(&mut self, node: u32, writer: PcapWriter) {
        let n = &mut self.nodes[node as usize];
        n.pcap = Some(writer);
        // The capture reports each frame's lowest SINR.
        n.phy.set_min_sinr_unread(false);
    }

    /// True once a capture's sink has failed (the capture stopped there).
    pub fn capture_failed(&self) -> bool {
        self.nodes
            .iter()
            .any(|n| n.pcap.as_ref().is_some_and(|p| p.error().is_some()))
    }

    /// Writes out what every capture has buffered; the first capture that failed, by node.
    pub fn flush_captures(&mut self) -> Result<(), CaptureError> {
        let mut first = None;
        for n in &mut self.nodes {
            if let Some(Err(error)) = n.pcap.as_mut().map(PcapWriter::flush) {
                first.get_or_insert(CaptureError { node: n.id, error });
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Flushes and closes every capture (their sinks are dropped: files are closed); the first
    /// capture that failed, by node. Nothing is captured afterwards.
    pub fn close_captures(&mut self) -> Result<(), CaptureError> {
        let flushed = self.flush_captures();
        for n in &mut self.nodes {
            n.pcap = None;
        }
        flushed
    }

    /// Bytes written into `node`'s capture so far (file header and records), if it has one.
    pub fn capture_bytes(&self, node: u32) -> Option<u64> {
        self.nodes
            .get(node as usize)?
            .pcap
            .as_ref()
            .map(|p| p.bytes)
    }
}
