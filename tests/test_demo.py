"""`make demo`, as a new user runs it: sandbox, shop, worker and beat up; Ctrl-C stops all."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.helpers.paths import ROOT
from tests.helpers.servers import free_port
from tools.soak import demo_processes

pytestmark = pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "honcho").exists(), reason="make install has not run"
)


def _make(command: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """Run a make target in its own process group (so an interrupt reaches all it starts)."""
    with log_path.open("wb") as log:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop_group(process: subprocess.Popen[bytes], sig: int = signal.SIGINT) -> None:
    """Interrupt the process group as Ctrl-C does; if it does not end within 30 s, kill the
    whole group (nothing is left behind) and fail."""
    os.killpg(process.pid, sig)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        raise AssertionError(f"{process.args} did not stop on signal {sig}") from None


def _demo_pids(var_dir: Path, command_part: str) -> list[int]:
    """The processes of the demo started with `var_dir` whose command line has `command_part`."""
    found = demo_processes(str(var_dir / "shop"))
    return [pid for pid, command in found.items() if command_part.encode() in command]


def _wait_for(url: str, deadline: float, **kwargs: object) -> requests.Response:
    while time.monotonic() < deadline:
        try:
            response = requests.get(url, timeout=2, **kwargs)  # type: ignore[arg-type]
            if response.status_code == 200:
                return response
        except requests.ConnectionError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{url} did not answer in time")


def _sign_in_as_the_readme_says(shop: str, env: dict[str, str], log_path: Path) -> None:
    """README, "Demo credentials": admin's password, then the code `manage.py staff_demo_code
    admin` prints; `make demo` printed both, and the secret for an authenticator app."""
    output = log_path.read_text(errors="replace")
    assert "tienda-demo-2026" in output and "staff_demo_code admin" in output, output
    assert "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP" in output, output
    browser = requests.Session()
    browser.get(f"{shop}/admin/login/", timeout=10)
    token = {"csrfmiddlewaretoken": browser.cookies["csrftoken"]}
    answer = browser.post(f"{shop}/admin/login/", {"username": "admin",
                          "password": "tienda-demo-2026", **token}, timeout=10)  # fmt: skip
    assert "/admin/sign-in/code/" in answer.url, answer.url
    printed = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "manage.py", "staff_demo_code", "admin"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    answer = browser.post(answer.url, {"code": printed, **token}, timeout=10)
    assert answer.url == f"{shop}/admin/", answer.url
    assert 'id="owner-dashboard"' in answer.text or "logout-form" in answer.text


def test_make_demo_runs_everything_on_embedded_defaults(tmp_path: Path) -> None:
    """With no database or broker configured, `make demo` serves the shop and the sandbox
    on the chosen ports, the README's curl lists the payment methods, the worker starts; a
    process that dies is started again while the others keep running; and an interrupt stops
    every process."""
    shop_port, sandbox_port = free_port(), free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_URL", "REDIS_URL", "DJANGO_", "SANDBOX_", "PAYMENTS_"))
    }
    env.update(
        {
            "SHOP_PORT": str(shop_port),
            "SANDBOX_PORT": str(sandbox_port),
            "SHOP_VAR_DIR": str(tmp_path / "shop"),
            "SANDBOX_VAR_DIR": str(tmp_path / "sandbox"),
        }
    )
    log_path = tmp_path / "demo.log"
    demo = _make(["make", "demo"], env, log_path)
    try:
        deadline = time.monotonic() + 120
        methods = _wait_for(
            f"http://127.0.0.1:{sandbox_port}/payment_methods",
            deadline,
            headers={"Authorization": "Bearer pk_sandbox_demo"},
        )
        assert {m["id"] for m in methods.json()} == {"visa", "master", "amex", "cashpay"}
        home = _wait_for(f"http://127.0.0.1:{shop_port}/", deadline)
        assert "Tienda Tlali" in home.text
        _sign_in_as_the_readme_says(f"http://127.0.0.1:{shop_port}", env, log_path)
        while time.monotonic() < deadline and not all(
            started in log_path.read_bytes() for started in (b"ready.", b"beat: Starting")
        ):
            time.sleep(0.3)
        output = log_path.read_text(errors="replace")
        assert "ready." in output, output  # the Celery worker is consuming
        assert "beat: Starting" in output, output

        # When the worker and the shop's server die (killed outright): both are started
        # again, and the rest of the demo keeps running meanwhile
        for name, marker in (("worker", b"ready."), ("runserver", b"Starting development")):
            before = log_path.read_bytes().count(marker)
            for pid in _demo_pids(tmp_path, name):
                os.kill(pid, signal.SIGKILL)
            restart_deadline = time.monotonic() + 60
            while time.monotonic() < restart_deadline:
                if log_path.read_bytes().count(marker) > before:
                    break
                time.sleep(0.3)
            assert log_path.read_bytes().count(marker) > before, log_path.read_text()
        _wait_for(f"http://127.0.0.1:{shop_port}/", time.monotonic() + 30)
        _wait_for(f"http://127.0.0.1:{sandbox_port}/healthz", time.monotonic() + 5)
        assert demo.poll() is None
    finally:
        _stop_group(demo)
    assert not _demo_pids(tmp_path, "")  # nothing is left running
    assert not (ROOT / "control").exists()  # the embedded broker keeps to its own folder
    for port in (shop_port, sandbox_port):
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2)


def test_make_sandbox_runs_the_sandbox_alone_with_keys_from_the_environment(
    tmp_path: Path,
) -> None:
    """`make sandbox` honours SANDBOX_PORT, SANDBOX_PUBLIC_KEY and SANDBOX_SECRET_KEY."""
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_URL", "REDIS_URL", "DJANGO_", "SANDBOX_"))
    }
    env.update(
        {
            "SANDBOX_PORT": str(port),
            "SANDBOX_PUBLIC_KEY": "pk_custom",
            "SANDBOX_SECRET_KEY": "sk_custom",
            "SANDBOX_VAR_DIR": str(tmp_path),
        }
    )
    log_path = tmp_path / "sandbox.log"
    process = _make(["make", "sandbox"], env, log_path)
    try:
        base = f"http://127.0.0.1:{port}"
        methods = _wait_for(
            f"{base}/payment_methods",
            time.monotonic() + 60,
            headers={"Authorization": "Bearer pk_custom"},
        )
        assert len(methods.json()) == 4
        assert (
            requests.get(
                f"{base}/payment_methods",
                timeout=5,
                headers={"Authorization": "Bearer pk_sandbox_demo"},
            ).status_code
            == 401
        )
        secret = requests.get(f"{base}/_sandbox/clock", auth=("pk_custom", "sk_custom"), timeout=5)
        assert secret.status_code == 200
    finally:
        _stop_group(process)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_sandbox_stops_on_a_signal_even_when_it_inherited_sigint_ignored(
    tmp_path: Path, sig: int
) -> None:
    """Started from a shell that ignores SIGINT (as some CI runners do), the sandbox still
    stops on Ctrl-C and on SIGTERM, at once."""
    import sys

    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "SANDBOX_"))},
        "SANDBOX_PORT": str(port),
        "SANDBOX_VAR_DIR": str(tmp_path),
    }
    command = [sys.executable, "-m", "sandbox.manage", "runsandbox", "--port", str(port)]
    with (tmp_path / "sandbox.log").open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
    try:
        _wait_for(f"http://127.0.0.1:{port}/healthz", time.monotonic() + 60)
    except AssertionError:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    os.kill(process.pid, sig)
    try:
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
