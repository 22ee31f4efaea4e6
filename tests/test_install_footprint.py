"""The installed distribution exposes one import name, ``tidemark`` (issue 24, item 1).

The repository keeps its folders (server/, protocol/, storage/); installed, they are ``tidemark``,
``tidemark.protocol`` and ``tidemark.storage``, so an application with its own ``server.py``,
``storage/`` or ``protocol/`` installs Tidemark beside them: its modules stay its own, and the console
script, ``python -m tidemark`` and the pytest plugin work in its virtualenv.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest
from harness import PYTHON, ROOT

FOLDERS = {"tidemark": "server", "tidemark.protocol": "protocol", "tidemark.storage": "storage"}


def _package_folders() -> dict[str, Path]:
    """Every package of the repository (a folder with ``__init__.py``) under its import name."""
    found = {}
    for name, folder in FOLDERS.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            relative = init.parent.relative_to(base).parts
            found[".".join((name, *relative))] = init.parent
    return found


def test_pyproject_lists_every_package_under_the_one_import_name():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == FOLDERS
    assert sorted(setuptools["packages"]) == sorted(_package_folders())


def test_the_editable_install_resolves_tidemark_to_the_repository_folders():
    code = ("import importlib.util as u, tidemark, tidemark.protocol, tidemark.storage; "
            "print(tidemark.__file__, tidemark.protocol.__file__, tidemark.storage.__file__, "
            "u.find_spec('server'), u.find_spec('storage'), u.find_spec('protocol'))")
    # run outside the repository, where its folders are not on sys.path through the working directory
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, check=True, cwd="/").stdout.split()
    assert out[:3] == [str(ROOT / f / "__init__.py") for f in ("server", "protocol", "storage")]
    assert out[3:] == ["None", "None", "None"]


APP_TEST = '''
import server, storage, protocol  # the application's own modules, not Tidemark's


def test_the_application_keeps_its_own_modules():
    assert (server.WHOSE, storage.WHOSE, protocol.WHOSE) == ("app", "app", "app")


def test_the_plugin_serves_a_time_series_collection(tidemark_db):
    import datetime as dt

    tidemark_db.create_collection("weather", timeseries={"timeField": "t", "metaField": "m"})
    tidemark_db.weather.insert_many([{"t": dt.datetime(2024, 1, 1, h), "m": "x", "v": h} for h in range(3)])
    assert [d["v"] for d in tidemark_db.weather.find(sort=[("t", 1)])] == [0, 1, 2]
    names = tidemark_db.list_collection_names()
    assert "weather" in names and "system.buckets.weather" in names
'''


@pytest.mark.slow
def test_the_wheel_installs_beside_an_application_with_its_own_server_storage_and_protocol(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([PYTHON, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "-w", str(wheels), str(ROOT)], check=True, timeout=300, capture_output=True)
    (wheel,) = wheels.glob("tidemark-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        top_level = {name.split("/")[0] for name in archive.namelist()}
    assert top_level == {"tidemark", wheel.name.split("-py3")[0] + ".dist-info"}

    app = tmp_path / "app"
    for package in ("storage", "protocol"):
        (app / package).mkdir(parents=True)
        (app / package / "__init__.py").write_text('WHOSE = "app"\n')
    (app / "server.py").write_text('WHOSE = "app"\n')
    (app / "test_app.py").write_text(textwrap.dedent(APP_TEST))

    venv = tmp_path / "venv"
    subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel),
                    "pytest"], check=True, timeout=600, capture_output=True)

    for launcher in ([python, "-m", "tidemark", "--version"], [str(venv / "bin" / "tidemark"), "--version"]):
        result = subprocess.run(launcher, cwd=app, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("db version v7.0.0")

    run = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_app.py"], cwd=app,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout
