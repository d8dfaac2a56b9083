"""Browser tests: a real JupyterLab, driven by Playwright in Debian's headless Chromium.

``lab`` starts ``jupyter lab`` on 127.0.0.1 with a random token and a free
port, in a temporary root with its own workspace and settings folders (so a
test never sees a user's layout; the settings override the package ships
keeps the news toast away), and with the app exposed to the page
(``expose_app_in_browser``) so a test can run a notebook's cells through
JupyterLab's own commands and wait for them to finish.  ``page`` opens a
notebook there in Chromium (``/usr/bin/chromium``, never a downloaded
browser).  Screenshots go to ``test-output/browser/``.

``standin_page`` needs no JupyterLab: it opens ``labextension/standin.html``, the
built widget module with a stand-in anywidget model, served from the
repository root, and the test sets the model's traits itself (states that a
notebook cannot easily make, such as runs on a simulated GPU).

The tests skip, saying why, where Chromium or the built front end is
missing; ``.ci/run`` installs both, so in CI they always run.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "test-output" / "browser"
# installed as lab/settings/overrides.json
OVERRIDES = ROOT / "labextension" / "settings" / "overrides.json"
# every box drawn in a view (.flowbook-graph) against its viewport: which lie outside, what was framed
OUTSIDE_JS = """(root) => {
  const vp = root.querySelector('.fb-viewport').getBoundingClientRect();
  const nodes = [...root.querySelectorAll('.fb-scene .fb-node')];
  const out = nodes.filter(n => {
    const r = n.getBoundingClientRect();
    return r.left < vp.left - 1 || r.right > vp.right + 1 || r.top < vp.top - 1 || r.bottom > vp.bottom + 1;
  }).map(n => n.dataset.name);
  const d = root.dataset;
  return { drawn: nodes.length, out, vp: [vp.width, vp.height], framed: d.flowbookFramed,
           size: d.flowbookLayoutSize, transform: root.querySelector('.fb-scene').getAttribute('transform') };
}"""
STARTUP_S = 120  # the longest wait for JupyterLab to answer
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def _missing() -> str | None:
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} is missing (.ci/run installs Debian's chromium)"
    import flowbook

    static = Path(flowbook.__file__).parent / "static" / "graph-widget.js"
    if not static.exists():
        return f"the widget front end is not built ({static}); run pip install -e ."
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing (pip install -e '.[test]')"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab server in its own temporary root.

    By default it runs on this process's Python with its environment; ``python``
    and ``env`` name another interpreter and the whole environment to start it in
    (an installed wheel's, say: ``test_installed_wheel.py``); ``app`` the server to
    start: ``jupyterlab``, or ``notebook`` (Jupyter Notebook 7, ``test_notebook7.py``).
    """

    APPS = {"jupyterlab": "LabApp", "notebook": "JupyterNotebookApp"}  # module: its config class

    def __init__(
        self, python: str | None = None, env: dict[str, str] | None = None, app: str = "jupyterlab"
    ) -> None:
        cls = self.APPS[app]
        self.root = Path(tempfile.mkdtemp(prefix="flowbook-lab-"))
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (self.root / ".settings").mkdir()
        env = {
            **(os.environ if env is None else env),
            "JUPYTERLAB_SETTINGS_DIR": str(self.root / ".settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(self.root / ".workspaces"),
            "JUPYTER_RUNTIME_DIR": str(self.root / ".runtime"),
            "OPENBLAS_NUM_THREADS": "1",
        }
        self.log = open(self.root / "lab.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                python or sys.executable,
                "-m",
                app,
                "--no-browser",
                f"--ServerApp.token={self.token}",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--ServerApp.root_dir={self.root}",
                f"--{cls}.expose_app_in_browser=True",
                "--ServerApp.disable_check_xsrf=False",
                "--ServerApp.allow_root=True",  # CI machines run as root
                # JupyterLab's news and update toasts stay off by the settings override the
                # package installs (share/jupyter/lab/settings/overrides.json); from this
                # checkout, the override file itself, installed or not
                *([] if python else [f"--{cls}.app_settings_dir={OVERRIDES.parent}"]),
            ],
            cwd=self.root,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited: {(self.root / 'lab.log').read_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"jupyter lab did not answer in {STARTUP_S} s")

    def notebook(self, name: str, sources: list[str], kernel: str = "flowbook") -> str:
        """Write a notebook of code cells; its URL, token included."""
        display = {"flowbook": "Flowbook (Python 3)", "python3": "Python 3 (ipykernel)"}[kernel]
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
        nb.metadata["kernelspec"] = {"name": kernel, "display_name": display, "language": "python"}
        nbformat.write(nb, self.root / name)
        # its own workspace, so the page opens this notebook alone (no tabs restored from
        # an earlier test's page)
        workspace = Path(name).stem
        return f"{self.url}/lab/workspaces/{workspace}/tree/{name}?token={self.token}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def lab():
    reason = _missing()
    if reason:
        pytest.skip(reason)
    server = Lab()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def chromium():
    """Headless Chromium, one for the session (a process holds one sync Playwright at a time)."""
    reason = _missing()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:  # Playwright gives the browser a fresh temporary profile
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def browser(lab, chromium):
    return chromium


class Notebook:
    """A notebook open in JupyterLab, with helpers that run its cells and read the widget."""

    def __init__(self, page, name: str) -> None:
        self.page = page
        self.name = name

    def _panel_js(self) -> str:
        """JS that finds this notebook's panel by its path (not whichever tab has focus)."""
        return (
            "const app = window.jupyterapp;"
            "const panel = app && [...app.shell.widgets('main')]"
            f".find(w => w.context && w.context.path === {json.dumps(self.name)});"
        )

    def wait_kernel_idle(self, timeout_s: float = 120) -> None:
        self.page.wait_for_function(
            "() => {"
            + self._panel_js()
            + """
                const k = panel && panel.sessionContext && panel.sessionContext.session
                    && panel.sessionContext.session.kernel;
                return !!k && k.status === 'idle';
            }""",
            timeout=timeout_s * 1000,
        )

    def run(self, i: int, timeout_s: float = 120) -> None:
        """Run cell ``i`` the way Shift+Enter does, and wait until it finished."""
        before = self.page.evaluate(
            "(i) => {"
            + self._panel_js()
            + "return panel.content.widgets[i].model.executionCount; }",
            i,
        )
        self.page.evaluate(
            "async (i) => {"
            + self._panel_js()
            + """
                app.shell.activateById(panel.id);
                panel.content.activeCellIndex = i;
                await app.commands.execute('notebook:run-cell');
            }""",
            i,
        )
        self.page.wait_for_function(  # the cell got a new execution count: it ran
            "([i, before]) => {"
            + self._panel_js()
            + """
                const n = panel.content.widgets[i].model.executionCount;
                return n !== null && n !== before;
            }""",
            arg=[i, before],
            timeout=timeout_s * 1000,
        )
        self.wait_kernel_idle(timeout_s)

    def set_source(self, i: int, source: str) -> None:
        self.page.evaluate(
            "([i, s]) => {"
            + self._panel_js()
            + """
                panel.content.widgets[i].model.sharedModel.setSource(s);
            }""",
            [i, source],
        )

    def cell(self, i: int):
        return self.page.locator(".jp-Notebook .jp-Cell").nth(i)

    def widget(self, i: int):
        """The graph widget in cell ``i``'s output."""
        return self.cell(i).locator("[data-flowbook-nodes]").first

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.failed_call = report.failed  # read by open_notebook's teardown
    return report


@pytest.fixture
def open_notebook(request, lab, browser):
    pages = []

    def open_(
        name: str,
        sources: list[str],
        kernel: str = "flowbook",
        size: tuple[int, int] = (1500, 1000),
    ) -> Notebook:
        page = browser.new_page(viewport={"width": size[0], "height": size[1]})
        pages.append(page)
        page.goto(lab.notebook(name, sources, kernel))
        nb = Notebook(page, name)
        nb.wait_kernel_idle()
        return nb

    yield open_
    for k, page in enumerate(pages):
        if getattr(request.node, "failed_call", False):  # what the page showed when it failed
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"FAILED-{request.node.name}-{k}.png"))
        page.close()


# ------------------------------------------------------------- stand-in page, no JupyterLab
class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="session")
def standin(chromium):
    """The browser and the URL of the stand-in widget page (no JupyterLab)."""
    handler = functools.partial(_Quiet, directory=str(ROOT))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/labextension/standin.html"
    yield chromium, url
    server.shutdown()
    server.server_close()


@pytest.fixture
def standin_page(request, standin):
    """The stand-in page, loaded: ``page.evaluate("([k, v]) => flowbookPage.set(k, v)", ...)``."""
    browser, url = standin
    page = browser.new_page(viewport={"width": 1200, "height": 700})
    page.goto(url + "?height=660")
    page.wait_for_function("() => window.flowbookPage !== undefined")
    yield page
    if getattr(request.node, "failed_call", False):
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"FAILED-{request.node.name}.png"))
    page.close()
