"""Loads meshtune's HTML pages in headless Chromium (Selenium + chromedriver) and checks them.

Usage: browser_check.py REPORT_FILE BASE_URL USER_DATA_DIR RANK_CELLS TUNE_JSON

REPORT_FILE is a report written by `meshtune tune --report` of a tune that measured
candidates; BASE_URL is a meshtuned --http address ("http://127.0.0.1:PORT/") over a database
holding that tune's record 1; RANK_CELLS the cells its sharding pictures have; TUNE_JSON that
tune's result (`tune --json`, a TuneResult). For each page: the elements that must be there
(by id and class), every <svg> drawn (child elements and a non-empty box), a box drawn with a
width per measured run with a sample (candidates and library configurations of TUNE_JSON),
and no console message at level SEVERE. Prints one line per check; exit status 1 when any
failed.
"""

import json
import sys

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1280,2000",
]

REPORT_IDS = ["problem", "winner", "trace", "pseudocode", "transfers", "sharding", "curve",
              "measured", "side-by-side", "lower-bound", "pruning", "lower-bound-ratio"]

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def svgs_drawn(driver, page):
    svgs = driver.find_elements(By.TAG_NAME, "svg")
    for i, svg in enumerate(svgs):
        children = driver.execute_script("return arguments[0].querySelectorAll('*').length", svg)
        box = svg.size
        check(children > 0 and box["width"] > 0 and box["height"] > 0,
              "%s: svg %d (%s) drawn: %d elements, %dx%d" %
              (page, i, svg.get_attribute("class"), children, box["width"], box["height"]))
    return svgs


def console_clean(driver, page, allowed=()):
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    errors = [e for e in errors if not any(a in e["message"] for a in allowed)]
    check(not errors, "%s: no console errors %s" % (page, [e["message"] for e in errors]))


def load(driver, url, page):
    driver.get(url)
    check(driver.execute_script("return document.readyState") == "complete",
          "%s: loaded %s" % (page, url))


def sampled_runs(result):
    """The sample sizes of the runs of `result` (a TuneResult as JSON) the report draws as
    boxes: verified, not refused as implausible, with a sample; candidates, then the library."""
    runs = list(result.get("measurements", [])) + list(result.get("library", []))
    return [r["sample"]["n"] for r in runs
            if r.get("verified") and not r.get("implausible") and r.get("sample", {}).get("n", 0) > 0]


def check_boxes(driver, page, result):
    want = sampled_runs(result)
    boxes = driver.find_elements(By.CSS_SELECTOR, "#side-by-side svg.boxes g.box")
    check(len(want) > 0 and len(boxes) == len(want),
          "%s: %d boxes for %d measured runs with a sample" % (page, len(boxes), len(want)))
    ns = [int(b.get_attribute("data-n")) for b in boxes]
    check(ns == want, "%s: boxes of n %s (want %s)" % (page, ns, want))
    for b in boxes:
        label = b.get_attribute("data-label")
        iqr = b.find_element(By.CSS_SELECTOR, "rect.iqr")
        band = b.find_element(By.CSS_SELECTOR, "rect.median-ci")
        widths = [driver.execute_script("return arguments[0].getBoundingClientRect().width", e)
                  for e in (b, iqr, band)]
        check(all(w > 0 for w in widths),
              "%s: box %s drawn, widths %s (row, quartiles, median's interval)" %
              (page, label, ["%.1f" % w for w in widths]))
        median = float(b.get_attribute("data-median"))
        check(float(b.get_attribute("data-q1")) <= median <= float(b.get_attribute("data-q3")),
              "%s: box %s: its median within its quartiles" % (page, label))
    answers = driver.find_elements(By.CSS_SELECTOR, "#side-by-side svg.boxes g.answer")
    check(len(answers) == 1, "%s: %d highlighted answer" % (page, len(answers)))
    labels = [b.get_attribute("data-label") for b in boxes]
    comparison = result.get("comparison")
    if comparison:
        check(comparison["leader"] in labels and comparison["runner_up"] in labels,
              "%s: the compared %s and %s among the boxes %s" %
              (page, comparison["leader"], comparison["runner_up"], labels))
        decision = driver.find_element(By.ID, "decision").text
        check(comparison["leader"] in decision and "95% interval" in decision,
              "%s: the decision: %s" % (page, decision))


def check_report(driver, page, rank_cells, result):
    for element_id in REPORT_IDS:
        check(len(driver.find_elements(By.ID, element_id)) == 1, "%s: #%s" % (page, element_id))
    cells = driver.find_elements(By.CSS_SELECTOR, "svg.sharding rect.rank-cell")
    check(len(cells) == rank_cells, "%s: %d rank cells (want %d)" % (page, len(cells), rank_cells))
    predicted = int(driver.find_element(By.ID, "curve-points-predicted").text)
    circles = driver.find_elements(By.CSS_SELECTOR, "svg.curve circle.curve-point.predicted")
    check(predicted > 0 and len(circles) == predicted,
          "%s: %d curve points drawn for %d stored" % (page, len(circles), predicted))
    measured = int(driver.find_element(By.ID, "curve-points-measured").text)
    circles = driver.find_elements(By.CSS_SELECTOR, "svg.curve circle.curve-point.measured")
    check(measured > 0 and len(circles) == measured,
          "%s: %d measured curve points drawn for %d stored" % (page, len(circles), measured))
    points = driver.find_elements(By.CSS_SELECTOR, "svg.scatter circle.point")
    rows = driver.find_elements(By.CSS_SELECTOR, "#measurements tr.measurement")
    check(len(rows) > 0 and 0 < len(points) <= len(rows),
          "%s: %d measured candidates, %d in the scatter" % (page, len(rows), len(points)))
    trace = driver.find_element(By.ID, "trace").text
    check("distribute(" in trace and "tensorize(" in trace, "%s: the winner's trace" % page)
    svgs = svgs_drawn(driver, page)
    classes = [s.get_attribute("class") for s in svgs]
    check(classes.count("sharding") == 3 and "curve" in classes and "scatter" in classes and
          "boxes" in classes, "%s: sharding, curve, scatter and boxes svgs %s" % (page, classes))
    check_boxes(driver, page, result)


def main():
    report, base, user_data = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3]
    rank_cells = int(sys.argv[4])
    with open(sys.argv[5]) as f:
        result = json.loads(f.read())
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in FLAGS + ["--user-data-dir=" + user_data]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"),
                              options=options)
    try:
        load(driver, "file://" + report, "report file")
        check_report(driver, "report file", rank_cells, result)
        console_clean(driver, "report file")

        load(driver, base + "/", "index")
        links = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "#links a")]
        check(base + "/records" in links and base + "/tunes" in links, "index: links %s" % links)
        console_clean(driver, "index")

        load(driver, base + "/records", "records")
        rows = driver.find_elements(By.CSS_SELECTOR, "#records tr.record")
        check(len(rows) == 1, "records: %d rows" % len(rows))
        driver.find_element(By.LINK_TEXT, "1").click()
        check(driver.current_url == base + "/records/1", "records: link to " + driver.current_url)
        check(len(driver.find_elements(By.ID, "nav")) == 1, "record 1: navigation")
        check_report(driver, "record 1", rank_cells, result)
        console_clean(driver, "records and record 1")

        load(driver, base + "/tunes", "tunes")
        check(len(driver.find_elements(By.ID, "no-tunes")) + len(driver.find_elements(By.ID, "tunes")) == 1,
              "tunes: the table or the note that none runs")
        console_clean(driver, "tunes")

        load(driver, base + "/records/99", "missing record")
        check("no tuning record with id 99" in driver.find_element(By.ID, "error").text,
              "missing record: says so")
        # The one console error allowed: the 404 status of the page itself.
        console_clean(driver, "missing record",
                      allowed=("the server responded with a status of 404",))
    finally:
        driver.quit()
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
