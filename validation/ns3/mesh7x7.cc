// mesh7x7.cc — the xlayer reference scenario "mesh-7x7" (scenarios/mesh-7x7.toml) in ns-3 3.44.
//
// Our own program, written for the xlayer-vs-ns-3 validation; it links against the ns-3 shared
// libraries of the PyPI `ns3` wheel (see build.sh). Every model choice below mirrors a field of
// scenarios/mesh-7x7.toml; the comment on each says which ns-3 attribute it sets and why.
//
// Scenario:
//   * 49 static nodes on a 7x7 grid, 200 m spacing; node id = row*7 + col, at (col*200, row*200).
//   * RangePropagationLossModel (MaxRange 250 m): full TX power within 250 m, nothing beyond, so a
//     node hears exactly its 4 grid neighbours (diagonals are 283 m away). Constant-speed delay.
//   * 802.11b DCF, ad hoc, no QoS; constant rate 11 Mbit/s for data and control (ACKs included),
//     long preamble, RTS/CTS off. MAC queue 500 packets, drop-tail, no queue disc in front.
//   * IPv4 static host routes: hop-count shortest paths on the 4-neighbour grid, ties broken by the
//     lowest next-hop node id (computed here by BFS, installed with Ipv4StaticRouting).
//   * 16 UDP CBR flows (6 Mbit/s, 1000-byte payload) from 1 s to 60 s; stop at 60 s; throughput =
//     payload bits received in [2 s, 60 s] / 58 s.
//
// Usage:   mesh7x7 [--run=N] [--seed=N] [--duration=S] [--maxDelayMs=MS]
// Output:  human-readable lines on stderr; one JSON object on the last line of stdout.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/propagation-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/wifi-module.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <deque>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

// The installed wheel's version (e.g. "3.44.post0"), passed in by build.sh; the headers carry none.
#ifndef XL_NS3_VERSION
#define XL_NS3_VERSION "unknown"
#endif

namespace
{

constexpr uint32_t kRows = 7;
constexpr uint32_t kCols = 7;
constexpr uint32_t kNodes = kRows * kCols;
constexpr double kSpacingM = 200.0;
constexpr double kRangeM = 250.0;
constexpr double kRateBps = 6.0e6;
constexpr uint32_t kPayloadBytes = 1000;
constexpr double kStartS = 1.0;
constexpr double kWarmupS = 2.0;
constexpr uint16_t kBasePort = 9000;

// The 16 flows of scenarios/mesh-7x7.toml, in file order (flow id = index).
const std::array<std::pair<uint32_t, uint32_t>, 16> kFlows = {{
    {8, 36},
    {48, 4},
    {16, 7},
    {31, 48},
    {28, 30},
    {41, 24},
    {13, 6},
    {24, 27},
    {38, 48},
    {0, 44},
    {46, 14},
    {37, 6},
    {20, 1},
    {43, 13},
    {27, 46},
    {1, 33},
}};

// Per-flow payload bytes received at the sink since the warm-up ended.
std::vector<uint64_t> g_rxBytes(kFlows.size(), 0);
std::vector<uint64_t> g_rxPackets(kFlows.size(), 0);
Time g_warmup; // set in main (no ns-3 Time arithmetic during static initialisation)

// Diagnostics that let us check the configuration did what we meant (reported in the JSON).
std::map<std::string, uint64_t> g_macDrops;   // WifiMac DroppedMpdu, by reason
uint64_t g_tcDrops = 0;                       // TrafficControlLayer TcDrop (device queue stopped)
constexpr uint32_t kModeSlots = 256;
std::vector<uint64_t> g_txFrameCount(4 * 3 * kModeSlots, 0); // (kind, preamble, mode uid) -> count
std::vector<std::string> g_modeNames(kModeSlots);            // mode uid -> name

void
OnSinkRx(uint32_t flow, Ptr<const Packet> p, const Address& /*from*/)
{
    if (Simulator::Now() >= g_warmup)
    {
        g_rxBytes[flow] += p->GetSize(); // the sink sees the UDP payload only
        g_rxPackets[flow]++;
    }
}

void
OnMacDrop(WifiMacDropReason reason, Ptr<const WifiMpdu> /*mpdu*/)
{
    static const char* names[] = {"failed_enqueue", "expired_lifetime", "retry_limit", "qos_old"};
    g_macDrops[reason < 4 ? names[reason] : "other"]++;
}

void
OnTcDrop(Ptr<const Packet> /*p*/)
{
    g_tcDrops++;
}

void
OnPhyTx(WifiConstPsduMap psdus, WifiTxVector txv, double /*txPowerW*/)
{
    // Cheap per-frame bookkeeping (integer counters); the names are built once, at the end.
    for (const auto& [staId, psdu] : psdus)
    {
        const WifiMacHeader& h = psdu->GetHeader(0);
        uint32_t kind = h.IsAck() ? 0 : (h.IsData() ? 1 : (h.IsRts() ? 2 : 3));
        uint32_t pre = txv.GetPreambleType() == WIFI_PREAMBLE_LONG    ? 0
                       : txv.GetPreambleType() == WIFI_PREAMBLE_SHORT ? 1
                                                                      : 2;
        WifiMode mode = txv.GetMode();
        uint32_t uid = mode.GetUid() % kModeSlots;
        if (g_modeNames[uid].empty())
        {
            g_modeNames[uid] = mode.GetUniqueName();
        }
        g_txFrameCount[(kind * 3 + pre) * kModeSlots + uid]++;
    }
}

// "<kind> <mode> <preamble>" -> number of frames the PHYs started to transmit.
std::map<std::string, uint64_t>
TxFrameSummary()
{
    static const char* kinds[] = {"ack", "data", "rts", "other"};
    static const char* pres[] = {"long", "short", "other"};
    std::map<std::string, uint64_t> out;
    for (uint32_t key = 0; key < g_txFrameCount.size(); ++key)
    {
        if (g_txFrameCount[key] > 0)
        {
            uint32_t uid = key % kModeSlots;
            uint32_t kp = key / kModeSlots;
            out[std::string(kinds[kp / 3]) + " " + g_modeNames[uid] + " " + pres[kp % 3]] +=
                g_txFrameCount[key];
        }
    }
    return out;
}

// Next hop from every node towards every destination: BFS from the destination over the
// 4-neighbour grid gives hop distances; the next hop from n is the neighbour one hop closer with
// the LOWEST node id (neighbours are visited in increasing id order). nextHop[d][n].
std::vector<std::vector<int>>
ComputeNextHops()
{
    auto neighbours = [](uint32_t n) {
        std::vector<uint32_t> v;
        uint32_t r = n / kCols;
        uint32_t c = n % kCols;
        // increasing id order: up (row-1), left, right, down (row+1)
        if (r > 0)
        {
            v.push_back(n - kCols);
        }
        if (c > 0)
        {
            v.push_back(n - 1);
        }
        if (c + 1 < kCols)
        {
            v.push_back(n + 1);
        }
        if (r + 1 < kRows)
        {
            v.push_back(n + kCols);
        }
        return v;
    };
    std::vector<std::vector<int>> next(kNodes, std::vector<int>(kNodes, -1));
    for (uint32_t d = 0; d < kNodes; ++d)
    {
        std::vector<int> dist(kNodes, -1);
        std::deque<uint32_t> q{d};
        dist[d] = 0;
        while (!q.empty())
        {
            uint32_t u = q.front();
            q.pop_front();
            for (uint32_t v : neighbours(u))
            {
                if (dist[v] < 0)
                {
                    dist[v] = dist[u] + 1;
                    q.push_back(v);
                }
            }
        }
        for (uint32_t n = 0; n < kNodes; ++n)
        {
            if (n == d)
            {
                continue;
            }
            for (uint32_t v : neighbours(n)) // ascending ids: first match is the lowest id
            {
                if (dist[v] == dist[n] - 1)
                {
                    next[d][n] = static_cast<int>(v);
                    break;
                }
            }
        }
    }
    return next;
}

std::string
JsonEscape(const std::string& s)
{
    std::string o;
    for (char c : s)
    {
        if (c == '"' || c == '\\')
        {
            o += '\\';
        }
        o += c;
    }
    return o;
}

} // namespace

int
main(int argc, char* argv[])
{
    auto wallStart = std::chrono::steady_clock::now();

    uint32_t run = 1;
    uint32_t seed = 1;
    double duration = 60.0;   // simulation stop time (s); the scenario uses 60
    double maxDelayMs = 0.0;  // WifiMacQueue::MaxDelay; 0 = effectively unlimited (drop-tail only)
    CommandLine cmd(__FILE__);
    cmd.AddValue("run", "RngRun (RngSeedManager::SetRun)", run);
    cmd.AddValue("seed", "RngSeed (RngSeedManager::SetSeed)", seed);
    cmd.AddValue("duration", "simulation stop time in s (60 in the scenario; shorter for smoke tests)",
                 duration);
    cmd.AddValue("maxDelayMs",
                 "WifiMacQueue MaxDelay in ms (0 = no lifetime limit; ns-3's own default is 500)",
                 maxDelayMs);
    cmd.Parse(argc, argv);
    if (duration <= kWarmupS)
    {
        std::cerr << "mesh7x7: --duration must exceed the 2 s warm-up\n";
        return 2;
    }

    g_warmup = Seconds(kWarmupS);

    // Seed: the scenario's seed = 1, run number from --run.
    RngSeedManager::SetSeed(seed);
    RngSeedManager::SetRun(run);

    // ---- MAC queue: 500 packets, drop-tail ------------------------------------------------------
    // ns3::WifiMacQueue::MaxSize — the per-device (non-QoS: single Txop) MAC queue limit.
    Config::SetDefault("ns3::WifiMacQueue::MaxSize", QueueSizeValue(QueueSize("500p")));
    // ns3::FcfsWifiQueueScheduler::DropPolicy — on a full queue, drop the arriving packet
    // (drop-tail). This is ns-3's default; set explicitly for clarity.
    Config::SetDefault("ns3::FcfsWifiQueueScheduler::DropPolicy", StringValue("DropNewest"));
    // ns3::WifiMacQueue::MaxDelay — ns-3 also discards packets that waited longer than 500 ms by
    // default. xlayer's queue is a pure drop-tail queue with no lifetime, so we set the limit far
    // beyond the simulation length (use --maxDelayMs=500 to see ns-3's default behaviour).
    Config::SetDefault("ns3::WifiMacQueue::MaxDelay",
                       TimeValue(maxDelayMs > 0 ? MilliSeconds(maxDelayMs) : Seconds(1e6)));

    // ---- Nodes and positions --------------------------------------------------------------------
    NodeContainer nodes;
    nodes.Create(kNodes);
    Ptr<ListPositionAllocator> pos = CreateObject<ListPositionAllocator>();
    for (uint32_t n = 0; n < kNodes; ++n)
    {
        pos->Add(Vector((n % kCols) * kSpacingM, (n / kCols) * kSpacingM, 0.0));
    }
    MobilityHelper mobility;
    mobility.SetPositionAllocator(pos);
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(nodes);

    // ---- Channel: range propagation (250 m) + constant-speed delay ------------------------------
    // A bare YansWifiChannelHelper (not ::Default(), which would add a LogDistance loss model).
    YansWifiChannelHelper channel;
    channel.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel");
    // ns3::RangePropagationLossModel::MaxRange — rx power = tx power within range, -1000 dBm beyond.
    channel.AddPropagationLoss("ns3::RangePropagationLossModel", "MaxRange", DoubleValue(kRangeM));

    // ---- PHY: YansWifiPhy, default TX power (16.0206 dBm), default thresholds -------------------
    YansWifiPhyHelper phy;
    phy.SetChannel(channel.Create());

    // ---- 802.11b, constant rate 11 Mbit/s, RTS/CTS off ------------------------------------------
    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211b); // DSSS/HR-DSSS timing: slot 20 us, SIFS 10 us, CW 31..1023
    wifi.SetRemoteStationManager(
        "ns3::ConstantRateWifiManager",
        // ConstantRateWifiManager::DataMode — every data frame at 11 Mbit/s
        "DataMode", StringValue("DsssRate11Mbps"),
        // ConstantRateWifiManager::ControlMode — RTS (unused here) at 11 Mbit/s. ACKs use the
        // "control answer" mode (highest basic rate <= data rate); see AddBasicMode below.
        "ControlMode", StringValue("DsssRate11Mbps"),
        // WifiRemoteStationManager::RtsCtsThreshold — above the 1064-byte MPDU: no RTS/CTS
        "RtsCtsThreshold", UintegerValue(65535));
    // Long preamble: ns-3 uses the long DSSS preamble unless a station advertises short-preamble
    // support, which ad hoc stations do not; the PHY TX trace below confirms it ("long").

    // ---- MAC: ad hoc, plain DCF ------------------------------------------------------------------
    WifiMacHelper mac;
    // AdhocWifiMac with WifiMac::QosSupported = false: a single non-QoS Txop (DCF, DIFS/AIFSN 2).
    // WifiMac::FrameRetryLimit = 7 — at most 7 transmission attempts of a data frame, then it is
    // dropped (dot11ShortRetryLimit; ns-3 3.44's default, and xlayer's short retry limit). In 3.44
    // this replaces the obsolete WifiRemoteStationManager::MaxSsrc/MaxSlrc.
    mac.SetType("ns3::AdhocWifiMac",
                "QosSupported", BooleanValue(false),
                "FrameRetryLimit", UintegerValue(7));
    NetDeviceContainer devices = wifi.Install(phy, mac, nodes);

    // ACK rate: the responder picks the highest rate of the BSS basic rate set that is <= the
    // data rate (WifiRemoteStationManager::GetControlAnswerMode); ControlMode only covers RTS.
    // With an empty basic set ns-3 3.44 already falls back to the highest mandatory rate <= the
    // data rate (11 Mbit/s, checked); adding DsssRate11Mbps as a basic mode makes the 11 Mbit/s
    // ACK explicit rather than dependent on that fallback. The PHY TX trace reports ACK modes.
    for (uint32_t i = 0; i < devices.GetN(); ++i)
    {
        auto dev = DynamicCast<WifiNetDevice>(devices.Get(i));
        dev->GetRemoteStationManager()->AddBasicMode(WifiMode("DsssRate11Mbps"));
    }

    // ---- IPv4 with static routing only ----------------------------------------------------------
    // InternetStackHelper::SetRoutingHelper(static) replaces the default list of
    // (static + global) routing with Ipv4StaticRouting alone.
    Ipv4StaticRoutingHelper staticHelper;
    InternetStackHelper stack;
    stack.SetRoutingHelper(staticHelper);
    stack.Install(nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.0"); // node n gets 10.0.0.(n+1)
    Ipv4InterfaceContainer ifaces = addr.Assign(devices);

    // Traffic control: Ipv4AddressHelper::Assign installed a default root queue disc (FqCoDel)
    // on every device. Remove it, so packets go straight from IP into the WifiMacQueue (500 p,
    // drop-tail); when that queue is full the device stops its tx queue and the
    // TrafficControlLayer drops the packet (counted as tc_drops).
    TrafficControlHelper tch;
    tch.Uninstall(devices);

    // ARP: fill every ARP cache with permanent entries for all interfaces on the channel
    // (NeighborCacheHelper). Otherwise ns-3 would resolve next hops with broadcast ARP
    // requests under load, which xlayer (like most simulators' static set-ups) does not model.
    NeighborCacheHelper neigh;
    neigh.PopulateNeighborCache();

    // Static host routes: BFS shortest paths, ties -> lowest next-hop id (interface 1 = wifi).
    auto nextHop = ComputeNextHops();
    for (uint32_t n = 0; n < kNodes; ++n)
    {
        Ptr<Ipv4StaticRouting> rt = staticHelper.GetStaticRouting(nodes.Get(n)->GetObject<Ipv4>());
        for (uint32_t d = 0; d < kNodes; ++d)
        {
            if (d == n)
            {
                continue;
            }
            rt->AddHostRouteTo(ifaces.GetAddress(d), ifaces.GetAddress(nextHop[d][n]), 1);
        }
    }

    // ---- Traffic: 16 CBR flows -------------------------------------------------------------------
    // OnOffApplication always on (OnTime constant 1e6 s, OffTime 0): one 1000-byte UDP packet every
    // 1000*8/6e6 = 1.333 ms from 1 s until the stop time. Each flow has its own sink port so two
    // flows to the same node (->6, ->48) are counted apart.
    for (uint32_t f = 0; f < kFlows.size(); ++f)
    {
        auto [src, dst] = kFlows[f];
        uint16_t port = kBasePort + f;

        PacketSinkHelper sinkHelper("ns3::UdpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sink = sinkHelper.Install(nodes.Get(dst));
        sink.Start(Seconds(0.0));
        sink.Stop(Seconds(duration));
        sink.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnSinkRx, f));

        OnOffHelper onoff("ns3::UdpSocketFactory", InetSocketAddress(ifaces.GetAddress(dst), port));
        onoff.SetAttribute("DataRate", DataRateValue(DataRate(static_cast<uint64_t>(kRateBps))));
        onoff.SetAttribute("PacketSize", UintegerValue(kPayloadBytes));
        onoff.SetAttribute("OnTime", StringValue("ns3::ConstantRandomVariable[Constant=1000000]"));
        onoff.SetAttribute("OffTime", StringValue("ns3::ConstantRandomVariable[Constant=0]"));
        ApplicationContainer app = onoff.Install(nodes.Get(src));
        app.Start(Seconds(kStartS));
        app.Stop(Seconds(duration));
    }

    // ---- Diagnostics traces ---------------------------------------------------------------------
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/DroppedMpdu",
                                  MakeCallback(&OnMacDrop));
    // TrafficControlLayer "TcDrop": packet dropped because the device's tx queue is stopped
    // (its WifiMacQueue is full) and no queue disc is installed — i.e. the drop-tail drops.
    Config::ConnectWithoutContext("/NodeList/*/$ns3::TrafficControlLayer/TcDrop",
                                  MakeCallback(&OnTcDrop));
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Phy/PhyTxPsduBegin",
                                  MakeCallback(&OnPhyTx));

    // ---- Run ----------------------------------------------------------------------------------------
    Simulator::Stop(Seconds(duration));
    auto runStart = std::chrono::steady_clock::now();
    Simulator::Run();
    auto runEnd = std::chrono::steady_clock::now();
    uint64_t events = Simulator::GetEventCount(); // exists in ns-3 3.44
    Simulator::Destroy();

    double setupS = std::chrono::duration<double>(runStart - wallStart).count();
    double runS = std::chrono::duration<double>(runEnd - runStart).count();
    double wallS = std::chrono::duration<double>(runEnd - wallStart).count();

    // ---- Results ----------------------------------------------------------------------------------
    const double window = duration - kWarmupS;
    double aggregate = 0.0;
    std::ostringstream flowsJson;
    flowsJson.precision(10);
    std::cerr << "flow  src  dst  throughput_bps  packets\n";
    for (uint32_t f = 0; f < kFlows.size(); ++f)
    {
        double thr = g_rxBytes[f] * 8.0 / window;
        aggregate += thr;
        char line[128];
        std::snprintf(line, sizeof(line), "%4u %4u %4u %15.0f %8llu\n", f, kFlows[f].first,
                      kFlows[f].second, thr, static_cast<unsigned long long>(g_rxPackets[f]));
        std::cerr << line;
        flowsJson << (f ? "," : "") << "{\"flow\":" << f << ",\"src\":" << kFlows[f].first
                  << ",\"dst\":" << kFlows[f].second << ",\"throughput_bps\":" << thr
                  << ",\"rx_packets\":" << g_rxPackets[f] << "}";
    }
    std::cerr << "aggregate_throughput_bps " << aggregate << "  events " << events << "  wall_s "
              << wallS << " (setup " << setupS << ", run " << runS << ")\n";
    const auto txFrames = TxFrameSummary();
    for (const auto& [k, v] : txFrames)
    {
        std::cerr << "phy tx: " << k << " x" << v << "\n";
    }

    std::ostringstream js;
    js.precision(10);
    js << "{\"simulator\":\"ns-3\",\"ns3_version\":\"" << XL_NS3_VERSION << "\",\"scenario\":\"mesh-7x7\""
       << ",\"seed\":" << seed << ",\"run\":" << run << ",\"duration_s\":" << duration
       << ",\"warmup_s\":" << kWarmupS << ",\"flows\":[" << flowsJson.str() << "]"
       << ",\"aggregate_throughput_bps\":" << aggregate << ",\"events\":" << events
       << ",\"wall_s\":" << wallS << ",\"setup_s\":" << setupS << ",\"run_s\":" << runS
       << ",\"tc_drops\":" << g_tcDrops << ",\"mac_drops\":{";
    bool first = true;
    for (const auto& [k, v] : g_macDrops)
    {
        js << (first ? "" : ",") << "\"" << JsonEscape(k) << "\":" << v;
        first = false;
    }
    js << "},\"phy_tx_frames\":{";
    first = true;
    for (const auto& [k, v] : txFrames)
    {
        js << (first ? "" : ",") << "\"" << JsonEscape(k) << "\":" << v;
        first = false;
    }
    js << "}}";
    std::cout << js.str() << std::endl;
    return 0;
}
