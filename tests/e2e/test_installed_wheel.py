"""The installed wheel in a real JupyterLab, on a machine without Node.js.

``bash .ci/wheel`` builds the sdist and, from it, the wheel (``python -m
build``), installs the wheel into a fresh virtual environment while Node.js is
absent from ``PATH``, and runs this module with ``FLOWBOOK_WHEEL_VENV`` naming
that environment.  Without it the module skips.

The server runs on that environment's Python (``Lab(python=...)``), with a
``PATH`` that holds no Node.js (a folder of links to the programs in
``/usr/bin`` less ``node``, ``npm`` and their kin) and with Jupyter's user
folders pointed at empty temporary ones.  So whatever the page shows came
from the wheel's files: the "Flowbook (Python 3)" kernelspec and the
labextension (the side panel) from its shared data, the graph widget's
bundle from ``flowbook/static`` in its ``site-packages``.  The kernel says
where ``flowbook`` was imported from, and that must be the environment's
``site-packages``, never this source tree.

Chromium is driven from this process (the development environment, which has
Playwright).  Where a piece of the front end is missing from the wheel the
tests fail saying which: the cell's error when the widget's bundle is absent,
the page's extension list when the labextension is.  Screenshots at 1600x1000
and 1024x768 land in ``test-output/browser/wheel-*.png``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, SHOTS, Lab, Notebook

pytestmark = pytest.mark.browser

VENV = os.environ.get("FLOWBOOK_WHEEL_VENV", "")
NODE_TOOLS = {"node", "nodejs", "npm", "npx", "corepack", "yarn", "yarnpkg"}
SYSTEM_BINS = ("/usr/bin", "/bin")
KERNEL_S = 180  # the longest wait for the kernel (its first start imports numpy, sklearn, ...)
LARGE, SMALL = (1600, 1000), (1024, 768)

CELLS = [
    "import os, sys\nimport flowbook as tf\nprint(os.path.realpath(tf.__file__))\nprint(sys.executable)",
    "import numpy as np\n"
    'x = tf.placeholder(tf.float32, [None, 3], name="x")\n'
    'W = tf.Variable(np.ones((3, 2), np.float32), name="W")\n'
    'y = tf.matmul(x, W, name="y")\n'
    'loss = tf.reduce_sum(y * y, name="loss")\n'
    "tf.show()",
    "sess = tf.Session()\nsess.run(tf.global_variables_initializer())\n"
    "print(sess.run(loss, {x: np.ones((4, 3), np.float32)}))",  # 4 rows x 2 columns of 3*3 = 72
]


def path_without_node(farm: Path) -> str:
    """A folder of links to the system's programs, Node.js's tools left out: a ``PATH``."""
    farm.mkdir(parents=True, exist_ok=True)
    for folder in SYSTEM_BINS:
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = farm / entry.name
            if entry.name not in NODE_TOOLS and not link.is_symlink():
                link.symlink_to(entry.path)
    return str(farm)


@pytest.fixture(scope="module")
def venv() -> Path:
    if not VENV:
        pytest.skip(
            "FLOWBOOK_WHEEL_VENV is not set: `bash .ci/wheel` builds the wheel, "
            "installs it in a fresh environment without Node.js and runs these tests"
        )
    path = Path(VENV).resolve()
    assert (path / "bin" / "python").exists(), f"FLOWBOOK_WHEEL_VENV={VENV} holds no bin/python"
    return path


@pytest.fixture(scope="module")
def wheel_env(venv, tmp_path_factory) -> dict[str, str]:
    """The environment the wheel's JupyterLab runs in: its venv first, no Node.js anywhere."""
    tmp = tmp_path_factory.mktemp("wheel-env")
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        PATH=os.pathsep.join([str(venv / "bin"), path_without_node(tmp / "bin")]),
        VIRTUAL_ENV=str(venv),
        JUPYTER_DATA_DIR=str(tmp / "data"),  # no user kernelspecs or labextensions
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        IPYTHONDIR=str(tmp / "ipython"),  # no user profile's startup files
    )
    assert shutil.which("node", path=env["PATH"]) is None, "node is still on the wheel's PATH"
    return env


@pytest.fixture(scope="module")
def wheel_lab(venv, wheel_env):
    server = Lab(python=str(venv / "bin" / "python"), env=wheel_env)
    yield server
    server.stop()


def jupyter(venv: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """Run the wheel environment's ``jupyter`` command."""
    return subprocess.run(
        [str(venv / "bin" / "jupyter"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def served_kernelspecs(lab: Lab) -> dict:
    with urllib.request.urlopen(f"{lab.url}/api/kernelspecs?token={lab.token}", timeout=30) as r:
        return json.load(r)["kernelspecs"]


def test_the_kernelspec_and_the_labextension_are_the_wheels(venv, wheel_env, wheel_lab):
    listed = jupyter(venv, wheel_env, "kernelspec", "list", "--json").stdout
    specs = json.loads(listed)["kernelspecs"]
    assert "flowbook" in specs, f"no flowbook kernelspec: {sorted(specs)}"
    spec_dir = Path(specs["flowbook"]["resource_dir"]).resolve()
    assert spec_dir == venv / "share" / "jupyter" / "kernels" / "flowbook"
    assert specs["flowbook"]["spec"]["display_name"] == "Flowbook (Python 3)"

    # `jupyter labextension list`: a folder's line, then the extensions found there
    folder, found = None, None
    listed = jupyter(venv, wheel_env, "labextension", "list")
    for line in (listed.stdout + listed.stderr).splitlines():
        if line.strip() and not line[0].isspace():
            folder = line.strip()
        elif line.split()[:1] == ["flowbook"]:
            found = (folder, line.strip())
    assert found, "flowbook's labextension is not installed"
    assert Path(found[0]).resolve() == venv / "share" / "jupyter" / "labextensions", found
    assert "enabled" in found[1] and "OK" in found[1], found

    served = served_kernelspecs(wheel_lab)
    assert served["flowbook"]["spec"]["display_name"] == "Flowbook (Python 3)"

    # the settings override that keeps JupyterLab's news toast away
    overrides = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    notification = json.loads(overrides.read_text())["@jupyterlab/apputils-extension:notification"]
    assert notification["fetchNews"] == "false"


@pytest.fixture
def page(request, chromium, wheel_lab):
    page = chromium.new_page(viewport={"width": LARGE[0], "height": LARGE[1]})
    yield page
    if getattr(request.node, "failed_call", False):  # what the page showed when it failed
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"FAILED-{request.node.name}.png"))
    page.close()


def output_of(nb: Notebook, i: int) -> str:
    return "\n".join(nb.cell(i).locator(".jp-OutputArea-output").all_inner_texts())


def run_ok(nb: Notebook, i: int) -> None:
    """Run cell ``i``; fail at once, with the end of its traceback, if it raised."""
    nb.run(i, KERNEL_S)
    raised = nb.page.evaluate(
        "(i) => {" + nb._panel_js() + "return panel.content.widgets[i].model.outputs.toJSON()"
        ".some(o => o.output_type === 'error'); }",
        i,
    )
    if raised:
        tail = "\n".join(output_of(nb, i).splitlines()[-12:])
        raise AssertionError(f"cell {i} raised:\n{tail}")


def shot(nb: Notebook, name: str, size: tuple[int, int], view) -> None:
    """A screenshot at ``size``, the in-cell graph ``view`` scrolled into sight."""
    nb.page.set_viewport_size({"width": size[0], "height": size[1]})
    nb.page.wait_for_timeout(700)  # the graphs refit to their new boxes
    view.scroll_into_view_if_needed()
    nb.shot(f"wheel-{name}-{size[0]}x{size[1]}")


def test_a_notebook_shows_the_live_graph_from_the_wheel(venv, wheel_lab, page):
    specs = served_kernelspecs(wheel_lab)  # else the page would wait on a kernel picker
    assert "flowbook" in specs, f"the server offers no flowbook kernel: {sorted(specs)}"
    page.goto(wheel_lab.notebook("wheel.ipynb", CELLS))
    nb = Notebook(page, "wheel.ipynb")
    nb.wait_kernel_idle(KERNEL_S)

    # the page loaded the wheel's labextension, and the kernel is the wheel's kernelspec
    extensions = page.evaluate(
        "() => JSON.parse(document.getElementById('jupyter-config-data').textContent)"
        ".federated_extensions.map(e => e.name)"
    )
    assert "flowbook" in extensions, f"the page loaded no flowbook labextension: {extensions}"
    kernel = page.evaluate(
        "() => {" + nb._panel_js() + "const s = panel.sessionContext;"
        "return [s.session.kernel.name, s.kernelDisplayName]; }"
    )
    assert kernel == ["flowbook", "Flowbook (Python 3)"]

    run_ok(nb, 0)
    where, python = output_of(nb, 0).split()[:2]
    site = next((venv / "lib").glob("python3*/site-packages")).resolve()
    assert Path(where).is_relative_to(site), f"flowbook imported from {where}, not {site}"
    assert not Path(where).is_relative_to(ROOT)
    assert Path(python).parent == venv / "bin", python

    run_ok(nb, 1)
    widget = nb.widget(1)
    widget.wait_for(timeout=60_000)
    names = {"x", "W", "y", "loss"}
    page.wait_for_function(
        """([root, names]) => {
            const drawn = [...root.querySelectorAll('svg .fb-node')]
                .filter(n => n.getBoundingClientRect().width > 0).map(n => n.dataset.name);
            return names.every(n => drawn.includes(n));
        }""",
        arg=[widget.element_handle(), sorted(names)],
        timeout=30_000,
    )
    labels = widget.locator("svg .fb-node .fb-label").all_text_contents()
    assert names <= {t.strip() for t in labels}, labels

    # the side panel (the labextension): it opens by itself with this kernel, or on its command
    assert page.evaluate(
        "() => window.jupyterapp.commands.hasCommand('flowbook:open-graph-panel')"
    ), "the flowbook labextension's command is missing"
    panel = page.locator("#flowbook-graph-panel")
    if not panel.is_visible():
        page.evaluate("() => window.jupyterapp.commands.execute('flowbook:open-graph-panel')")
    panel.wait_for(state="visible", timeout=30_000)
    side = panel.locator(".flowbook-graph")
    page.wait_for_function(  # the ops of the cell that built and showed them, before any run
        """([root, names]) => names.every(n => root.querySelector(`.fb-node[data-name="${n}"]`))""",
        arg=[side.element_handle(timeout=30_000), sorted(names)],
        timeout=30_000,
    )
    shot(nb, "01-graph", LARGE, widget)

    run_ok(nb, 2)
    page.wait_for_function(  # the run lights the ops it ran, in the cell and in the panel
        """([roots, names]) => roots.every(root => names.every(n =>
            root.querySelector(`.fb-node[data-name="${n}"]`)?.dataset.status === 'done'))""",
        arg=[[widget.element_handle(), side.element_handle()], ["y", "loss"]],
        timeout=30_000,
    )
    assert widget.locator(".fb-time").count() > 0  # with its timings
    assert "72" in output_of(nb, 2)
    assert names <= set(
        side.locator(".fb-node").evaluate_all("els => els.map(e => e.dataset.name)")
    )
    shot(nb, "02-run", LARGE, widget)
    shot(nb, "02-run", SMALL, widget)

    # the kernel as the Launcher offers it
    page.evaluate("() => window.jupyterapp.commands.execute('launcher:create')")
    card = page.locator(".jp-Launcher .jp-LauncherCard", has_text="Flowbook (Python 3)").first
    card.wait_for(timeout=30_000)
    shot(nb, "03-launcher", SMALL, card)
