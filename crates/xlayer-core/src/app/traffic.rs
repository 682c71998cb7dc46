//! Request-driven applications over one persistent TCP connection (the flavor-aware link
//! layer's Table I, seed document 003 §V): web browsing and e-mail, downloads from a server to
//! its client. At each request the server writes the request's objects into the connection
//! (`TcpSender::write`); an object is done when the client's application has every byte of it,
//! a request (a page) when its last object is.
//!
//! - HTTP 1.1: pages requested at exponential intervals (mean 60 s), a page being its HTML
//!   (1 kB) then 5 images of sizes uniform in 500 B … 2 kB, over one persistent connection.
//! - E-mail: a 2 kB message every 360 s on average (exponential intervals: the document gives
//!   the mean only; OPNET's e-mail model, which the document used, draws exponential
//!   inter-arrivals by default).
//!
//! Simplification: the request itself (client to server) is not simulated: the server starts
//! writing at the request time, so response times miss the request's one-way trip.

use std::collections::VecDeque;

use rand::Rng;
use rand_distr::{Distribution, Exp1};

use crate::sim::rng::Stream;
use crate::sim::SimTime;

/// Random stream of each flow's requests (one per flow, by its id).
pub const STREAM: &str = "app.requests";

/// What a request-driven application asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AppModel {
    Http {
        page_interval_s: f64,
        html_bytes: u32,
        images: u32,
        image_min_bytes: u32,
        image_max_bytes: u32,
    },
    Email {
        bytes: u32,
        interval_s: f64,
    },
}

impl AppModel {
    pub fn name(&self) -> &'static str {
        match self {
            AppModel::Http { .. } => "http",
            AppModel::Email { .. } => "email",
        }
    }
}

/// Counts of requests (pages, e-mails) and objects, and their response times.
#[derive(Debug, Default, Clone, Copy)]
pub struct AppStats {
    pub requests: u64,
    pub requests_done: u64,
    pub request_time_s: f64,
    pub objects: u64,
    pub objects_done: u64,
    pub object_time_s: f64,
}

/// One flow's application: its model, its stream and the objects in transit.
#[derive(Debug, Clone)]
pub struct AppTraffic {
    pub model: AppModel,
    rng: Stream,
    /// Objects written and not yet delivered: (end offset in the stream, request time, last
    /// object of its request), in stream order.
    pending: VecDeque<(u64, SimTime, bool)>,
    pub stats: AppStats,
}

impl AppTraffic {
    pub fn new(model: AppModel, rng: Stream) -> AppTraffic {
        AppTraffic {
            model,
            rng,
            pending: VecDeque::new(),
            stats: AppStats::default(),
        }
    }

    /// Time to the next request (exponential).
    pub fn next_delay(&mut self) -> SimTime {
        let mean = match self.model {
            AppModel::Http {
                page_interval_s, ..
            } => page_interval_s,
            AppModel::Email { interval_s, .. } => interval_s,
        };
        let e: f64 = Exp1.sample(&mut self.rng);
        SimTime::from_secs_f64(e * mean).max(SimTime(1))
    }

    /// A request at `now` whose objects follow the `written` bytes the server already wrote:
    /// their sizes go to `sizes`, in order.
    pub fn request(&mut self, now: SimTime, written: u64, sizes: &mut Vec<u64>) {
        sizes.clear();
        match self.model {
            AppModel::Http {
                html_bytes,
                images,
                image_min_bytes,
                image_max_bytes,
                ..
            } => {
                sizes.push(html_bytes as u64);
                for _ in 0..images {
                    sizes.push(self.rng.gen_range(image_min_bytes..=image_max_bytes) as u64);
                }
            }
            AppModel::Email { bytes, .. } => sizes.push(bytes as u64),
        }
        let mut end = written;
        for (i, &s) in sizes.iter().enumerate() {
            end += s;
            self.pending.push_back((end, now, i + 1 == sizes.len()));
        }
        self.stats.requests += 1;
        self.stats.objects += sizes.len() as u64;
    }

    /// The client's application has `delivered` bytes of the stream at `now`.
    pub fn delivered(&mut self, now: SimTime, delivered: u64) {
        while let Some(&(end, asked, last)) = self.pending.front() {
            if end > delivered {
                break;
            }
            self.pending.pop_front();
            let t = (now - asked).as_secs_f64();
            self.stats.objects_done += 1;
            self.stats.object_time_s += t;
            if last {
                self.stats.requests_done += 1;
                self.stats.request_time_s += t;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_its_html_then_its_images_and_completes_with_its_last_byte() {
        let model = AppModel::Http {
            page_interval_s: 60.0,
            html_bytes: 1000,
            images: 5,
            image_min_bytes: 500,
            image_max_bytes: 2000,
        };
        let mut app = AppTraffic::new(model, crate::sim::rng::stream(1, 0, STREAM));
        let mut sizes = Vec::new();
        let t0 = SimTime::from_secs_f64(1.0);
        app.request(t0, 0, &mut sizes);
        assert_eq!(sizes.len(), 6);
        assert_eq!(sizes[0], 1000);
        assert!(sizes[1..].iter().all(|&s| (500..=2000).contains(&s)));
        let total: u64 = sizes.iter().sum();
        let t1 = SimTime::from_secs_f64(1.5);
        app.delivered(t1, 1000);
        assert_eq!((app.stats.objects_done, app.stats.requests_done), (1, 0));
        app.delivered(SimTime::from_secs_f64(2.0), total - 1);
        assert_eq!(app.stats.requests_done, 0);
        app.delivered(SimTime::from_secs_f64(2.0), total);
        assert_eq!((app.stats.objects_done, app.stats.requests_done), (6, 1));
        assert!((app.stats.request_time_s - 1.0).abs() < 1e-9);
        // Intervals are exponential of the mean asked.
        let n = 20_000;
        let mean = (0..n).map(|_| app.next_delay().as_secs_f64()).sum::<f64>() / n as f64;
        assert!((mean / 60.0 - 1.0).abs() < 0.03, "{mean}");
    }
}
