"""The CLI as a person meets it: fast help, every request option documented, errors that
name the URL and the fix, human times; and the log filters that keep the log readable."""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from graphsvc import logs
from graphsvc.cli import CLIError, _listening_port, _write_port_file, human_time, local_url, main, ready_line
from graphsvc.placement.options import OPTIONS
from graphsvc.settings import Settings

HEAVY = ("fastapi", "uvicorn", "strawberry", "pydantic", "httpx", "graphsvc.api", "graphsvc.store")


def _modules_after(argv: list[str]) -> set[str]:
    code = (
        "import sys\nfrom graphsvc.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print('MODULES=' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith("MODULES=")
    return {m for m in line.removeprefix("MODULES=").split(",") if m}


@pytest.mark.parametrize("argv", [["--help"], ["place", "--help"], ["reserve", "--help"]])
def test_help_imports_no_server_stack(argv: list[str]) -> None:
    """Start-up time is import time: help loads only the standard library (docs/ui.md has the numbers)."""
    assert _modules_after(argv) == set()


def test_place_imports_no_server_stack_nor_httpx() -> None:
    assert _modules_after(["place", "8xH100", "--server", "http://127.0.0.1:9"]) == set()


def test_place_help_lists_every_request_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["place", "--help"])
    text = capsys.readouterr().out
    assert all(option in text for option in OPTIONS)
    assert "GRAPHSVC_URL" in text and "--server URL" in text


def test_unreachable_service_names_the_url_and_the_fix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHSVC_URL", "http://127.0.0.1:9")
    assert main(["place", "8xH100"]) == 1
    err = capsys.readouterr().err
    assert "cannot reach the service at http://127.0.0.1:9" in err
    assert "GRAPHSVC_URL" in err and "graphsvc serve" in err
    assert "All connection attempts failed" not in err
    assert main(["place", "8xH100", "--server", "localhost:9"]) == 1
    assert "'localhost:9' is not a service URL" in capsys.readouterr().err


def test_typo_in_the_request_is_caught_before_calling(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reserve", "8xH100 nvlnk=full-mesh", "--holder", "j", "--server", "http://127.0.0.1:9"]) == 1
    assert "did you mean 'nvlink'?" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["reserve", "8xH100", "--holder", "j"], ["renew", "rsv-1"]])
@pytest.mark.parametrize("ttl", ["forever", "-5m", "0", "99999d"])
def test_bad_ttl_says_what_a_duration_is(ttl: str, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*command, "--ttl", ttl])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --ttl" in err and "Traceback" not in err and "could not convert" not in err


@pytest.mark.parametrize(
    ("epoch", "now", "want"),
    [
        (1_800_000_600, 1_800_000_000, "2027-01-15 08:10:00 UTC (in 10m)"),
        (1_800_003_661, 1_800_000_000, "2027-01-15 09:01:01 UTC (in 1h 1m)"),
        (1_799_999_990, 1_800_000_000, "2027-01-15 07:59:50 UTC (10s ago)"),
        (1_800_000_000, 1_800_000_000, "2027-01-15 08:00:00 UTC (in 0s)"),
        (1_800_200_000, 1_800_000_000, "2027-01-17 15:33:20 UTC (in 2d 7h)"),
    ],
)
def test_human_time(epoch: float, now: float, want: str) -> None:
    assert human_time(epoch, now) == want


def _record(name: str, level: int, msg: object, exc: BaseException | None = None) -> logging.LogRecord:
    info = (type(exc), exc, None) if exc else None
    return logging.LogRecord(name, level, __file__, 1, msg, (), info)


def test_a_store_refusing_to_start_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "startup_error", None)
    f = logs.StartupFailure()
    tb = (
        'Traceback (most recent call last):\n  File "x.py", line 1\n'
        "graphsvc.store.errors.EmbeddedStoreError: data directory /d is in use by another graphsvc (pid 7)\n"
    )
    assert not f.filter(_record("uvicorn.error", logging.ERROR, tb))
    assert logs.startup_error == "data directory /d is in use by another graphsvc (pid 7)"
    assert not f.filter(_record("uvicorn.error", logging.ERROR, "Application startup failed. Exiting."))
    bug = 'Traceback (most recent call last):\nKeyError: "x"\n'
    assert f.filter(_record("uvicorn.error", logging.ERROR, bug))  # a bug keeps its traceback


def test_every_option_of_every_command_has_help() -> None:
    from graphsvc.cli import _parser

    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [
        f"{name} {action.dest}"
        for name, command in sub.choices.items()
        for action in command._actions
        if not action.help and not isinstance(action, argparse._HelpAction)
    ]
    assert missing == []


def test_the_service_runs_on_uvloop_where_it_is_installed() -> None:
    """`serve` and `demo` await uvicorn's Server.serve in their own loop (uvicorn picks a loop
    only in Server.run), so the CLI chooses it: uvloop, a dependency on Linux."""
    import asyncio

    import uvloop

    from graphsvc.cli import _run_service

    seen: list[type] = []

    async def main() -> None:
        seen.append(type(asyncio.get_running_loop()))

    _run_service(main())
    assert seen == [uvloop.Loop]


def test_the_service_writes_each_answer_at_once() -> None:
    """`serve` and `demo` run uvicorn's httptools protocol with each response's head and body in one
    write (graphsvc/api/http_protocol.py)."""
    from graphsvc.api.http_protocol import CoalescingHttpToolsProtocol
    from graphsvc.cli import _server
    from graphsvc.settings import Settings

    assert _server(Settings(insecure_dev=True)).config.http is CoalescingHttpToolsProtocol


def test_fastapi_s_opentelemetry_is_on_only_when_asked() -> None:
    """Every request asked OpenTelemetry for its providers though the service exports nothing
    there; an operator with an SDK or agent turns FastAPI's spans back on (docs/deploy.md)."""
    from graphsvc.api.app import create_app
    from graphsvc.settings import Settings

    off = create_app(Settings(insecure_dev=True))
    on = create_app(Settings(insecure_dev=True, opentelemetry=True))
    assert not off._native_telemetry.enabled()
    assert (off._telemetry["tracing"], off._telemetry["metrics"], off._telemetry["logs"]) == (False, False, False)
    assert (on._telemetry["tracing"], on._telemetry["metrics"], on._telemetry["logs"]) == (True, True, True)


@pytest.mark.parametrize(
    ("host", "tls", "url"),
    [
        ("127.0.0.1", False, "http://127.0.0.1:8123"),
        ("0.0.0.0", False, "http://127.0.0.1:8123"),
        ("::", False, "http://[::1]:8123"),  # asyncio binds "::" to IPv6 only
        ("fe80::1", True, "https://[fe80::1]:8123"),
        ("graphsvc.internal", True, "https://graphsvc.internal:8123"),
    ],
)
def test_the_local_url_reaches_the_address_it_listens_on(host: str, tls: bool, url: str, tmp_path: Path) -> None:
    settings = Settings(host=host, port=8123)
    if tls:
        settings.tls_certfile, settings.tls_keyfile = tmp_path / "c.pem", tmp_path / "k.pem"
    assert local_url(settings) == url
    assert ready_line(settings).startswith(f"ready at {url}: explorer {url}/ui/")


class _Listener:
    def __init__(self, *ports: int) -> None:
        self.sockets = [_Sock(p) for p in ports]


class _Sock:
    def __init__(self, port: int) -> None:
        self.port = port

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)


def test_the_port_listened_on_is_the_first_socket_s_and_none_once_closed() -> None:
    server = argparse.Namespace(servers=[_Listener(40001, 40002)])
    assert _listening_port(server) == 40001  # type: ignore[arg-type]
    closed = argparse.Namespace(servers=[_Listener()])  # a signal during start-up: uvicorn closed them
    assert _listening_port(closed) is None  # type: ignore[arg-type]


def test_the_port_file_is_written_whole_and_a_missing_folder_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "service.port"
    path.write_text("12345\n")  # an earlier run's
    _write_port_file(path, 40001)
    assert path.read_text() == "40001\n" and sorted(p.name for p in tmp_path.iterdir()) == ["service.port"]
    with pytest.raises(CLIError, match=r"^cannot write the port file .*/nowhere/service.port: No such file"):
        _write_port_file(tmp_path / "nowhere" / "service.port", 40001)
