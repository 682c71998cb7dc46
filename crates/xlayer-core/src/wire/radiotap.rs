//! The radiotap header (pcap link type 127, `LINKTYPE_IEEE802_11_RADIOTAP`) that precedes each
//! captured 802.11 frame: what the radio knew about the frame.
//!
//! Fields (radiotap.org, "defined fields"; each aligned to its natural size from the header's
//! start, little-endian):
//!
//! | bit | field | written |
//! |---|---|---|
//! | 1 | Flags (u8) | always: `0x10` FCS at end; `0x02` short preamble when the radio uses one |
//! | 2 | Rate (u8, 500 kbit/s units) | always: the frame's PHY rate |
//! | 3 | Channel (u16 MHz, u16 flags) | always: the scenario's frequency; band and PHY flags |
//! | 5 | dBm antenna signal (s8) | received frames: the frame's received power |
//! | 6 | dBm antenna noise (s8) | received frames: thermal noise plus injected noise |
//! | 10 | dBm TX power (s8) | the node's own transmissions: its transmit power |
//! | 30 | Vendor Namespace | received frames: the SINR, below |
//!
//! Radiotap has no SINR field (signal and noise give the SNR, not the interference), so the
//! frame's SINR goes into a vendor namespace (radiotap.org, "Vendor Namespace"): OUI
//! [`VENDOR_OUI`] `02:58:4c`, sub-namespace 0, `skip_length` 2, and in that namespace's
//! presence word bit 0, the frame's lowest SINR over its duration as an `s16` in hundredths of
//! a dB (little-endian, saturating at ±327.67 dB). The OUI is a locally administered value (the
//! second bit of its first octet set, in IEEE 802c's "administratively assigned" quadrant, with
//! `X L` as its other two octets), a range the IEEE never assigns, so it cannot be mistaken for
//! a vendor's namespace; decoders that do not know it skip the two bytes, as the radiotap
//! specification requires.
//!
//! A received frame's header is 28 bytes, a transmitted frame's 15 ([`RX_HEADER_BYTES`],
//! [`TX_HEADER_BYTES`]).

/// pcap link type: IEEE 802.11 frames preceded by a radiotap header.
pub const LINKTYPE_IEEE802_11_RADIOTAP: u32 = 127;

/// The vendor namespace of xlayer's radiotap fields (see the module doc).
pub const VENDOR_OUI: [u8; 3] = [0x02, 0x58, 0x4c];
/// The sub-namespace of the SINR field in [`VENDOR_OUI`].
pub const VENDOR_SUB_NAMESPACE: u8 = 0;

/// Flags field bits (radiotap.org, "Flags").
pub const FLAG_SHORT_PREAMBLE: u8 = 0x02;
pub const FLAG_FCS_AT_END: u8 = 0x10;

/// Channel flags (radiotap.org, "Channel").
pub const CHANNEL_CCK: u16 = 0x0020;
pub const CHANNEL_OFDM: u16 = 0x0040;
pub const CHANNEL_2GHZ: u16 = 0x0080;
pub const CHANNEL_5GHZ: u16 = 0x0100;

const PRESENT_FLAGS: u32 = 1 << 1;
const PRESENT_RATE: u32 = 1 << 2;
const PRESENT_CHANNEL: u32 = 1 << 3;
const PRESENT_DBM_SIGNAL: u32 = 1 << 5;
const PRESENT_DBM_NOISE: u32 = 1 << 6;
const PRESENT_DBM_TX_POWER: u32 = 1 << 10;
const PRESENT_VENDOR_NAMESPACE: u32 = 1 << 30;
const PRESENT_EXT: u32 = 1 << 31;

/// Header length of a received frame: 12 (version, pad, length, two presence words) + flags 1
/// + rate 1 + channel 4 + signal 1 + noise 1 + vendor namespace 6 + SINR 2.
pub const RX_HEADER_BYTES: usize = 28;
/// Header length of a transmitted frame: 8 + flags 1 + rate 1 + channel 4 + TX power 1.
pub const TX_HEADER_BYTES: usize = 15;

/// The channel a capture was made on: centre frequency and radiotap channel flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Channel {
    pub freq_mhz: u16,
    pub flags: u16,
}

impl Channel {
    /// The channel at `freq_mhz` (rounded to a MHz, capped at 65535) with the PHY flag
    /// `phy_flags` ([`CHANNEL_CCK`] or [`CHANNEL_OFDM`]) and the band flag its frequency falls
    /// in: [`CHANNEL_2GHZ`] for 2400-2500 MHz (802.11b/g's ISM band), [`CHANNEL_5GHZ`] for
    /// 4900-5900 MHz (802.11a/j's channels, 802.11-2016 Annex E), none elsewhere (ns-2's
    /// 914 MHz WaveLAN radio).
    pub fn new(freq_mhz: f64, phy_flags: u16) -> Channel {
        let band = if (2400.0..=2500.0).contains(&freq_mhz) {
            CHANNEL_2GHZ
        } else if (4900.0..=5900.0).contains(&freq_mhz) {
            CHANNEL_5GHZ
        } else {
            0
        };
        Channel {
            freq_mhz: freq_mhz.round().clamp(0.0, u16::MAX as f64) as u16,
            flags: band | phy_flags,
        }
    }
}

/// What the receiver measured over a frame it decoded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RxMeasure {
    pub signal_dbm: f64,
    pub noise_dbm: f64,
    /// The frame's lowest SINR over its duration, dB.
    pub sinr_db: f64,
}

/// The radio side of one captured frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Radiotap {
    pub rate_mbps: f64,
    pub channel: Channel,
    pub short_preamble: bool,
    /// A received frame's measurements, or `None` for the node's own transmission.
    pub rx: Option<RxMeasure>,
    /// The transmit power of the node's own transmission (dBm); ignored for received frames.
    pub tx_power_dbm: f64,
}

fn dbm_s8(v: f64) -> u8 {
    (v.round().clamp(i8::MIN as f64, i8::MAX as f64) as i8) as u8
}

impl Radiotap {
    /// Appends the radiotap header (its length is [`RX_HEADER_BYTES`] for a received frame,
    /// [`TX_HEADER_BYTES`] for a transmitted one).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let flags = FLAG_FCS_AT_END
            | if self.short_preamble {
                FLAG_SHORT_PREAMBLE
            } else {
                0
            };
        let rate = (self.rate_mbps * 2.0).round().clamp(0.0, 255.0) as u8;
        let mut present = PRESENT_FLAGS | PRESENT_RATE | PRESENT_CHANNEL;
        let len = match self.rx {
            Some(_) => {
                present |=
                    PRESENT_DBM_SIGNAL | PRESENT_DBM_NOISE | PRESENT_VENDOR_NAMESPACE | PRESENT_EXT;
                RX_HEADER_BYTES
            }
            None => {
                present |= PRESENT_DBM_TX_POWER;
                TX_HEADER_BYTES
            }
        };
        out.extend_from_slice(&[0, 0]); // version 0, pad
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&present.to_le_bytes());
        if self.rx.is_some() {
            out.extend_from_slice(&1u32.to_le_bytes()); // vendor namespace: bit 0, the SINR
        }
        out.push(flags);
        out.push(rate);
        out.extend_from_slice(&self.channel.freq_mhz.to_le_bytes());
        out.extend_from_slice(&self.channel.flags.to_le_bytes());
        match self.rx {
            Some(m) => {
                out.push(dbm_s8(m.signal_dbm));
                out.push(dbm_s8(m.noise_dbm));
                out.extend_from_slice(&VENDOR_OUI);
                out.push(VENDOR_SUB_NAMESPACE);
                out.extend_from_slice(&2u16.to_le_bytes()); // skip_length
                let cdb = (m.sinr_db * 100.0)
                    .round()
                    .clamp(i16::MIN as f64, i16::MAX as f64) as i16;
                out.extend_from_slice(&cdb.to_le_bytes());
            }
            None => out.push(dbm_s8(self.tx_power_dbm)),
        }
        debug_assert_eq!(out.len() - start, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx() -> Radiotap {
        Radiotap {
            rate_mbps: 5.5,
            channel: Channel::new(2412.0, CHANNEL_CCK),
            short_preamble: false,
            rx: Some(RxMeasure {
                signal_dbm: -64.4,
                noise_dbm: -93.97,
                sinr_db: 29.567,
            }),
            tx_power_dbm: 16.0206,
        }
    }

    #[test]
    fn received_frame_header_carries_signal_noise_and_the_sinr_in_the_vendor_namespace() {
        let mut out = vec![];
        rx().emit(&mut out);
        assert_eq!(out.len(), RX_HEADER_BYTES);
        assert_eq!(u16::from_le_bytes([out[2], out[3]]) as usize, out.len());
        let present = u32::from_le_bytes(out[4..8].try_into().unwrap());
        assert_eq!(
            present,
            (1 << 1) | (1 << 2) | (1 << 3) | (1 << 5) | (1 << 6) | (1 << 30) | (1 << 31)
        );
        assert_eq!(u32::from_le_bytes(out[8..12].try_into().unwrap()), 1);
        assert_eq!(out[12], FLAG_FCS_AT_END);
        assert_eq!(out[13], 11, "5.5 Mbit/s in 500 kbit/s units");
        assert_eq!(u16::from_le_bytes([out[14], out[15]]), 2412);
        assert_eq!(
            u16::from_le_bytes([out[16], out[17]]),
            CHANNEL_2GHZ | CHANNEL_CCK
        );
        assert_eq!(out[18] as i8, -64);
        assert_eq!(out[19] as i8, -94);
        assert_eq!(&out[20..23], &VENDOR_OUI);
        assert_eq!(out[23], VENDOR_SUB_NAMESPACE);
        assert_eq!(u16::from_le_bytes([out[24], out[25]]), 2);
        assert_eq!(i16::from_le_bytes([out[26], out[27]]), 2957);
    }

    #[test]
    fn transmitted_frame_header_carries_the_tx_power_and_no_reception_fields() {
        let mut out = vec![];
        Radiotap {
            rx: None,
            short_preamble: true,
            ..rx()
        }
        .emit(&mut out);
        assert_eq!(out.len(), TX_HEADER_BYTES);
        let present = u32::from_le_bytes(out[4..8].try_into().unwrap());
        assert_eq!(present, (1 << 1) | (1 << 2) | (1 << 3) | (1 << 10));
        assert_eq!(out[8], FLAG_FCS_AT_END | FLAG_SHORT_PREAMBLE);
        assert_eq!(out[14] as i8, 16);
    }

    #[test]
    fn channel_flags_follow_the_band_of_the_frequency() {
        assert_eq!(
            Channel::new(5180.0, CHANNEL_OFDM).flags,
            CHANNEL_5GHZ | CHANNEL_OFDM
        );
        assert_eq!(Channel::new(914.0, CHANNEL_CCK).flags, CHANNEL_CCK);
        assert_eq!(Channel::new(1e9, CHANNEL_CCK).freq_mhz, u16::MAX);
    }

    #[test]
    fn out_of_range_values_saturate() {
        let mut out = vec![];
        Radiotap {
            rx: Some(RxMeasure {
                signal_dbm: -300.0,
                noise_dbm: 200.0,
                sinr_db: 1e6,
            }),
            ..rx()
        }
        .emit(&mut out);
        assert_eq!(out[18] as i8, -128);
        assert_eq!(out[19] as i8, 127);
        assert_eq!(i16::from_le_bytes([out[26], out[27]]), i16::MAX);
    }
}
