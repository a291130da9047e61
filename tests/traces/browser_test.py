#!/usr/bin/env python3
"""Opens the HTML report of an mnist-cnn run in headless Chromium (Debian's chromium and
chromium-driver through python3-selenium; a fresh profile directory, no sandbox) from a file://
URL, finds the timeline and the per-layer chart with their bars, fails on any JavaScript console
message of level SEVERE or WARNING, and saves a screenshot. Skips (exit 77) only when chromium
or chromedriver is not installed. Usage: browser_test.py NPUSIM SCREENSHOT_PNG"""
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
    p = subprocess.run([NPUSIM, "run", "--hw", "tpu-v1", "--workload", "mnist-cnn", "--html", report],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"npusim exited {p.returncode}: {p.stderr}")
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
          f"{len(logs)} console messages, screenshot {SHOT}")
