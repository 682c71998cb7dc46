// saturation.cc — 802.11b DCF saturation throughput of n stations in range of one receiver, in
// ns-3 3.44: the scenario of validation/ns3/compare_saturation.py (xlayer's side is generated
// there), for n = 1 ... 50.
//
// Our own program, written for the xlayer-vs-ns-3 validation; it links against the ns-3 shared
// libraries of the PyPI `ns3` wheel (see build.sh). Every model choice mirrors a field of the
// xlayer scenario; the comment on each says which ns-3 attribute it sets and why.
//
// Scenario:
//   * node 0 (the receiver) at the origin, nodes 1..n evenly on a circle of 10 m around it.
//   * RangePropagationLossModel (MaxRange 250 m): every frame arrives at full TX power at every
//     node, so all signals are equally strong — no station wins a collision by capture, as in
//     Bianchi's model. Constant-speed propagation delay.
//   * 802.11b DCF, ad hoc, no QoS: data at 11 Mbit/s, ACKs at 1 Mbit/s (the basic rate), long
//     preamble, CW 31..1023, at most 7 attempts per frame, RTS/CTS off.
//   * Saturated senders: each station's MAC queue always holds kBacklog packets — a new one is
//     handed to the device whenever one leaves the queue (acknowledged or dropped at the retry
//     limit). Each packet is 1528 bytes, the IPv4 packet of a 1500-byte UDP payload (xlayer's
//     flows have `payload_bytes = 1500`); there is no IP stack, so nothing but these packets and
//     their ACKs is on the air. On the air: 1528 + 8 LLC/SNAP + 28 MAC header/FCS = 1564 bytes.
//   * Throughput = 1500-byte payloads received by node 0 in [warmup, duration] · 8 / the window.
//
// Usage:   saturation --n=N [--run=R] [--seed=S] [--duration=D] [--warmup=W]
//                     [--preambleDetection=true|false]
// Output:  human-readable lines on stderr; one JSON object on the last line of stdout.

#include "ns3/core-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/propagation-module.h"
#include "ns3/wifi-module.h"

#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

#ifndef XL_NS3_VERSION
#define XL_NS3_VERSION "unknown"
#endif

namespace
{

constexpr double kRadiusM = 10.0;
constexpr double kRangeM = 250.0;
constexpr uint32_t kPayloadBytes = 1500;         // UDP payload in xlayer's flows
constexpr uint32_t kPacketBytes = kPayloadBytes + 8 + 20; // + UDP + IPv4 headers
constexpr uint32_t kBacklog = 4;                 // packets kept in each sender's MAC queue
constexpr uint16_t kProtocol = 0x0800;           // LLC/SNAP EtherType (IPv4)

Time g_warmup;
uint64_t g_rxPackets = 0;                         // payloads received by node 0 after warm-up
std::vector<uint64_t> g_rxPerStation;             // ... per sender
NetDeviceContainer g_devices;

// Diagnostics, counted after the warm-up.
uint64_t g_acked = 0;                             // MPDUs acknowledged (all senders)
uint64_t g_dataTx = 0;                            // data frames put on the air
uint64_t g_ackTx = 0;                             // ACKs put on the air
uint64_t g_retryDrops = 0;                        // MPDUs dropped at the retry limit
uint64_t g_otherDrops = 0;                        // MPDUs dropped for any other reason
std::map<std::string, uint64_t> g_rxDrops;        // PHY RX drops at node 0, by reason
uint64_t g_rxError = 0;                           // frames node 0 locked onto but failed to decode
uint64_t g_rxOk = 0;
std::map<std::string, double> g_stateTime;        // node 0's PHY state durations (s)
std::string g_dataMode, g_ackMode, g_preamble;

bool
Measuring()
{
    return Simulator::Now() >= g_warmup;
}

void
SendOne(uint32_t station)
{
    Ptr<NetDevice> dev = g_devices.Get(station);
    dev->Send(Create<Packet>(kPacketBytes), g_devices.Get(0)->GetAddress(), kProtocol);
}

// A packet left station's queue (acknowledged or dropped): hand the device the next one.
void
OnAcked(uint32_t station, Ptr<const WifiMpdu> /*mpdu*/)
{
    if (Measuring())
    {
        g_acked++;
    }
    SendOne(station);
}

void
OnDropped(uint32_t station, WifiMacDropReason reason, Ptr<const WifiMpdu> /*mpdu*/)
{
    if (Measuring())
    {
        (reason == WIFI_MAC_DROP_REACHED_RETRY_LIMIT ? g_retryDrops : g_otherDrops)++;
    }
    SendOne(station);
}

void
OnReceive(Ptr<NetDevice> /*dev*/,
          Ptr<const Packet> /*p*/,
          uint16_t /*protocol*/,
          const Address& from,
          const Address& /*to*/,
          NetDevice::PacketType /*type*/)
{
    if (Measuring())
    {
        g_rxPackets++;
        Mac48Address src = Mac48Address::ConvertFrom(from);
        for (uint32_t i = 1; i < g_devices.GetN(); ++i)
        {
            if (g_devices.Get(i)->GetAddress() == Address(src))
            {
                g_rxPerStation[i]++;
                break;
            }
        }
    }
}

void
OnPhyTx(WifiConstPsduMap psdus, WifiTxVector txv, double /*txPowerW*/)
{
    if (!Measuring())
    {
        return;
    }
    for (const auto& [staId, psdu] : psdus)
    {
        const WifiMacHeader& h = psdu->GetHeader(0);
        std::string pre = txv.GetPreambleType() == WIFI_PREAMBLE_LONG ? "long" : "short";
        if (h.IsAck())
        {
            g_ackTx++;
            g_ackMode = txv.GetMode().GetUniqueName();
        }
        else if (h.IsData())
        {
            g_dataTx++;
            g_dataMode = txv.GetMode().GetUniqueName();
            g_preamble = pre;
        }
    }
}

void
OnRxDrop(Ptr<const Packet> /*p*/, WifiPhyRxfailureReason reason)
{
    if (Measuring())
    {
        std::ostringstream s;
        s << reason;
        g_rxDrops[s.str()]++;
    }
}

void
OnRxOk(Ptr<const Packet>, double, WifiMode, WifiPreamble)
{
    if (Measuring())
    {
        g_rxOk++;
    }
}

void
OnRxError(Ptr<const Packet>, double)
{
    if (Measuring())
    {
        g_rxError++;
    }
}

void
OnState(Time start, Time duration, WifiPhyState state)
{
    Time end = start + duration;
    Time from = std::max(start, g_warmup);
    if (end > from)
    {
        std::ostringstream s;
        s << state;
        g_stateTime[s.str()] += (end - from).GetSeconds();
    }
}

} // namespace

int
main(int argc, char* argv[])
{
    auto wallStart = std::chrono::steady_clock::now();

    uint32_t n = 10;
    uint32_t run = 1;
    uint32_t seed = 1;
    double duration = 11.0;
    double warmup = 1.0;
    bool preambleDetection = true;
    CommandLine cmd(__FILE__);
    cmd.AddValue("n", "number of saturated senders (1 ... 100)", n);
    cmd.AddValue("run", "RngRun (RngSeedManager::SetRun)", run);
    cmd.AddValue("seed", "RngSeed (RngSeedManager::SetSeed)", seed);
    cmd.AddValue("duration", "simulation stop time in s", duration);
    cmd.AddValue("warmup", "start of the measurement window in s", warmup);
    cmd.AddValue("preambleDetection",
                 "keep ns-3's default ThresholdPreambleDetectionModel (false: no preamble "
                 "detection model, every frame above RxSensitivity is locked onto)",
                 preambleDetection);
    cmd.Parse(argc, argv);
    if (n < 1 || n > 100 || duration <= warmup)
    {
        std::cerr << "saturation: need 1 <= n <= 100 and duration > warmup\n";
        return 2;
    }
    g_warmup = Seconds(warmup);
    g_rxPerStation.assign(n + 1, 0);
    RngSeedManager::SetSeed(seed);
    RngSeedManager::SetRun(run);

    // ns3::WifiMacQueue::MaxDelay — ns-3 discards packets that waited longer than 500 ms by
    // default; at n = 50 a sender's share is ~9 packets/s, so its backlog would expire (and a
    // packet between retries with it). xlayer's queue has no lifetime: set it far beyond the run.
    Config::SetDefault("ns3::WifiMacQueue::MaxDelay", TimeValue(Seconds(1e6)));

    // ---- Nodes: receiver at the origin, senders on a 10 m circle --------------------------------
    NodeContainer nodes;
    nodes.Create(n + 1);
    Ptr<ListPositionAllocator> pos = CreateObject<ListPositionAllocator>();
    pos->Add(Vector(0.0, 0.0, 0.0));
    for (uint32_t i = 0; i < n; ++i)
    {
        double a = 2.0 * M_PI * i / n;
        pos->Add(Vector(kRadiusM * std::cos(a), kRadiusM * std::sin(a), 0.0));
    }
    MobilityHelper mobility;
    mobility.SetPositionAllocator(pos);
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(nodes);

    // ---- Channel: range propagation (250 m) + constant-speed delay ------------------------------
    // A bare YansWifiChannelHelper (::Default() would add a LogDistance loss model).
    YansWifiChannelHelper channel;
    channel.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel");
    // ns3::RangePropagationLossModel::MaxRange — rx power = tx power within range.
    channel.AddPropagationLoss("ns3::RangePropagationLossModel", "MaxRange", DoubleValue(kRangeM));

    // ---- PHY: YansWifiPhy, defaults (16.0206 dBm, DsssErrorRateModel) ----------------------------
    YansWifiPhyHelper phy;
    phy.SetChannel(channel.Create());
    if (!preambleDetection)
    {
        // WifiPhyHelper installs a ThresholdPreambleDetectionModel (4 dB, -82 dBm) by default.
        phy.DisablePreambleDetectionModel();
    }

    // ---- 802.11b, data at 11 Mbit/s, ACKs at 1 Mbit/s, RTS/CTS off ------------------------------
    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211b); // slot 20 us, SIFS 10 us, CW 31..1023
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                 // ConstantRateWifiManager::DataMode — data frames at 11 Mbit/s
                                 "DataMode",
                                 StringValue("DsssRate11Mbps"),
                                 // ConstantRateWifiManager::ControlMode — RTS (unused) at 1 Mbit/s
                                 "ControlMode",
                                 StringValue("DsssRate1Mbps"),
                                 // no RTS/CTS: threshold above the 1564-byte MPDU
                                 "RtsCtsThreshold",
                                 UintegerValue(65535));

    // ---- MAC: ad hoc, plain DCF ------------------------------------------------------------------
    // AdhocWifiMac with QosSupported = false: one non-QoS Txop (DCF, AIFSN 2 = DIFS).
    // WifiMac::FrameRetryLimit = 7: at most 7 attempts (dot11ShortRetryLimit, xlayer's
    // short_retry_limit; frames without RTS count against the short limit).
    WifiMacHelper mac;
    mac.SetType("ns3::AdhocWifiMac",
                "QosSupported",
                BooleanValue(false),
                "FrameRetryLimit",
                UintegerValue(7));
    g_devices = wifi.Install(phy, mac, nodes);

    // ACK rate: the responder answers at the highest rate of its basic rate set that is <= the
    // data rate (WifiRemoteStationManager::GetControlAnswerMode). An AdhocWifiMac, on meeting a
    // new peer, assumes it supports every rate (AddAllSupportedModes), which also puts every
    // mandatory 802.11b rate — 11 Mbit/s included — into the basic set, so ACKs would go at
    // 11 Mbit/s. To send them at 1 Mbit/s, as xlayer's basic_rate_mbps = 1, every peer is made
    // known beforehand (all its rates supported, state "disassociated", i.e. no longer brand new)
    // and 1 Mbit/s is the only basic mode. This runs at time 0, after the devices' initialisation
    // (which resets the station managers); the JSON's ack_mode checks it.
    Simulator::Schedule(Seconds(0.0), [] {
        for (uint32_t i = 0; i < g_devices.GetN(); ++i)
        {
            auto dev = DynamicCast<WifiNetDevice>(g_devices.Get(i));
            Ptr<WifiRemoteStationManager> m = dev->GetRemoteStationManager();
            for (uint32_t j = 0; j < g_devices.GetN(); ++j)
            {
                if (j == i)
                {
                    continue;
                }
                auto peer = Mac48Address::ConvertFrom(g_devices.Get(j)->GetAddress());
                for (const auto& mode : dev->GetPhy()->GetModeList())
                {
                    m->AddSupportedMode(peer, mode);
                }
                m->RecordDisassociated(peer);
            }
            m->AddBasicMode(WifiMode("DsssRate1Mbps"));
        }
    });
    // ---- Receiver: count the payloads handed up at node 0 ----------------------------------------
    nodes.Get(0)->RegisterProtocolHandler(MakeCallback(&OnReceive), kProtocol, g_devices.Get(0));

    // ---- Saturated senders -----------------------------------------------------------------------
    for (uint32_t i = 1; i <= n; ++i)
    {
        auto dev = DynamicCast<WifiNetDevice>(g_devices.Get(i));
        dev->GetMac()->TraceConnectWithoutContext("AckedMpdu", MakeBoundCallback(&OnAcked, i));
        dev->GetMac()->TraceConnectWithoutContext("DroppedMpdu", MakeBoundCallback(&OnDropped, i));
        for (uint32_t k = 0; k < kBacklog; ++k)
        {
            Simulator::Schedule(Seconds(0.0), &SendOne, i);
        }
    }

    // ---- Diagnostics -----------------------------------------------------------------------------
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Phy/PhyTxPsduBegin",
                                  MakeCallback(&OnPhyTx));
    Ptr<WifiPhy> rxPhy = DynamicCast<WifiNetDevice>(g_devices.Get(0))->GetPhy();
    rxPhy->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnRxDrop));
    Ptr<WifiPhyStateHelper> rxState = rxPhy->GetState();
    rxState->TraceConnectWithoutContext("RxOk", MakeCallback(&OnRxOk));
    rxState->TraceConnectWithoutContext("RxError", MakeCallback(&OnRxError));
    rxState->TraceConnectWithoutContext("State", MakeCallback(&OnState));

    // ---- Run -------------------------------------------------------------------------------------
    Simulator::Stop(Seconds(duration));
    auto runStart = std::chrono::steady_clock::now();
    Simulator::Run();
    auto runEnd = std::chrono::steady_clock::now();
    uint64_t events = Simulator::GetEventCount();
    Simulator::Destroy();
    double wallS = std::chrono::duration<double>(runEnd - wallStart).count();
    double runS = std::chrono::duration<double>(runEnd - runStart).count();

    const double window = duration - warmup;
    const double aggregate = g_rxPackets * kPayloadBytes * 8.0 / window;
    std::cerr << "n " << n << "  run " << run << "  aggregate_throughput_bps " << aggregate
              << "  data_tx " << g_dataTx << "  acked " << g_acked << "  retry_drops "
              << g_retryDrops << "  events " << events << "  wall_s " << wallS << "\n";
    std::cerr << "data " << g_dataMode << " " << g_preamble << ", ack " << g_ackMode
              << "; node 0: rx_ok " << g_rxOk << ", rx_error " << g_rxError << "\n";
    for (const auto& [k, v] : g_rxDrops)
    {
        std::cerr << "node 0 phy rx drop: " << k << " x" << v << "\n";
    }

    std::ostringstream js;
    js.precision(10);
    js << "{\"simulator\":\"ns-3\",\"ns3_version\":\"" << XL_NS3_VERSION
       << "\",\"scenario\":\"saturation\",\"n\":" << n << ",\"seed\":" << seed
       << ",\"run\":" << run << ",\"duration_s\":" << duration << ",\"warmup_s\":" << warmup
       << ",\"preamble_detection\":" << (preambleDetection ? "true" : "false")
       << ",\"aggregate_throughput_bps\":" << aggregate << ",\"rx_packets\":" << g_rxPackets
       << ",\"per_station_packets\":[";
    for (uint32_t i = 1; i <= n; ++i)
    {
        js << (i > 1 ? "," : "") << g_rxPerStation[i];
    }
    js << "],\"data_tx\":" << g_dataTx << ",\"acked\":" << g_acked << ",\"ack_tx\":" << g_ackTx
       << ",\"retry_drops\":" << g_retryDrops << ",\"other_drops\":" << g_otherDrops
       << ",\"data_mode\":\"" << g_dataMode
       << "\",\"ack_mode\":\"" << g_ackMode << "\",\"preamble\":\"" << g_preamble
       << "\",\"rx_ok\":" << g_rxOk << ",\"rx_error\":" << g_rxError << ",\"rx_drops\":{";
    bool first = true;
    for (const auto& [k, v] : g_rxDrops)
    {
        js << (first ? "" : ",") << "\"" << k << "\":" << v;
        first = false;
    }
    js << "},\"phy_state_s\":{";
    first = true;
    for (const auto& [k, v] : g_stateTime)
    {
        js << (first ? "" : ",") << "\"" << k << "\":" << v;
        first = false;
    }
    js << "},\"events\":" << events << ",\"wall_s\":" << wallS << ",\"run_s\":" << runS << "}";
    std::cout << js.str() << std::endl;
    return 0;
}
