"""Packaging and command line: pymongo's C bson, the console script, mongod-style flags and errors."""

from __future__ import annotations

import importlib.metadata
import socket
import subprocess

import pytest
from harness import PYTHON, ROOT


def _run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "tidemark", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def test_pymongo_bson_with_c_extension_is_used():
    import bson
    import pymongo

    assert bson.has_c()
    assert pymongo.has_c()
    assert bson.__file__.startswith(str(importlib.metadata.distribution("pymongo").locate_file("")))


def test_standalone_bson_package_is_not_installed():
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution("bson")


def test_console_script_tidemark_runs_python_m_tidemark():
    scripts = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="console_scripts")}
    assert scripts["tidemark"] == "tidemark.__main__:main"
    assert (ROOT / ".venv" / "bin" / "tidemark").exists()


def test_help_lists_mongod_style_flags():
    result = _run("--help")
    assert result.returncode == 0
    for flag in (
        "--port",
        "--bind_ip",
        "--dbpath",
        "--setParameter",
        "--logpath",
        "--quiet",
        "--config",
        "--storageCompressor",
    ):
        assert flag in result.stdout


def test_unknown_flag_exits_non_zero_with_a_message():
    result = _run("--no-such-flag")
    assert result.returncode == 2
    assert "--no-such-flag" in result.stderr


def test_bad_compressor_is_refused():
    result = _run("--storageCompressor", "lz4")
    assert result.returncode == 2
    assert "storageCompressor" in result.stderr


@pytest.mark.slow
def test_unknown_set_parameter_is_a_startup_error(tmp_path):
    result = _run("--port", "0", "--dbpath", str(tmp_path), "--setParameter", "noSuchParam=1")
    assert result.returncode == 2
    assert "noSuchParam" in result.stderr


@pytest.mark.slow
def test_set_parameter_with_wrong_type_is_a_startup_error(tmp_path):
    result = _run("--port", "0", "--dbpath", str(tmp_path), "--setParameter", "ttlMonitorSleepSecs=soon")
    assert result.returncode == 2
    assert "ttlMonitorSleepSecs" in result.stderr


@pytest.mark.slow
def test_dbpath_that_is_a_file_is_refused(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    result = _run("--port", "0", "--dbpath", str(not_a_dir))
    assert result.returncode != 0
    assert "not a directory" in result.stderr


@pytest.mark.slow
def test_port_in_use_is_refused(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = _run("--port", str(port), "--dbpath", str(tmp_path))
    assert result.returncode == 48
    assert "Address already in use" in result.stderr


@pytest.mark.slow
def test_dbpath_in_use_by_another_server_is_refused(start_server, tmp_path):
    first = start_server(dbpath=tmp_path / "shared")
    result = _run("--port", "0", "--dbpath", str(first.dbpath))
    assert result.returncode == 100
    assert result.stderr.strip()


@pytest.mark.slow
@pytest.mark.commands("getCmdLineOpts", "getParameter")
def test_config_file_is_read_and_flags_override_it(start_server, tmp_path):
    config = tmp_path / "tidemark.yaml"
    config.write_text(
        "net:\n  bindIp: 127.0.0.1\nstorage:\n  compressor: snappy\n"
        "setParameter:\n  timeseriesBucketMaxCount: 500\n  quiet: true\n"
    )
    server = start_server(args=("--config", str(config), "--setParameter", "timeseriesBucketMaxCount=700"))
    with server.client() as client:
        parsed = client.admin.command("getCmdLineOpts")["parsed"]
        assert parsed["storage"]["compressor"] == "snappy"
        params = client.admin.command({"getParameter": 1, "timeseriesBucketMaxCount": 1, "quiet": 1})
        assert params["timeseriesBucketMaxCount"] == 700
        assert params["quiet"] is True


@pytest.mark.slow
def test_sigterm_shuts_down_cleanly_and_logs_json_lines(start_server, tmp_path):
    import json

    server = start_server(args=("--logpath", str(tmp_path / "tm.log")))
    with server.client() as client:
        client.admin.command("ping")
    assert server.terminate() == 0
    lines = [json.loads(line) for line in (tmp_path / "tm.log").read_text().splitlines()]
    messages = [entry["msg"] for entry in lines]
    assert "Waiting for connections" in messages
    assert "Connection accepted" in messages and "Connection ended" in messages
    assert messages[-1] == "Shutting down"
    assert all({"t", "s", "c", "id", "ctx", "msg"} <= set(entry) for entry in lines)


@pytest.mark.slow
def test_sigint_also_shuts_down_cleanly(start_server):
    import signal

    server = start_server()
    server.process.send_signal(signal.SIGINT)
    assert server.process.wait(30) == 0


@pytest.mark.slow
def test_quiet_drops_connection_lines_but_keeps_lifecycle(start_server, tmp_path):
    import json

    server = start_server(args=("--quiet", "--logpath", str(tmp_path / "quiet.log")))
    with server.client() as client:
        client.admin.command("ping")
    assert server.terminate() == 0
    messages = [json.loads(line)["msg"] for line in (tmp_path / "quiet.log").read_text().splitlines()]
    assert "Waiting for connections" in messages and "Shutting down" in messages
    assert "Connection accepted" not in messages and "client metadata" not in messages


def test_version_flag_prints_versions():
    result = _run("--version")
    assert result.returncode == 0
    assert "MongoDB 7.0.0 compatible" in result.stdout


def test_unreadable_or_invalid_config_file_exits_2(tmp_path):
    missing = _run("--config", str(tmp_path / "missing.yaml"))
    assert missing.returncode == 2 and "cannot read config file" in missing.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("net: [unclosed\n")
    result = _run("--config", str(broken))
    assert result.returncode == 2 and "invalid YAML" in result.stderr


def test_out_of_range_port_exits_2():
    result = _run("--port", "70000")
    assert result.returncode == 2 and "port number" in result.stderr


_IMPORT_PROBE = """
import contextlib, io, json, sys
from tidemark.__main__ import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps({"out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_answer_without_importing_the_server(flag):
    """They parse in the light tidemark.options (issue 24): none of the query layer, the application, storage,
    the wire protocol or the heavy libraries is imported, so they answer in a few tens of milliseconds."""
    import json

    result = subprocess.run([PYTHON, "-c", _IMPORT_PROBE, flag], capture_output=True, text=True, timeout=60,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout)
    assert ("db version v7.0.0" if flag == "--version" else "--dbpath") in probe["out"]
    heavy = ("tidemark.query", "tidemark.app", "tidemark.context", "tidemark.commands", "storage", "protocol",
             "pymongo", "bson", "numpy", "yaml", "asyncio", "uvloop", "importlib.metadata")
    loaded = [name for name in probe["modules"] if name.startswith(heavy)]
    assert loaded == []


def test_package_version_is_the_one_tidemark_reports():
    from tidemark.version import __version__, tidemark_version

    assert importlib.metadata.version("tidemark") == __version__ == tidemark_version()
