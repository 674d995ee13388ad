"""Starts a real `ctxpar serve` on 127.0.0.1 for the server tests and stops it again.

Every wait is bounded. The ctxpar binary comes from CTXPAR_BINARY and mpirun from MPIEXEC
(both set by tests/server/CMakeLists.txt).
"""

import http.client
import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

CTXPAR = os.environ.get("CTXPAR_BINARY", "")
MPIEXEC = os.environ.get("MPIEXEC", "mpirun")
MODEL = "builtin:tiny-llama"
# Small enough for several servers at once: four ranks, 24 MiB of KV cache each.
ENGINE_ARGS = ["-tp", "4", "-dcp", "2", "--block-size", "4", "--max-model-len", "512",
               "--kv-cache-memory", "24MiB", "--dtype", "float32", "--threads-per-rank", "1"]


def free_port():
    """A port nothing listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mpi_env():
    env = dict(os.environ)
    env.pop("VLLM_API_KEY", None)  # it would guard every test server (a test sets it itself)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_rmaps_base_oversubscribe": "1"})
    return env


class Server:
    """`ctxpar serve` in a child process; use as a context manager."""

    def __init__(self, extra_args=(), mpi_ranks=0, model=MODEL, engine_args=ENGINE_ARGS,
                 env=None, tls=None):
        """tls: an ssl.SSLContext to reach a server started with --ssl-certfile (HTTPS)."""
        assert CTXPAR and os.path.exists(CTXPAR), f"CTXPAR_BINARY={CTXPAR!r} is not a binary"
        self.port = free_port()
        self.tls = tls
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        args = [CTXPAR, "serve", model, *engine_args, "--port", str(self.port), *extra_args]
        if mpi_ranks:
            args = [MPIEXEC, "-np", str(mpi_ranks), *args, "--distributed-executor-backend", "mpi"]
        self.args = args
        self.env = {**mpi_env(), **(env or {})}
        self.log = tempfile.TemporaryFile(mode="w+")
        self.process = None

    def __enter__(self):
        self.process = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT,
                                        env=self.env)
        self.wait_healthy()
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self.log.close()

    def output(self):
        self.log.seek(0)
        return self.log.read()

    def wait_healthy(self, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"ctxpar serve exited with {self.process.returncode}:\n"
                                     f"{self.output()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5,
                                            context=self.tls) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.1)
        raise AssertionError(f"/health not 200 within {timeout} s:\n{self.output()}")

    def terminate(self, sig=signal.SIGTERM, timeout=60):
        """Sends `sig` and returns the exit status (bounded)."""
        self.process.send_signal(sig)
        return self.process.wait(timeout=timeout)

    def request(self, method, path, body=None, headers=None, raw=None, timeout=60):
        """One raw HTTP request; returns (status, parsed JSON or text, headers)."""
        conn = (http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                            context=self.tls) if self.tls else
                http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout))
        try:
            data = raw if raw is not None else (json.dumps(body) if body is not None else None)
            all_headers = {"Content-Type": "application/json"} if data is not None else {}
            all_headers.update(headers or {})
            conn.request(method, path, body=data, headers=all_headers)
            r = conn.getresponse()
            text = r.read().decode("utf-8")
            try:
                payload = json.loads(text) if text else None
            except json.JSONDecodeError:
                payload = text
            return r.status, payload, dict(r.getheaders())
        finally:
            conn.close()

    def metrics(self):
        """The /metrics samples as {name{labels}: value}."""
        status, text, _ = self.request("GET", "/metrics")
        assert status == 200, text
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                samples[key] = float(value)
        return samples

    def metric(self, name, **labels):
        """One sample by name and extra labels (model_name and engine are implied)."""
        want = {"model_name": MODEL, "engine": "0", **labels}
        for key, value in self.metrics().items():
            base, _, rest = key.partition("{")
            if base != name:
                continue
            got = dict(item.split("=", 1) for item in rest.rstrip("}").split(",") if item)
            got = {k: v.strip('"') for k, v in got.items()}
            if got == want:
                return value
        raise AssertionError(f"no sample {name} {want}")

    def wait_idle(self, timeout=60):
        """Waits until no request runs or waits and no KV block is used."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (self.metric("vllm:num_requests_running") == 0
                    and self.metric("vllm:num_requests_waiting") == 0
                    and self.metric("vllm:kv_cache_usage_perc") == 0):
                return
            time.sleep(0.05)
        raise AssertionError(f"not idle within {timeout} s: {self.metrics()}")


def random_prompts(rng, count, low=1, high=60):
    """Token-id prompts over the byte tokenizer's 256 byte ids."""
    return [[rng.randrange(256) for _ in range(rng.randint(low, high))] for _ in range(count)]


def seeded_rng(test):
    # CTXPAR_TEST_SEED replays a printed seed, as it does for the C++ tests.
    replay = os.environ.get("CTXPAR_TEST_SEED")
    seed = int(replay) if replay else random.SystemRandom().randrange(2**32)
    print(f"{test.id()}: seed {seed}")
    return random.Random(seed)


def generate(prompts, max_tokens, mpi_ranks=0, engine_args=ENGINE_ARGS):
    """`ctxpar generate --json` greedy tokens for token-id prompts, one list per prompt."""
    args = [CTXPAR, "generate", "--model", MODEL, *engine_args, "--json", "--ignore-eos",
            "--max-tokens", str(max_tokens)]
    for p in prompts:
        args += ["--prompt-token-ids", ",".join(map(str, p))]
    if mpi_ranks:
        args = [MPIEXEC, "-np", str(mpi_ranks), *args, "--distributed-executor-backend", "mpi"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, env=mpi_env())
    assert out.returncode == 0, out.stderr
    return [r["output_token_ids"] for r in json.loads(out.stdout)["requests"]]


def failed_start(extra_args, timeout=60):
    """Runs `ctxpar serve` with extra_args, which must stop it; returns (exit status, stderr)."""
    args = [CTXPAR, "serve", MODEL, *ENGINE_ARGS, "--port", str(free_port()), *extra_args]
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=mpi_env())
    return r.returncode, r.stderr


def openai_client(server):
    """The official openai client against `server`, without retries (a retry would hide an
    error the test should see)."""
    import openai  # the server venv's; only the tests that talk through it need it
    http_client = openai.DefaultHttpxClient(verify=server.tls) if server.tls else None
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0,
                         timeout=120, http_client=http_client)


def stop(server):
    """Stops a server started with __enter__ and checks that it exited cleanly."""
    rc = server.terminate()
    server.__exit__(None, None, None)
    assert rc == 0, f"ctxpar serve exited with {rc}"
