#!/usr/bin/env python3
"""Opens the HTML report of an mnist-cnn run in headless Chromium (Debian's chromium and
chromium-driver through python3-selenium; a fresh profile directory, no sandbox) from a file://
URL, finds the timeline and the per-layer chart with their bars, checks the energy, power and area
charts against the run's stats.json (each stacked bar's segments add up to the figure stats.json
gives: energy.total_j, power.average_w and idle_w, area.total_mm2, every layer's energy_j), saves a
screenshot, then opens `npusim serve --html` of a small trace (check_serve_report), `npusim
train --html` of a few steps on the digits (check_train_report) and `npusim generate --html` of
a tiny decoder (check_generate_report); fails on any
JavaScript console message of level SEVERE or WARNING. Skips (exit 77) only when chromium
or chromedriver is not installed. Usage: browser_test.py NPUSIM SCREENSHOT_PNG"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

NPUSIM, SHOT = sys.argv[1], sys.argv[2]
chromium = shutil.which("chromium")
driver = shutil.which("chromedriver")
if not chromium or not driver:
    print(f"SKIP: chromium ({chromium}) or chromedriver ({driver}) is not installed "
          "(scripts/setup.sh installs them)")
    sys.exit(77)
from selenium import webdriver  # noqa: E402  (python3-selenium, installed with chromium-driver)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

TINY = {"schema_version": 1, "kind": "decoder", "name": "tiny", "layers": 2, "hidden": 64,
        "heads": 4, "kv_heads": 2, "ffn": 128, "vocab": 256, "max_context": 64}


def check_serve_report(browser, tmp, failures):
    """npusim serve --html of a small trace (a cache of 3 blocks, so requests wait): a track per
    request, each distribution drawn over its requests, the percentiles table equal to
    stats.json, the six step series. Returns the number of requests."""
    model, trace = os.path.join(tmp, "tiny.json"), os.path.join(tmp, "trace.csv")
    with open(model, "w") as f:
        json.dump(TINY, f)
    rows = [(f"q{i}", 0.0002 * i, 4 + 3 * i, 1 + i % 5) for i in range(12)]
    with open(trace, "w") as f:
        f.write("id,arrival_s,prompt_tokens,output_tokens\n")
        f.writelines(f"{q},{a},{p},{o}\n" for q, a, p, o in rows)
    html, out = os.path.join(tmp, "serve.html"), os.path.join(tmp, "serve")
    p = subprocess.run([NPUSIM, "serve", "--hw", "tpu-v4-like-core", "--dtype", "bf16",
                        "--workload", model, "--trace", trace, "--grid-tokens", "8",
                        "--kv-block-tokens", "16", "--kv-cache-bytes", str(3 * 16 * 256),
                        "--html", html, "--out", out], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        failures.append(f"npusim serve exited {p.returncode}: {p.stderr}")
        return 0
    with open(os.path.join(out, "stats.json")) as f:
        s = json.load(f)["serving"]
    browser.get("file://" + html)
    title = browser.find_element(By.ID, "title").text
    if "tiny" not in title or "tpu-v4-like-core" not in title:
        failures.append(f"serve report title is '{title}'")
    tracks = browser.find_elements(By.CSS_SELECTOR, "#requests g.request")
    if len(tracks) != len(rows):
        failures.append(f"serve report: {len(tracks)} request tracks for {len(rows)} requests")
    decoding = sum(1 for r in rows if r[3] > 1)
    for chart, n in (("cdf-ttft", len(rows)), ("cdf-tpot", decoding), ("cdf-e2e", len(rows))):
        got = browser.find_element(By.ID, chart).find_element(By.CSS_SELECTOR, "path")
        if int(got.get_attribute("data-points")) != n:
            failures.append(f"serve report: {chart} drawn over {got.get_attribute('data-points')} "
                            f"requests, expected {n}")
    table = browser.find_element(By.ID, "percentiles").find_elements(By.TAG_NAME, "tr")
    for row, key in zip(table[1:], ("ttft_s", "tpot_s", "e2e_s")):
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        for cell, q in zip(cells[1:], ("p50", "p90", "p99", "max", "mean")):
            if not math.isclose(float(cell.split()[0]), s[key][q] * 1e3, rel_tol=1e-3):
                failures.append(f"serve report: {key} {q} shows '{cell}', stats.json "
                                f"{s[key][q]} s")
    series = browser.find_elements(By.CSS_SELECTOR, "#steps path[data-series]")
    if len(series) != 6:
        failures.append(f"serve report: {len(series)} step series, expected 6")
    if s["kv_cache"]["capacity_blocks"] != 3:
        failures.append(f"serve: the cache holds {s['kv_cache']['capacity_blocks']} blocks, not 3")
    return len(tracks)


def check_generate_report(browser, tmp, failures, chart_rows, expect_parts):
    """npusim generate --html of a tiny decoder, 4 new tokens: a time, energy and off-chip bar
    per program equal to stats.json's steps[], the prefill's and the last decode step's energy by
    component, the slowest layers sorted, a table row per program. Returns the programs."""
    model, out = os.path.join(tmp, "tiny.json"), os.path.join(tmp, "generate")
    html = os.path.join(tmp, "generate.html")
    with open(model, "w") as f:
        json.dump(TINY, f)
    p = subprocess.run([NPUSIM, "generate", "--hw", "tpu-v4-like-core", "--workload", model,
                        "--prompt-tokens", "8", "--new-tokens", "4", "--dtype", "bf16",
                        "--html", html, "--out", out], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        failures.append(f"npusim generate exited {p.returncode}: {p.stderr}")
        return 0
    with open(os.path.join(out, "stats.json")) as f:
        stats = json.load(f)
    steps = stats["steps"]
    browser.get("file://" + html)
    title = browser.find_element(By.ID, "title").text
    if "tiny" not in title or "tpu-v4-like-core" not in title:
        failures.append(f"generate report title is '{title}'")
    for chart, values in (("time", [s["latency_s"] * 1e3 for s in steps]),
                          ("energy", [s["energy_j"] * 1e3 for s in steps])):
        rows = chart_rows(chart)
        got = [sum(v for _, v in r) for r in rows]
        if len(got) != len(values) or not all(math.isclose(a, b, rel_tol=1e-12)
                                              for a, b in zip(got, values)):
            failures.append(f"generate report {chart}: {got}, stats.json {values}")
    for i, row in enumerate(chart_rows("bytes")):
        expect_parts(f"generate report bytes {i}", row,
                     {"read": steps[i]["dram_read_bytes"], "written": steps[i]["dram_write_bytes"]})
    components = chart_rows("components")
    if len(components) != 2:
        failures.append(f"generate report: {len(components)} energy-by-component bars")
    else:
        expect_parts("generate report prefill energy", components[0],
                     stats["prefill"]["energy"]["by_component_j"])
        expect_parts("generate report decode energy", components[1],
                     stats["decode"]["energy"]["by_component_j"])
    layers = [sum(v for _, v in r) for r in chart_rows("layers")]
    if not layers or layers != sorted(layers, reverse=True) or \
            layers[0] != max(l["cycles"] for l in stats["decode"]["layers"]):
        failures.append(f"generate report: slowest layers {layers[:5]}")
    rows = browser.find_element(By.ID, "steps").find_elements(By.CSS_SELECTOR, "tbody tr")
    if len(rows) != len(steps) or len(steps) != 4:
        failures.append(f"generate report: {len(rows)} rows, {len(steps)} programs")
    return len(steps)


def check_train_report(browser, tmp, failures, chart_rows, expect_parts, expect_total):
    """npusim train --html of six Adam steps of digits-mlp on the digits (held-out accuracy every
    three steps): the loss line over every step, the held-out points equal to stats.json, the
    step's phases adding up to its cycles, the energy chart equal to the first step's
    energy.by_component_j, the off-chip memory parts adding up to the peak. Returns the steps."""
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    data, out, html = (os.path.join(tmp, n) for n in ("digits", "train", "train.html"))
    p = subprocess.run([sys.executable, os.path.join(repo, "scripts", "digits_dataset.py"), data],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        failures.append(f"digits_dataset.py exited {p.returncode}: {p.stderr}")
        return 0
    p = subprocess.run([NPUSIM, "train", "--hw", "tpu-v4-like-core", "--workload",
                        os.path.join(repo, "workloads", "training", "digits-mlp.json"),
                        "--data", data, "--batch", "16", "--steps", "6", "--optimizer", "adam",
                        "--lr", "0.001", "--eval-every", "3", "--html", html, "--out", out],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        failures.append(f"npusim train exited {p.returncode}: {p.stderr}")
        return 0
    with open(os.path.join(out, "stats.json")) as f:
        stats = json.load(f)
    t = stats["training"]
    browser.get("file://" + html)
    title = browser.find_element(By.ID, "title").text
    if "digits-mlp" not in title or "tpu-v4-like-core" not in title:
        failures.append(f"train report title is '{title}'")
    line = browser.find_element(By.CSS_SELECTOR, "#loss polyline[data-series=loss]")
    if int(line.get_attribute("data-points")) != len(t["loss"]) or len(t["loss"]) != 6:
        failures.append(f"train report: the loss line has {line.get_attribute('data-points')} "
                        f"points, stats.json {len(t['loss'])} steps")
    points = [(int(c.get_attribute("data-step")), float(c.get_attribute("data-accuracy")))
              for c in browser.find_elements(By.CSS_SELECTOR, "#loss circle[data-step]")]
    if points != [(h["step"], h["accuracy"]) for h in t["heldout"]] or len(points) != 2:
        failures.append(f"train report: held-out points {points}, stats.json {t['heldout']}")
    phases = chart_rows("phases")
    if len(phases) != 1:
        failures.append(f"train report: {len(phases)} phase bars")
    else:
        expect_total("train report phases", phases[0], t["step_cycles"])
    energy = chart_rows("energy")
    first = stats["first_step"]["energy"]
    if len(energy) != 1:
        failures.append(f"train report: {len(energy)} energy bars")
    else:
        expect_parts("train report energy", energy[0], first["by_component_j"])
        expect_total("train report energy", energy[0], first["total_j"])
    offchip = chart_rows("offchip")
    if len(offchip) != 1:
        failures.append(f"train report: {len(offchip)} off-chip memory bars")
    else:
        expect_total("train report off-chip memory", offchip[0], t["offchip"]["peak_bytes"])
    rows = browser.find_element(By.ID, "steps").find_elements(By.CSS_SELECTOR, "tbody tr")
    if len(rows) != 6:
        failures.append(f"train report: {len(rows)} rows in the steps table")
    return len(t["loss"])


with tempfile.TemporaryDirectory() as tmp:
    report = os.path.join(tmp, "report.html")
    out = os.path.join(tmp, "out")
    p = subprocess.run([NPUSIM, "run", "--hw", "tpu-v1", "--workload", "mnist-cnn", "--html", report,
                        "--out", out], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"npusim exited {p.returncode}: {p.stderr}")
    with open(os.path.join(out, "stats.json")) as f:
        stats = json.load(f)
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--user-data-dir={os.path.join(tmp, 'profile')}", "--window-size=1400,2400"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(driver), options=opts)
    failures = []
    try:
        browser.set_page_load_timeout(20)
        browser.get("file://" + report)
        title = browser.find_element(By.ID, "title").text
        if "mnist-cnn" not in title:
            failures.append(f"title is '{title}'")
        timeline = browser.find_element(By.ID, "timeline")
        bars = timeline.find_elements(By.CSS_SELECTOR, "rect[data-layer]")
        if len(bars) < 10:
            failures.append(f"the timeline has {len(bars)} instruction bars")
        if int(timeline.get_attribute("height") or 0) < 50:
            failures.append("the timeline has no height")
        layers = browser.find_element(By.ID, "layer-chart").find_elements(By.TAG_NAME, "rect")
        if len(layers) < 5:
            failures.append(f"the per-layer chart has {len(layers)} bars")
        for chart in ("utilization", "roofline", "counters"):
            if not browser.find_element(By.ID, chart).find_elements(By.CSS_SELECTOR, "rect, path, circle"):
                failures.append(f"the {chart} chart is empty")
        # The energy, power and area charts: per chart, each row's segments (part, value).
        def chart_rows(chart_id):
            rows = []
            for g in browser.find_element(By.ID, chart_id).find_elements(By.CSS_SELECTOR, "g[data-row]"):
                rows.append([(r.get_attribute("data-part"), float(r.get_attribute("data-value")))
                             for r in g.find_elements(By.CSS_SELECTOR, "rect[data-part]")])
            return rows

        def expect_parts(what, parts, expected):
            """`parts` must be exactly `expected` (name -> value), and add up to its total."""
            got = dict(parts)
            if len(got) != len(parts) or set(got) != set(expected):
                failures.append(f"{what}: parts {sorted(got)}, stats.json has {sorted(expected)}")
                return
            for k, v in expected.items():
                if not math.isclose(got[k], v, rel_tol=1e-12, abs_tol=1e-300):
                    failures.append(f"{what}: {k} is {got[k]}, stats.json {v}")

        def expect_total(what, parts, total):
            s = sum(v for _, v in parts)
            if not math.isclose(s, total, rel_tol=1e-9):
                failures.append(f"{what}: the segments add up to {s}, stats.json says {total}")

        energy_rows = chart_rows("energy-components")
        power_rows = chart_rows("power-components")
        area_rows = chart_rows("area-components")
        layer_rows = chart_rows("layer-energy")
        if len(energy_rows) != 1 or len(power_rows) != 2 or len(area_rows) != 1:
            failures.append(f"energy/power/area charts have {len(energy_rows)}, {len(power_rows)}, "
                            f"{len(area_rows)} bars (expected 1, 2, 1)")
        else:
            en, pw, ar = stats["energy"], stats["power"], stats["area"]
            expect_parts("energy chart", energy_rows[0], en["by_component_j"])
            expect_total("energy chart", energy_rows[0], en["total_j"])
            expect_parts("power chart", power_rows[0], pw["by_component_w"])
            expect_total("power chart", power_rows[0], pw["average_w"])
            expect_parts("idle/dynamic bar", power_rows[1],
                         {"idle": pw["idle_w"], "dynamic": pw["average_w"] - pw["idle_w"]})
            expect_total("idle/dynamic bar", power_rows[1], pw["average_w"])
            expect_parts("area chart", area_rows[0], ar["by_component_mm2"])
            expect_total("area chart", area_rows[0], ar["total_mm2"])
            peak = browser.find_element(By.ID, "power-components").find_elements(
                By.CSS_SELECTOR, "line[data-mark]")
            if len(peak) != 1 or float(peak[0].get_attribute("data-mark")) != pw["peak_w"]:
                failures.append("the power chart does not mark power.peak_w")
        if len(layer_rows) != len(stats["layers"]):
            failures.append(f"the per-layer energy chart has {len(layer_rows)} bars, "
                            f"stats.json {len(stats['layers'])} layers")
        else:
            for i, (row, layer) in enumerate(zip(layer_rows, stats["layers"])):
                expect_parts(f"layer {i} energy", row, layer["energy_by_component_j"])
                expect_total(f"layer {i} energy", row, layer["energy_j"])
            layer_sum = sum(l["energy_j"] for l in stats["layers"])
            if not math.isclose(layer_sum, stats["energy"]["total_j"], rel_tol=1e-9):
                failures.append(f"the layers' energy adds up to {layer_sum}, "
                                f"total_j is {stats['energy']['total_j']}")
        os.makedirs(os.path.dirname(os.path.abspath(SHOT)), exist_ok=True)
        browser.save_screenshot(SHOT)
        serve_requests = check_serve_report(browser, tmp, failures)
        train_steps = check_train_report(browser, tmp, failures, chart_rows, expect_parts,
                                         expect_total)
        generate_programs = check_generate_report(browser, tmp, failures, chart_rows,
                                                  expect_parts)
        logs = browser.get_log("browser")
        for entry in logs:
            if entry.get("level") in ("SEVERE", "WARNING"):
                failures.append(f"console: {entry.get('level')}: {entry.get('message')}")
    finally:
        browser.quit()
    if failures:
        for f in failures:
            print("FAIL:", f)
        sys.exit(1)
    print(f"browser test passed: {len(bars)} timeline bars, {len(layers)} layer bars, "
          f"energy/power/area charts equal to stats.json ({len(layer_rows)} layers), "
          f"{len(logs)} console messages, screenshot {SHOT}; the serve report draws its "
          f"{serve_requests} requests and their percentiles; the train report its "
          f"{train_steps} steps; the generate report its {generate_programs} programs")
