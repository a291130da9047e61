#!/usr/bin/env python3
"""Opens the HTML report of an mnist-cnn run in headless Chromium (Debian's chromium and
chromium-driver through python3-selenium; a fresh profile directory, no sandbox) from a file://
URL, finds the timeline and the per-layer chart with their bars, checks the energy, power and area
charts against the run's stats.json (each stacked bar's segments add up to the figure stats.json
gives: energy.total_j, power.average_w and idle_w, area.total_mm2, every layer's energy_j), fails on
any JavaScript console message of level SEVERE or WARNING, and saves a screenshot. Skips (exit 77) only when chromium
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
        logs = browser.get_log("browser")
        for entry in logs:
            if entry.get("level") in ("SEVERE", "WARNING"):
                failures.append(f"console: {entry.get('level')}: {entry.get('message')}")
        os.makedirs(os.path.dirname(os.path.abspath(SHOT)), exist_ok=True)
        browser.save_screenshot(SHOT)
    finally:
        browser.quit()
    if failures:
        for f in failures:
            print("FAIL:", f)
        sys.exit(1)
    print(f"browser test passed: {len(bars)} timeline bars, {len(layers)} layer bars, "
          f"energy/power/area charts equal to stats.json ({len(layer_rows)} layers), "
          f"{len(logs)} console messages, screenshot {SHOT}")
