"""CORS answers against the reference vLLM serves them with: Starlette's CORSMiddleware, built
with the same --allowed-origins, --allowed-methods, --allowed-headers and --allow-credentials
(vLLM's init_entrypoints_middleware) and called directly as an ASGI app. For random policies
(vLLM's default among them) and random requests, a preflight's status, body and CORS headers, and
the CORS headers of a plain response, equal Starlette's. Bad flag values stop the server."""

import asyncio
import json
import unittest

from starlette.middleware.cors import CORSMiddleware

import server_fixture as fx

ORIGINS = ["https://a.example", "https://b.example", "http://localhost:3000"]
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "QUERY", "TRACE"]
HEADERS = ["X-Custom", "Authorization", "x-other", "Content-Type"]
# An empty Access-Control-Request-Headers is left out: browsers send none then, and the HTTP
# server ctxpar uses (httplib) reads an empty header as absent.
REQUEST_HEADERS = [None, "content-type", "Content-Type, Authorization", "x-custom",
                   "x-custom, x-other", "accept ,  X-Custom", "x-unknown", "X-CUSTOM,"]


async def inner_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"{}"})


def starlette_answer(middleware, method, headers):
    """(status, CORS headers, body) of the middleware for one request."""
    scope = {"type": "http", "method": method, "path": "/v1/completions", "root_path": "",
             "query_string": b"", "scheme": "http", "http_version": "1.1",
             "server": ("127.0.0.1", 8000),
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    messages = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        messages.append(message)

    asyncio.run(middleware(scope, receive, send))
    start = messages[0]
    body = b"".join(m.get("body", b"") for m in messages[1:]).decode()
    return start["status"], cors_headers(
        (k.decode(), v.decode()) for k, v in start["headers"]), body


def cors_headers(pairs):
    out = {}
    for name, value in pairs:
        name = name.lower()
        if name.startswith("access-control-") or name == "vary":
            assert name not in out, f"{name} twice"
            out[name] = value
    return out


class Cors(unittest.TestCase):
    def policies(self, rng):
        yield {}  # vLLM's defaults: no origin, every method and header, no credentials
        yield {"origins": ["*"]}
        for _ in range(3):
            yield {"origins": rng.sample(ORIGINS + ["*"], rng.randint(0, 2)),
                   "methods": ["*"] if rng.random() < 0.3 else rng.sample(METHODS, 3),
                   "headers": ["*"] if rng.random() < 0.3 else rng.sample(HEADERS, 2),
                   "credentials": rng.random() < 0.5}

    def test_answers_equal_starlettes(self):
        rng = fx.seeded_rng(self)
        for policy in self.policies(rng):
            with self.subTest(policy=policy):
                args = []
                for key, flag in (("origins", "--allowed-origins"),
                                  ("methods", "--allowed-methods"),
                                  ("headers", "--allowed-headers")):
                    if key in policy:
                        args += [flag, json.dumps(policy[key])]
                if policy.get("credentials"):
                    args.append("--allow-credentials")
                middleware = CORSMiddleware(
                    inner_app, allow_origins=policy.get("origins", []),
                    allow_methods=policy.get("methods", ["*"]),
                    allow_headers=policy.get("headers", ["*"]),
                    allow_credentials=policy.get("credentials", False))
                with fx.Server(args) as server:
                    self.check_requests(rng, server, middleware)

    def check_requests(self, rng, server, middleware):
        for _ in range(24):
            origin = rng.choice(ORIGINS)
            headers = {"Origin": origin,
                       "Access-Control-Request-Method": rng.choice(METHODS)}
            requested = rng.choice(REQUEST_HEADERS)
            if requested is not None:
                headers["Access-Control-Request-Headers"] = requested
            if rng.random() < 0.2:
                headers["Access-Control-Request-Private-Network"] = "true"
            want = starlette_answer(middleware, "OPTIONS", headers)
            status, body, got_headers = server.request("OPTIONS", "/v1/completions",
                                                       headers=headers)
            got = (status, cors_headers(got_headers.items()), body)
            self.assertEqual(got, want, headers)
            # A plain request from that origin.
            want_status, want_headers, _ = starlette_answer(middleware, "GET", {"Origin": origin})
            status, _, got_headers = server.request("GET", "/health", headers={"Origin": origin})
            self.assertEqual((status, cors_headers(got_headers.items())),
                             (want_status, want_headers), origin)
        # Without Origin nothing CORS is added.
        _, _, got_headers = server.request("GET", "/health")
        self.assertEqual(cors_headers(got_headers.items()), {})

    def test_values_that_are_not_json_lists_stop_the_server(self):
        for flag, value in (("--allowed-origins", "*"), ("--allowed-methods", '"GET"'),
                            ("--allowed-headers", '["X-Custom", 7]')):
            with self.subTest(flag=flag):
                status, stderr = fx.failed_start([flag, value])
                self.assertNotEqual(status, 0)
                self.assertIn(flag, stderr)
                self.assertIn(value, stderr)


if __name__ == "__main__":
    unittest.main()
