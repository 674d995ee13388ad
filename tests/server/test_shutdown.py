"""SIGTERM and SIGINT: the server stops taking requests, ends the streams in flight with
finish_reason "abort", stops every rank and exits 0."""

import http.client
import json
import signal
import threading
import unittest

import server_fixture as fx

ENGINE_ARGS = [a if a != "512" else "4096" for a in fx.ENGINE_ARGS]


def read_stream(port, body, events, started):
    """Reads a completion stream into `events` (parsed data lines); sets `started` after 3."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/v1/completions", body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    for line in response:
        if not line.startswith(b"data: "):
            continue
        data = line[len(b"data: "):].strip()
        events.append(data.decode() if data == b"[DONE]" else json.loads(data))
        if len(events) == 3:
            started.set()
    conn.close()


class Shutdown(unittest.TestCase):
    def check(self, sig):
        with fx.Server(engine_args=ENGINE_ARGS) as server:
            events, started = [], threading.Event()
            body = {"prompt": [3] * 10, "max_tokens": 4000, "ignore_eos": True,
                    "temperature": 0, "stream": True}
            reader = threading.Thread(target=read_stream, args=(server.port, body, events, started))
            reader.start()
            self.assertTrue(started.wait(60), "the stream did not start")
            rc = server.terminate(sig)
            reader.join(60)
            self.assertFalse(reader.is_alive(), "the stream did not end")
            self.assertEqual(rc, 0, server.output())
            self.assertIn(f"{signal.Signals(sig).name} received", server.output())
            self.assertEqual(events[-1], "[DONE]")
            finish = [e["choices"][0]["finish_reason"] for e in events[:-1]]
            self.assertEqual(finish[-1], "abort")
            self.assertTrue(all(f is None for f in finish[:-1]))
            self.assertLess(len(finish), 4000)

    def test_sigterm(self):
        self.check(signal.SIGTERM)

    def test_sigint(self):
        self.check(signal.SIGINT)

    def test_an_idle_server_exits_at_once(self):
        with fx.Server() as server:
            self.assertEqual(server.terminate(signal.SIGTERM, timeout=30), 0, server.output())


if __name__ == "__main__":
    unittest.main()
