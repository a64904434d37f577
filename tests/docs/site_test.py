#!/usr/bin/env python3
"""docs.site: builds the documentation site (scripts/docs.sh: warnings are
errors, internal links checked), serves it on 127.0.0.1 and opens it in
headless Chromium:

- the C API page loads and names every hvd_* function libhvd exports
  (capi/hvd.map's rule, read from the built library with nm -D);
- the search page loads, and a search for hvd_allreduce_async finds the
  C API page (the search index works, not just the HTML);
- the Python, Java (javadoc) and Julia reference pages load with their
  content;
- screenshots of the C API and search pages go to BUILD/docs/screenshots/.
"""
import argparse
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading


def fail(msg):
    print("docs.site: FAIL: " + msg)
    sys.exit(1)


def exports(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    # "ADDRESS T hvd_init@@HVD_1": the symbol without its version
    names = sorted({m.group(1) for m in re.finditer(r"\sT\s+(hvd_\w+)(?:@@?\w+)?$", out, re.M)})
    if len(names) < 10:
        fail("only %d hvd_* exports in %s" % (len(names), lib))
    return names


class Browser:
    def __init__(self, chromium, base):
        self.chromium, self.base = chromium, base
        self.profile = tempfile.mkdtemp(prefix="hvd-docs-chromium-")

    def run(self, args, url, timeout=120):
        cmd = [self.chromium, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
               "--user-data-dir=" + self.profile, "--virtual-time-budget=15000"] + args + [
                   self.base + url]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            fail("chromium %s: exit %d\n%s" % (url, p.returncode, p.stderr[-2000:]))
        return p.stdout

    def dom(self, url):
        return self.run(["--dump-dom"], url)

    def screenshot(self, url, path):
        self.run(["--screenshot=" + path, "--window-size=1280,1000"], url)
        if not os.path.getsize(path):
            fail("empty screenshot " + path)
        print("docs.site: screenshot " + path)

    def close(self):
        shutil.rmtree(self.profile, ignore_errors=True)


def serve(directory):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--lib", required=True, help="the built libhvd.so")
    ap.add_argument("--chromium", default="chromium")
    a = ap.parse_args()

    r = subprocess.run(["bash", os.path.join(a.root, "scripts", "docs.sh"), a.build])
    if r.returncode != 0:
        fail("scripts/docs.sh exited with %d" % r.returncode)
    site = os.path.join(a.build, "docs", "html")
    shots = os.path.join(a.build, "docs", "screenshots")
    os.makedirs(shots, exist_ok=True)

    server = serve(site)
    browser = Browser(a.chromium, "http://127.0.0.1:%d/" % server.server_address[1])
    try:
        c_page = browser.dom("api/c.html")
        if "C API: hvd.h" not in c_page:
            fail("api/c.html did not load (no title)")
        names = exports(a.lib)
        missing = [n for n in names if 'id="c.%s"' % n not in c_page]
        if missing:
            fail("api/c.html lacks %d of libhvd's %d exports: %s"
                 % (len(missing), len(names), " ".join(missing)))
        print("docs.site: api/c.html documents all %d hvd_* exports" % len(names))

        found = browser.dom("search.html?q=hvd_allreduce_async")
        results = re.search(r'<ul class="search">(.*?)</ul>', found, re.S)
        if not results or "api/c.html" not in results.group(1):
            fail("searching hvd_allreduce_async did not find api/c.html")
        print("docs.site: search.html finds hvd_allreduce_async in api/c.html")

        for url, want in (("index.html", "Getting started"),
                          ("api/python.html", "DistributedOptimizer"),
                          ("api/julia.html", "allreduce!"),
                          ("java/org/hvd/Hvd.html", "allreduce")):
            if want not in browser.dom(url):
                fail("%s loaded without '%s'" % (url, want))
            print("docs.site: %s loads" % url)

        browser.screenshot("api/c.html", os.path.join(shots, "c-api.png"))
        browser.screenshot("search.html?q=hvd_allreduce_async", os.path.join(shots, "search.png"))
    finally:
        browser.close()
        server.shutdown()
    print("docs.site: PASS")


if __name__ == "__main__":
    main()
