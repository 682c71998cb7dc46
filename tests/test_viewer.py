"""xlayer view: what the view records of a run (queues, routes, throughput, queue drops) is what
the run measured, recording changes nothing, the page is self-contained, and headless Chromium
draws each frame's numbers."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import xlayer
from conftest import SMALL_CHAIN, debian_tool
from xlayer.scenario import load_toml
from xlayer.viewer import VIEW_FILE, WALL_CLOCK_KEYS as WALL_CLOCK, Recording, record, render, view_with_check


def _chain(**flow) -> dict:
    """SMALL_CHAIN (4 nodes, 200 m apart, 2 s, warm-up 0.5 s) with its flow going 0 -> 3."""
    scenario = load_toml(SMALL_CHAIN)
    scenario["flows"][0].update({"dst": 3, **flow})
    return scenario


def _recorded(scenario: dict, frames: int = 40):
    sim = xlayer.Simulation(scenario)
    rec = record(sim, frames=frames)
    return rec, sim.run()


def _page_data(text: str) -> dict:
    m = re.search(r'<script type="application/json" id="xlayer-data">(.*?)</script>', text,
                  re.S)
    assert m is not None
    return json.loads(m.group(1))


def test_recording_a_run_leaves_its_results_unchanged(tiny_dict):
    rec, viewed = _recorded(tiny_dict, frames=50)
    plain = xlayer.run(tiny_dict)

    def strip(summary):
        return {k: v for k, v in summary.items() if k not in WALL_CLOCK}

    assert strip(viewed.summary) == strip(plain.summary)
    assert viewed.flows.equals(plain.flows) and viewed.nodes.equals(plain.nodes)
    assert len(rec.t_s) == 51 and rec.t_s[0] == 0.0 and rec.t_s[-1] == pytest.approx(2.0)


def test_queue_drops_per_frame_add_up_to_each_nodes_drops_and_a_full_queue_reads_full():
    # 3 Mbit/s into a 2 Mbit/s three-hop chain: the source's and the first relay's queues fill.
    rec, result = _recorded(_chain(rate_bps=3e6))
    drops = [sum(frame[i] for frame in rec.drops) for i in range(4)]
    assert drops == result.nodes["drops_queue"].tolist()
    assert drops[0] > 0
    capacity = result.scenario["mac"]["queue_packets"]
    assert rec.queue[-1][0] == capacity and rec.fill[-1][0] == 1.0
    assert rec.queue[0] == [0, 0, 0, 0]  # nothing queued before the first packet
    assert rec.queue[-1][3] == 0  # the destination forwards nothing


def test_a_light_flow_queues_at_most_a_packet():
    rec, _ = _recorded(_chain(rate_bps=2e5))
    assert max(max(q for q in frame) for frame in rec.queue) <= 1


def test_throughput_per_frame_gives_the_flow_tables_throughput_over_the_measured_window():
    rec, result = _recorded(_chain(rate_bps=2e5))
    start = rec.t_s.index(0.5)  # warmup_s: frame 10 of 40 over 2 s
    received = [row[0] for row in rec.received_bytes]
    window = (received[-1] - received[start]) * 8 / (rec.t_s[-1] - rec.t_s[start])
    assert window == pytest.approx(result.flows["throughput_bps"][0], rel=1e-9)
    per_frame = rec.throughput_bps()
    assert len(per_frame) == 40
    mean = sum(row[0] for row in per_frame[start:]) / len(per_frame[start:])
    assert mean == pytest.approx(window, rel=1e-9)


def test_static_routes_are_read_from_the_nodes_and_dsdv_routes_appear_when_learnt():
    rec, _ = _recorded(_chain())
    assert all(frame == [[0, 1, 2, 3]] for frame in rec.routes)
    dsdv = _chain(rate_bps=4e4)
    dsdv["duration_s"] = 4.0
    dsdv["net"] = {"routing": "dsdv", "dsdv": {"update_interval_s": 1.0}}
    rec, _ = _recorded(dsdv)
    assert rec.routes[0] == [[0]]  # no route before the first advertisements
    assert rec.routes[-1] == [[0, 1, 2, 3]]


def test_frames_are_checked():
    with pytest.raises(ValueError, match="frames"):
        record(xlayer.Simulation(_chain()), frames=0)
    sim = xlayer.Simulation(_chain())
    sim.run_until(0.5)
    with pytest.raises(xlayer.XlayerError, match="from its start"):
        record(sim)


def test_view_of_a_result_folder_goes_into_it_and_says_the_replay_agrees(xlayer_cli, tmp_path):
    folder = tmp_path / "run"
    xlayer.run(_chain(rate_bps=3e6), out=folder)
    proc = xlayer_cli("view", folder, "--frames", "30")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(folder / VIEW_FILE) and proc.stderr == ""
    data = _page_data((folder / VIEW_FILE).read_text())
    assert data["check"]["ok"] and "identical" in data["check"]["text"]
    assert len(data["frames"]["t"]) == 31 and data["source"] == str(folder)
    changed = xlayer_cli("view", folder, "--seed", "9")  # another run: not into the folder
    assert changed.returncode == 2 and "--out" in changed.stderr
    elsewhere = xlayer_cli("view", folder, "--seed", "9", "--out", tmp_path / "seed9.html")
    assert elsewhere.returncode == 0 and _page_data((tmp_path / "seed9.html").read_text())[
        "check"] is None
    # the view is one of the files a run writes: running into the folder again replaces it
    again = xlayer_cli("run", folder / "scenario.toml", "--out", folder, "-q")
    assert again.returncode == 0, again.stderr
    assert not (folder / VIEW_FILE).exists()


def test_a_replay_that_differs_from_the_folder_is_said_on_the_page_and_on_stderr(xlayer_cli,
                                                                               tmp_path):
    folder = tmp_path / "run"
    xlayer.run(_chain(), out=folder)
    summary = json.loads((folder / "summary.json").read_text())
    summary["events"] += 1
    (folder / "summary.json").write_text(json.dumps(summary))
    proc = xlayer_cli("view", folder, "--out", tmp_path / "v.html")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("xlayer: warning: the replay") and "events" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    data = _page_data((tmp_path / "v.html").read_text())
    assert data["check"]["ok"] is False


def test_run_with_view_records_the_page_of_its_own_run(xlayer_cli, tmp_path, chain_path):
    proc = xlayer_cli("run", chain_path, "--out", tmp_path / "r", "--view", "-q")
    assert proc.returncode == 0, proc.stderr
    by_run = _page_data((tmp_path / "r" / VIEW_FILE).read_text())
    path, check = view_with_check(tmp_path / "r", tmp_path / "again.html")
    assert check is not None and check[0]
    replayed = _page_data(path.read_text())
    for key in ("nodes", "links", "flows", "frames", "summary"):
        assert by_run[key] == replayed[key], key
    assert xlayer_cli("run", chain_path, "--view").returncode == 2  # no --out: no folder


def test_view_of_a_scenario_is_written_beside_it_under_its_name(xlayer_cli, tmp_path,
                                                               chain_path):
    proc = xlayer_cli("view", chain_path, "--frames", "10")
    assert proc.returncode == 0, proc.stderr
    page = tmp_path / "small-chain-view.html"
    assert proc.stdout.strip() == page.name and page.is_file()
    assert _page_data(page.read_text())["check"] is None
    for args, what in ((["nowhere.toml"], "no such"), ([chain_path, "--frames", "0"],
                                                       "--frames")):
        bad = xlayer_cli("view", *args)
        assert bad.returncode == 2 and bad.stderr.startswith("xlayer: error: ")
        assert what in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_the_page_is_self_contained_and_its_data_survives_any_scenario_name(tmp_path):
    scenario = _chain()
    scenario["name"] = "a </script><script>alert(1)</script> & <b>"
    path, _ = view_with_check(scenario, tmp_path / "v.html", frames=5)
    text = path.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in text
    assert not re.findall(r'(?:src|href)="(?!#|data:)[^"]*"', text)
    assert "<script>alert" not in text
    data = _page_data(text)
    assert data["title"] == scenario["name"]
    assert len(data["nodes"]) == 4 and len(data["links"]) == 3  # a chain: neighbours only


def _chromium() -> str:
    return debian_tool("chromium", "chromium")


def _open(chromium: str, page: Path, tmp_path: Path, fragment: str = "") -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000",
         "--enable-logging=stderr", "--v=0", "--dump-dom", page.absolute().as_uri() + fragment],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    return proc


def _attributes(dom: str, tag: str, cls: str) -> list:
    """The attributes of each ``<tag class="cls ...">`` element, in document order."""
    found = []
    for m in re.finditer(rf'<{tag} ([^>]*)>', dom):
        attrs = dict(re.findall(r'([\w:-]+)="([^"]*)"', m.group(1)))
        if cls in attrs.get("class", "").split():
            found.append(attrs)
    return found


def test_headless_chromium_draws_each_frames_queues_routes_and_time(tmp_path):
    chromium = _chromium()
    scenario = _chain(rate_bps=3e6)
    scenario["flows"].append({"src": 3, "dst": 1, "rate_bps": 1e5, "payload_bytes": 500})
    sim = xlayer.Simulation(scenario)
    rec = record(sim, frames=20)
    result = sim.run()
    page = tmp_path / "view.html"
    page.write_text(render(rec, result, sim.scenario))
    for k in (3, 20):
        dom = _open(chromium, page, tmp_path, f"#frame={k}").stdout
        assert 'data-ready="frames=21 nodes=4 links=3 flows=2"' in dom
        assert f'data-frame="{k}"' in dom
        nodes = _attributes(dom, "circle", "node")
        assert [int(n["data-node"]) for n in nodes] == [0, 1, 2, 3]
        assert [int(n["data-queue"]) for n in nodes] == rec.queue[k]
        dropped = [int(n["data-node"]) for n in nodes if "dropped" in n["class"].split()]
        assert dropped == [i for i, d in enumerate(rec.drops[k]) if d > 0]
        routes = {int(r["data-flow"]): [int(x) for x in r["data-nodes"].split()]
                  for r in _attributes(dom, "path", "route")}
        assert routes == {0: rec.routes[k][0], 1: rec.routes[k][1]} == {0: [0, 1, 2, 3],
                                                                        1: [3, 2, 1]}
        assert f"t = <span id=\"time\">{rec.t_s[k]:.3f} s</span>" in dom
        assert len(_attributes(dom, "line", "link")) == 3


def test_headless_chromium_plays_the_run_on_its_own(tmp_path):
    chromium = _chromium()
    path, _ = view_with_check(_chain(), tmp_path / "v.html", frames=100)
    dom = _open(chromium, path, tmp_path).stdout  # no #frame: it plays from the start
    frame = int(re.search(r'data-frame="(\d+)"', dom).group(1))
    assert 5 < frame <= 100
    assert '<button id="play" type="button">Pause</button>' in dom or frame == 100


def test_an_unreadable_receiver_gives_no_throughput_rather_than_a_number():
    rec = Recording(t_s=[0.0, 1.0], received_bytes=[[None], [10.0]])
    assert rec.throughput_bps() == [[None]]
