"""vLLM serve flags a pasted recipe line carries, through the real server and the openai client:
a Hugging Face repo id served from the hub cache (named by the id in /v1/models), several
--served-model-name values (any may be requested, responses give the first), and
--generation-config / --override-generation-config setting requests' defaults (max_new_tokens
caps every request, as vLLM's, from a directory, over none with `vllm`, or overridden), and
--enable-prompt-tokens-details counting the prompt tokens the prefix cache served, and
--default-chat-template-kwargs under every chat request's own, and
--enable-force-include-usage, --enable-request-id-headers, --enable-server-load-tracking,
--exclude-tools-when-tool-choice-none, --return-tokens-as-token-ids, --response-role,
--sse-keep-alive-interval, --fingerprint-mode, --trust-request-chat-template,
--reasoning-effort-map and --enable-per-request-metrics."""

import http.client
import json
import os
import pathlib
import random
import re
import subprocess
import tempfile
import time
import unittest

import server_fixture as fx

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
SMALL = ["--max-model-len", "256", "--kv-cache-memory", "8MiB", "--dtype", "float32",
         "--threads-per-rank", "1"]
# Room for long outputs (a stream still being made while a test looks: the server writes ahead
# into the socket of a client that does not read) and long prompts (a template's tools).
LONG = ["--max-model-len", "4096", "--kv-cache-memory", "64MiB", "--dtype", "float32",
        "--threads-per-rank", "1"]


def chat_tokens(server, rng, **max_tokens):
    """completion_tokens of one chat request (EOS ignored), by default with no max_tokens."""
    client = fx.openai_client(server)
    r = client.chat.completions.create(
        model=server.model_name,
        messages=[{"role": "user", "content": "".join(rng.choice("abcdef ") for _ in range(9))}],
        temperature=0, extra_body={"ignore_eos": True}, **max_tokens)
    return r.usage.completion_tokens, r.choices[0].finish_reason


def completion_tokens(server, max_tokens):
    r = fx.openai_client(server).completions.create(
        model=server.model_name, prompt="abc", max_tokens=max_tokens, temperature=0,
        extra_body={"ignore_eos": True})
    return r.usage.completion_tokens


class ServedFromTheHubCache(unittest.TestCase):
    def test_repo_id_is_the_served_name(self):
        # A snapshot as huggingface_hub writes it (symlinks): the llama3 tokenizer fixture's
        # files and the Llama fixture's config.json sized to its vocabulary (dummy weights).
        tokenizer = FIXTURES / "tokenizers" / "llama3"
        vocab = json.loads((tokenizer / "golden.json").read_text())["vocab_size"]
        config = json.loads((FIXTURES / "tiny-llama-fixture" / "config.json").read_text())
        config["vocab_size"] = vocab
        with tempfile.TemporaryDirectory() as cache:
            commit = "%040x" % random.getrandbits(160)
            repo = pathlib.Path(cache) / "models--meta-llama--Tiny-3.1"
            (repo / "refs").mkdir(parents=True)
            (repo / "refs" / "main").write_text(commit)
            snapshot = repo / "snapshots" / commit
            snapshot.mkdir(parents=True)
            for f in tokenizer.iterdir():
                (snapshot / f.name).symlink_to(f)
            (repo / "config.json").write_text(json.dumps(config))
            (snapshot / "config.json").symlink_to(repo / "config.json")
            os.environ["HF_HUB_CACHE"] = cache
            try:
                server = fx.Server(model="meta-llama/Tiny-3.1",
                                   engine_args=SMALL + ["--load-format", "dummy"]).__enter__()
            finally:
                del os.environ["HF_HUB_CACHE"]
            try:
                client = fx.openai_client(server)
                models = client.models.list().data
                self.assertEqual([m.id for m in models], ["meta-llama/Tiny-3.1"])
                self.assertEqual(models[0].root, "meta-llama/Tiny-3.1")
                r = client.completions.create(model="meta-llama/Tiny-3.1", prompt="Hello there",
                                              max_tokens=4, temperature=0,
                                              extra_body={"ignore_eos": True})
                self.assertEqual(r.usage.completion_tokens, 4)
            finally:
                fx.stop(server)


class ServedModelNames(unittest.TestCase):
    def test_every_name_is_served_and_responses_give_the_first(self):
        server = fx.Server(["--served-model-name", "first", "second"], engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, server)
        client = fx.openai_client(server)
        self.assertEqual([m.id for m in client.models.list().data], ["first", "second"])
        for name in ("first", "second"):
            r = client.completions.create(model=name, prompt="abc", max_tokens=2)
            self.assertEqual(r.model, "first")
        status, body, _ = server.request("POST", "/v1/completions",
                                         {"model": "third", "prompt": "abc", "max_tokens": 2})
        self.assertEqual(status, 404, body)
        self.assertIn("third", body["error"]["message"])


class PromptTokensDetails(unittest.TestCase):
    def test_cached_tokens_count_the_prefix_cache_hits(self):
        server = fx.Server(["--enable-prompt-tokens-details"], engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, server)
        client = fx.openai_client(server)
        rng = fx.seeded_rng(self)
        prompt = fx.random_prompts(rng, 1, low=33, high=120)[0]
        # Blocks of 16 tokens; the last prompt token is always computed.
        hit = (len(prompt) - 1) // 16 * 16

        def cached(**kwargs):
            r = client.completions.create(model=fx.MODEL, prompt=prompt, max_tokens=2,
                                          temperature=0, **kwargs)
            return r.usage.prompt_tokens_details.cached_tokens

        self.assertEqual(cached(), 0)
        self.assertEqual(cached(), hit)
        # A request scoring its prompt never reads the cache (vLLM's rule).
        self.assertEqual(cached(extra_body={"prompt_logprobs": 1}), 0)
        # The final usage chunk of a stream carries them too.
        stream = client.completions.create(model=fx.MODEL, prompt=prompt, max_tokens=2,
                                           stream=True, stream_options={"include_usage": True})
        usage = [c.usage for c in stream if c.usage][-1]
        self.assertEqual(usage.prompt_tokens_details.cached_tokens, hit)
        chat = client.chat.completions.create(
            model=fx.MODEL, messages=[{"role": "user", "content": "x" * 40}], max_tokens=2)
        again = client.chat.completions.create(
            model=fx.MODEL, messages=[{"role": "user", "content": "x" * 40}], max_tokens=2)
        self.assertEqual(chat.usage.prompt_tokens_details.cached_tokens, 0)
        self.assertEqual(again.usage.prompt_tokens_details.cached_tokens,
                         (again.usage.prompt_tokens - 1) // 16 * 16)
        # Without the flag the details stay null.
        plain = fx.Server(engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, plain)
        r = fx.openai_client(plain).completions.create(model=fx.MODEL, prompt=prompt, max_tokens=2)
        self.assertIsNone(r.usage.prompt_tokens_details)


class GenerationConfigFlags(unittest.TestCase):
    def serve(self, *flags):
        server = fx.Server(list(flags), engine_args=SMALL).__enter__()
        server.model_name = fx.MODEL
        self.addCleanup(fx.stop, server)
        return server

    def test_defaults_come_from_the_directory_none_or_the_override(self):
        rng = random.Random()
        with tempfile.TemporaryDirectory() as d:
            cap = rng.randint(2, 9)
            pathlib.Path(d, "generation_config.json").write_text(
                json.dumps({"max_new_tokens": cap, "temperature": 0.0}))
            server = self.serve("--generation-config", d)
            self.assertEqual(chat_tokens(server, rng), (cap, "length"))
            # max_new_tokens caps every request, as vLLM's get_max_tokens: a larger max_tokens
            # gets the cap, a smaller one its own; completions' default 16 too.
            self.assertEqual(chat_tokens(server, rng, max_tokens=cap + 5), (cap, "length"))
            self.assertEqual(chat_tokens(server, rng, max_completion_tokens=cap + 5),
                             (cap, "length"))
            self.assertEqual(chat_tokens(server, rng, max_tokens=1), (1, "length"))
            self.assertEqual(completion_tokens(server, cap + 3), cap)
            self.assertEqual(completion_tokens(server, None), cap)
            over = rng.randint(2, 9)
            server = self.serve("--generation-config", d, "--override-generation-config",
                                json.dumps({"max_new_tokens": over, "do_sample": False}))
            self.assertEqual(chat_tokens(server, rng), (over, "length"))
        server = self.serve("--generation-config", "vllm", "--override-generation-config",
                            '{"max_new_tokens": 3}')
        self.assertEqual(chat_tokens(server, rng), (3, "length"))

    def test_bad_values_stop_the_server_naming_them(self):
        for flags, says in [
                (["--generation-config", "/nonexistent/gen"], "--generation-config '/nonexistent/gen'"),
                (["--override-generation-config", "[1]"], "--override-generation-config"),
                (["--override-generation-config", "{temp"], "is not JSON")]:
            args = [fx.CTXPAR, "serve", fx.MODEL, *SMALL, "--port", str(fx.free_port()), *flags]
            r = subprocess.run(args, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(says, r.stderr)


class DefaultChatTemplateKwargs(unittest.TestCase):
    """--default-chat-template-kwargs sits under every chat request's chat_template_kwargs
    (vLLM's merge): deepseek_v3's reasoning parser splits only with `thinking`, which the
    default turns on unless a request turns it off."""

    def test_the_default_holds_unless_the_request_sets_the_key(self):
        server = fx.Server(["--reasoning-parser", "deepseek_v3", "--default-chat-template-kwargs",
                            '{"thinking": true}'], engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, server)
        client = fx.openai_client(server)

        def message(**kwargs):
            return client.chat.completions.create(
                model=fx.MODEL, messages=[{"role": "user", "content": "why?"}],
                max_completion_tokens=6, temperature=0,
                extra_body={"ignore_eos": True, "skip_special_tokens": False, **kwargs},
            ).choices[0].message

        default, off = message(), message(chat_template_kwargs={"thinking": False})
        self.assertTrue(default.reasoning)
        self.assertIsNone(default.content)
        self.assertIsNone(off.reasoning)
        self.assertEqual(off.content, default.reasoning)
        # null (or "auto") in the request leaves the default in place, as vLLM's merge does.
        self.assertEqual(message(chat_template_kwargs={"thinking": None}).reasoning,
                         default.reasoning)

    def test_a_value_that_is_not_a_json_object_stops_the_server(self):
        for value, says in [("[1]", "is not a JSON object"), ("{x", "is not JSON")]:
            args = [fx.CTXPAR, "serve", fx.MODEL, *SMALL, "--port", str(fx.free_port()),
                    "--default-chat-template-kwargs", value]
            r = subprocess.run(args, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--default-chat-template-kwargs", r.stderr)
            self.assertIn(says, r.stderr)


class UsageAndRequestIdFlags(unittest.TestCase):
    def test_streams_carry_usage_and_responses_the_request_id(self):
        server = fx.Server(["--enable-force-include-usage", "--enable-request-id-headers"],
                           engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, server)
        client = fx.openai_client(server)
        max_tokens = fx.seeded_rng(self).randint(2, 6)
        stream = [c.model_dump() for c in client.completions.create(
            model=fx.MODEL, prompt="usage", max_tokens=max_tokens, temperature=0, stream=True,
            extra_body={"ignore_eos": True})]
        # Every chunk counts the tokens so far (continuous usage); the last one, alone, all.
        self.assertEqual([c["usage"]["completion_tokens"] for c in stream[:-1]],
                         list(range(1, max_tokens + 1)))
        self.assertEqual(stream[-1]["choices"], [])
        self.assertEqual(stream[-1]["usage"]["completion_tokens"], max_tokens)
        chat = [c for c in client.chat.completions.create(
            model=fx.MODEL, messages=[{"role": "user", "content": "usage"}],
            max_tokens=max_tokens, stream=True, extra_body={"ignore_eos": True})]
        self.assertEqual(chat[-1].usage.completion_tokens, max_tokens)
        self.assertTrue(all(c.usage is not None for c in chat))

        for path, body in (("/v1/completions", {"prompt": "hi", "max_tokens": 1}),
                           ("/v1/nothing-here", {}), ("/health", None)):
            status, _, headers = server.request("POST" if body is not None else "GET", path, body,
                                                headers={"X-Request-Id": "given-id"})
            self.assertEqual(headers.get("X-Request-Id"), "given-id", (path, status))
            status, _, headers = server.request("POST" if body is not None else "GET", path, body)
            self.assertRegex(headers.get("X-Request-Id", ""), r"^[0-9a-f]{32}$", (path, status))
        status, _, headers = server.request("POST", "/v1/completions",
                                            {"prompt": "hi", "max_tokens": 2, "stream": True},
                                            headers={"X-Request-Id": "streamed"})
        self.assertEqual((status, headers.get("X-Request-Id")), (200, "streamed"))
        # Without the flags: no header, and a stream without stream_options has no usage.
        plain = fx.Server(engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, plain)
        status, _, headers = plain.request("POST", "/v1/completions",
                                           {"prompt": "hi", "max_tokens": 1},
                                           headers={"X-Request-Id": "given-id"})
        self.assertNotIn("X-Request-Id", headers)
        stream = [c.model_dump() for c in fx.openai_client(plain).completions.create(
            model=fx.MODEL, prompt="usage", max_tokens=max_tokens, stream=True)]
        self.assertTrue(all(c["usage"] is None for c in stream))


class ServerLoadTracking(unittest.TestCase):
    def load(self, server):
        status, body, _ = server.request("GET", "/load")
        self.assertEqual(status, 200, body)
        return body["server_load"]

    def settled_load(self, server, want, timeout=30):
        """/load once it equals `want`, or what it is after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while (load := self.load(server)) != want and time.monotonic() < deadline:
            time.sleep(0.05)
        return load

    def open_streams(self, server, n, max_tokens=4000):
        client = fx.openai_client(server)
        streams = [client.completions.create(model=fx.MODEL, prompt="load", max_tokens=max_tokens,
                                             stream=True, extra_body={"ignore_eos": True})
                   for _ in range(n)]
        for s in streams:
            next(iter(s))  # each is being answered
        return streams

    def test_load_counts_the_generations_being_answered(self):
        server = fx.Server(["--enable-server-load-tracking"], engine_args=LONG).__enter__()
        self.addCleanup(fx.stop, server)
        self.assertEqual(self.load(server), 0)
        n = fx.seeded_rng(self).randint(1, 3)
        streams = self.open_streams(server, n)
        self.assertEqual(self.load(server), n)
        for s in streams:
            s.close()  # the client leaves: the server notices on its next write
        self.assertEqual(self.settled_load(server, 0), 0)
        # A stream read to its end, and a whole response, count no more once answered.
        for _ in self.open_streams(server, 1, max_tokens=8)[0]:
            pass
        self.assertEqual(self.settled_load(server, 0), 0)
        fx.openai_client(server).completions.create(model=fx.MODEL, prompt="load", max_tokens=4)
        self.assertEqual(self.load(server), 0)

    def test_without_the_flag_load_stays_zero(self):
        server = fx.Server(engine_args=LONG).__enter__()
        self.addCleanup(fx.stop, server)
        streams = self.open_streams(server, 2)
        self.assertEqual(self.load(server), 0)
        for s in streams:
            s.close()

class ExcludeToolsWhenToolChoiceNone(unittest.TestCase):
    TEMPLATE = FIXTURES / "chat_templates" / "templates" / "Qwen-Qwen3-0.6B.jinja"  # renders tools

    def prompt_tokens(self, server, **kwargs):
        r = fx.openai_client(server).chat.completions.create(
            model=fx.MODEL, messages=[{"role": "user", "content": "Weather in Paris?"}],
            max_tokens=1, **kwargs)
        return r.usage.prompt_tokens

    def test_the_template_sees_no_tools_when_the_request_says_none(self):
        rng = fx.seeded_rng(self)
        name = "".join(rng.choice("abcdefgh") for _ in range(8))
        tools = [{"type": "function", "function": {
            "name": name, "description": "the weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
        for flags, excluded in (([], False), (["--exclude-tools-when-tool-choice-none"], True)):
            with self.subTest(flags=flags):
                server = fx.Server(["--chat-template", str(self.TEMPLATE), *flags],
                                   engine_args=LONG).__enter__()
                self.addCleanup(fx.stop, server)
                plain = self.prompt_tokens(server)
                with_tools = self.prompt_tokens(server, tools=tools, tool_choice="none")
                if excluded:
                    self.assertEqual(with_tools, plain)
                else:
                    self.assertGreater(with_tools, plain + len(name))


if __name__ == "__main__":
    unittest.main()


class ReturnTokensAsTokenIds(unittest.TestCase):
    """--return-tokens-as-token-ids and the requests' return_tokens_as_token_ids: logprobs name
    tokens "token_id:<id>" (vLLM's placeholder), the rest unchanged."""

    def complete(self, server, prompt, **body):
        status, r, _ = server.request("POST", "/v1/completions", {
            "model": fx.MODEL, "prompt": prompt, "temperature": 0, "ignore_eos": True,
            "return_token_ids": True, **body})
        self.assertEqual(status, 200, r)
        return r["choices"][0]

    def chat(self, server, text, **body):
        status, r, _ = server.request("POST", "/v1/chat/completions", {
            "model": fx.MODEL, "messages": [{"role": "user", "content": text}],
            "temperature": 0, "ignore_eos": True, "return_token_ids": True, "logprobs": True,
            **body})
        self.assertEqual(status, 200, r)
        return r["choices"][0]

    def test_logprobs_name_tokens_by_id(self):
        rng = fx.seeded_rng(self)
        prompt = "".join(rng.choice("abcdefgh ") for _ in range(rng.randint(3, 12)))
        max_tokens, num_top = rng.randint(2, 8), rng.randint(1, 4)
        server = fx.Server(["--return-tokens-as-token-ids"], engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, server)
        ids = self.complete(server, prompt, max_tokens=max_tokens, logprobs=num_top)
        text = self.complete(server, prompt, max_tokens=max_tokens, logprobs=num_top,
                             return_tokens_as_token_ids=False)
        self.assertEqual(ids["text"], text["text"])
        lp, text_lp = ids["logprobs"], text["logprobs"]
        self.assertEqual(lp["tokens"], [f"token_id:{t}" for t in ids["token_ids"]])
        self.assertNotEqual(text_lp["tokens"], lp["tokens"])
        # (The second request reuses the first's cached prefix: logprobs an ulp apart.)
        for a, b in zip(lp["token_logprobs"], text_lp["token_logprobs"]):
            self.assertAlmostEqual(a, b, places=4)
        # Offsets advance by the placeholders' lengths (vLLM's), from the same start.
        self.assertEqual(lp["text_offset"][0], text_lp["text_offset"][0])
        for k in range(1, max_tokens):
            self.assertEqual(lp["text_offset"][k] - lp["text_offset"][k - 1],
                             len(lp["tokens"][k - 1]))
        for top, text_top, token in zip(lp["top_logprobs"], text_lp["top_logprobs"],
                                         lp["tokens"]):
            self.assertIn(token, top)
            self.assertTrue(all(re.fullmatch(r"token_id:\d+", k) for k in top), top)
            # Names by text merge tokens that decode alike (bytes that are not UTF-8 alone
            # read as U+FFFD): by id each has its own entry.
            self.assertIn(len(top), (num_top, num_top + 1))
            for v in text_top.values():
                self.assertTrue(any(abs(v - w) < 1e-4 for w in top.values()), (text_top, top))
        # A stream names them the same way.
        streamed = []
        for c in fx.openai_client(server).completions.create(
                model=fx.MODEL, prompt=prompt, max_tokens=max_tokens, temperature=0,
                logprobs=num_top, stream=True, extra_body={"ignore_eos": True}):
            if c.choices and c.choices[0].logprobs:
                streamed += c.choices[0].logprobs.tokens
        self.assertEqual(streamed, lp["tokens"])

        # Chat: token and top tokens by id, the top ones' bytes the placeholder's, the sampled
        # token's bytes its text's (vLLM's decoded_token).
        chat = self.chat(server, prompt, max_tokens=max_tokens, top_logprobs=num_top)
        chat_text = self.chat(server, prompt, max_tokens=max_tokens, top_logprobs=num_top,
                              return_tokens_as_token_ids=False)
        content, text_content = chat["logprobs"]["content"], chat_text["logprobs"]["content"]
        self.assertEqual([e["token"] for e in content],
                         [f"token_id:{t}" for t in chat["token_ids"]])
        for e, t in zip(content, text_content):
            self.assertAlmostEqual(e["logprob"], t["logprob"], places=4)
            self.assertEqual(e["bytes"], t["bytes"])
            self.assertEqual(e["bytes"], list(t["token"].encode()))
            self.assertEqual(len(e["top_logprobs"]), num_top)
            self.assertEqual(e["top_logprobs"][0]["token"], e["token"])  # greedy: the top one
            for top in e["top_logprobs"]:
                self.assertRegex(top["token"], r"^token_id:\d+$")
                self.assertEqual(top["bytes"], list(top["token"].encode()))

        # Without the flag the request's field alone asks for it.
        plain = fx.Server(engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, plain)
        self.assertEqual(self.complete(plain, prompt, max_tokens=max_tokens,
                                       logprobs=num_top)["logprobs"]["tokens"], text_lp["tokens"])
        self.assertEqual(self.complete(plain, prompt, max_tokens=max_tokens, logprobs=num_top,
                                       return_tokens_as_token_ids=True)["logprobs"]["tokens"],
                         lp["tokens"])
        status, r, _ = plain.request("POST", "/v1/completions", {
            "model": fx.MODEL, "prompt": prompt, "return_tokens_as_token_ids": "yes"})
        self.assertEqual(status, 400, r)
        self.assertIn("return_tokens_as_token_ids", json.dumps(r))


class ResponseRole(unittest.TestCase):
    """--response-role and vLLM's get_chat_request_role: the reply's role after a generation
    prompt, else the last message's."""

    def role(self, server, stream=False, **body):
        body = {"model": fx.MODEL, "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 2, "stream": stream, **body}
        status, r, _ = server.request("POST", "/v1/chat/completions", body)
        self.assertEqual(status, 200, r)
        if not stream:
            return r["choices"][0]["message"]["role"]
        chunks = [json.loads(line[len("data: "):]) for line in r.splitlines()
                  if line.startswith("data: {")]
        roles = [c["choices"][0]["delta"]["role"] for c in chunks
                 if c["choices"] and "role" in c["choices"][0]["delta"]]
        self.assertEqual(len(roles), 1, chunks)  # the first chunk alone carries it
        return roles[0]

    def test_the_role_is_the_flags_after_a_generation_prompt(self):
        role = "".join(fx.seeded_rng(self).choice("abcxyz") for _ in range(6))
        server = fx.Server(["--response-role", role], engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, server)
        self.assertEqual(self.role(server), role)
        self.assertEqual(self.role(server, stream=True), role)
        self.assertEqual(self.role(server, add_generation_prompt=False), "user")
        self.assertEqual(self.role(server, stream=True, add_generation_prompt=False), "user")
        # echo repeats the last message when its role is the reply's.
        status, r, _ = server.request("POST", "/v1/chat/completions", {
            "model": fx.MODEL, "echo": True, "max_tokens": 1,
            "messages": [{"role": "user", "content": "q"}, {"role": role, "content": "said"}]})
        self.assertEqual(status, 200, r)
        self.assertTrue(r["choices"][0]["message"]["content"].startswith("said"), r)
        plain = fx.Server(engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, plain)
        self.assertEqual(self.role(plain), "assistant")
        self.assertEqual(self.role(plain, stream=True, add_generation_prompt=False), "user")


class SseKeepAliveInterval(unittest.TestCase):
    def test_an_idle_stream_gets_keep_alive_comments(self):
        # One sequence at a time: a stream queued behind long ones stays idle until they end.
        # Several ahead of it: one 4000-token output of the tiny model can take under a second
        # on a fast core, less than the interval.
        server = fx.Server(["--sse-keep-alive-interval", "1", "--max-num-seqs", "1"],
                           engine_args=LONG).__enter__()
        self.addCleanup(fx.stop, server)
        client = fx.openai_client(server)
        long_ones = [client.completions.create(model=fx.MODEL, prompt="long", max_tokens=4000,
                                               stream=True, extra_body={"ignore_eos": True})
                     for _ in range(6)]
        next(iter(long_ones[0]))
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        self.addCleanup(conn.close)
        conn.request("POST", "/v1/completions", json.dumps(
            {"model": fx.MODEL, "prompt": "queued", "max_tokens": 2, "stream": True}),
            {"Content-Type": "application/json"})
        r = conn.getresponse()
        self.assertEqual(r.status, 200)
        start = time.monotonic()
        first = r.readline().decode()
        waited = time.monotonic() - start
        if first != ": keep-alive\n":
            for stream in long_ones:
                stream.close()
            self.fail(f"{first!r} after {waited:.2f} s: the queued stream got data, not a "
                      "keep-alive (the long streams ended too soon?)")
        self.assertGreater(waited, 0.5)
        self.assertLess(waited, 10)
        for stream in long_ones:  # the queued request runs now, and its stream ends normally
            stream.close()
        rest = r.read().decode()
        self.assertIn("data: [DONE]", rest)

    def test_a_negative_or_huge_interval_stops_the_server(self):
        for value in ("-1", "86401", str(2**62)):
            rc, err = fx.failed_start(["--sse-keep-alive-interval", value])
            self.assertNotEqual(rc, 0, value)
            self.assertIn(f"--sse-keep-alive-interval {value} must be a non-negative integer",
                          err)


class SystemFingerprint(unittest.TestCase):
    """--fingerprint-mode / --fingerprint-value: vLLM 0.34's system_fingerprint, on whole chat
    and completion responses and on a stream's last chunk."""

    def serve(self, *flags, engine_args=SMALL):
        server = fx.Server(list(flags), engine_args=engine_args).__enter__()
        self.addCleanup(fx.stop, server)
        return server

    def fingerprints(self, server):
        """The fingerprint of a completion and of a chat response, both whole."""
        out = []
        for path, body in (("/v1/completions", {"prompt": "fp"}),
                           ("/v1/chat/completions", {"messages": [{"role": "user",
                                                                   "content": "fp"}]})):
            status, r, _ = server.request("POST", path, {"model": fx.MODEL, "max_tokens": 2,
                                                         **body})
            self.assertEqual(status, 200, r)
            self.assertIn("system_fingerprint", r)
            out.append(r["system_fingerprint"])
        self.assertEqual(out[0], out[1])
        return out[0]

    def stream_fingerprints(self, server, path, body):
        """Per chunk of a stream: its system_fingerprint, or None where it has none."""
        status, text, _ = server.request("POST", path, {"model": fx.MODEL, "stream": True,
                                                        "ignore_eos": True, **body})
        self.assertEqual(status, 200, text)
        chunks = [json.loads(line[len("data: "):]) for line in text.splitlines()
                  if line.startswith("data: {")]
        return chunks, [c.get("system_fingerprint") for c in chunks]

    def test_modes(self):
        rng = fx.seeded_rng(self)
        full = self.serve("--fingerprint-mode", "full", engine_args=fx.ENGINE_ARGS)
        _, version, _ = full.request("GET", "/version")
        prefix = re.escape(f"ctxpar-{version['version']}")
        got = self.fingerprints(full)
        self.assertRegex(got, rf"^{prefix}-tp4-dcp2-[0-9a-f]{{8}}$")  # ENGINE_ARGS: -tp 4 -dcp 2
        # A stream: the finishing chunk of each choice, or the usage chunk alone when asked.
        n = rng.randint(1, 3)
        for path, body in (("/v1/completions", {"prompt": "fp"}),
                           ("/v1/chat/completions", {"messages": [{"role": "user",
                                                                   "content": "fp"}]})):
            chunks, prints = self.stream_fingerprints(full, path, {**body, "n": n,
                                                                   "max_tokens": 3})
            finishing = [bool(c["choices"]) and c["choices"][0]["finish_reason"] is not None
                         for c in chunks]
            self.assertEqual(sum(finishing), n)
            self.assertEqual(prints, [got if f else None for f in finishing])
            chunks, prints = self.stream_fingerprints(full, path, {
                **body, "n": n, "max_tokens": 3, "stream_options": {"include_usage": True}})
            self.assertEqual(chunks[-1]["choices"], [])
            self.assertEqual(prints, [None] * (len(chunks) - 1) + [got])

        # hash: the same configuration's hash without the sizes; another dtype, another hash.
        same = self.serve("--fingerprint-mode", "hash", engine_args=fx.ENGINE_ARGS)
        self.assertEqual(self.fingerprints(same), f"ctxpar-{version['version']}-{got[-8:]}")
        bf16 = [a if a != "float32" else "bfloat16" for a in fx.ENGINE_ARGS]
        other = self.serve("--fingerprint-mode", "hash", engine_args=bf16)
        self.assertRegex(self.fingerprints(other), rf"^{prefix}-[0-9a-f]{{8}}$")
        self.assertNotEqual(self.fingerprints(other)[-8:], got[-8:])
        # One rank, vLLM's default mode: no sizes.
        self.assertRegex(self.fingerprints(self.serve()), rf"^{prefix}-[0-9a-f]{{8}}$")

        value = "fp-" + "".join(rng.choice("abcdef0123") for _ in range(8))
        self.assertEqual(self.fingerprints(self.serve("--fingerprint-mode", "custom",
                                                      "--fingerprint-value", value)), value)
        self.assertIsNone(self.fingerprints(self.serve("--fingerprint-mode", "custom")))
        none = self.serve("--fingerprint-mode", "none")
        self.assertIsNone(self.fingerprints(none))
        _, prints = self.stream_fingerprints(none, "/v1/completions",
                                             {"prompt": "fp", "max_tokens": 2})
        self.assertEqual(prints, [None] * len(prints))

    def test_a_bad_mode_stops_the_server(self):
        rc, err = fx.failed_start(["--fingerprint-mode", "partial"])
        self.assertNotEqual(rc, 0)
        self.assertIn("--fingerprint-mode 'partial' is not one of full, hash, custom, none", err)


class RequestChatTemplate(unittest.TestCase):
    """--trust-request-chat-template (a request's own chat_template replaces the model's; else
    such a request is refused, as vLLM's) and --reasoning-effort-map."""

    QWEN = FIXTURES / "chat_templates" / "templates" / "Qwen-Qwen3-0.6B.jinja"

    def tokenize(self, server, **body):
        status, r, _ = server.request("POST", "/tokenize", {"model": fx.MODEL, **body})
        return status, r

    def prompt_text(self, server, **body):
        """The chat prompt /tokenize renders for body, as text."""
        status, r = self.tokenize(server, **body)
        self.assertEqual(status, 200, r)
        status, text, _ = server.request("POST", "/detokenize", {"tokens": r["tokens"]})
        self.assertEqual(status, 200, text)
        return text["prompt"]

    def test_a_request_template_renders_when_trusted(self):
        rng = fx.seeded_rng(self)
        mark = "".join(rng.choice("ABCDEFGH") for _ in range(6))
        messages = [{"role": rng.choice(["user", "assistant"]),
                     "content": "".join(rng.choice("abc xyz") for _ in range(rng.randint(1, 9)))}
                    for _ in range(rng.randint(1, 4))]
        own = ("{% for m in messages %}[" + mark + " {{ m.role }}]{{ m.content }}{% endfor %}"
               "{% if add_generation_prompt %}[go]{% endif %}")
        # Its rendering, by its plain meaning.
        want = "".join(f"[{mark} {m['role']}]{m['content']}" for m in messages) + "[go]"
        server = self.serve("--trust-request-chat-template", "--chat-template", str(self.QWEN),
                            "--reasoning-effort-map", '{"medium": "low", "low": "none"}')
        self.assertEqual(self.prompt_text(server, messages=messages, chat_template=own), want)
        # The same through /v1/chat/completions: its prompt is as long; without the request's
        # template, the model's (Qwen3's) renders another prompt.
        status, r = self.tokenize(server, messages=messages, chat_template=own)
        count = r["count"]
        status, chat, _ = server.request("POST", "/v1/chat/completions", {
            "model": fx.MODEL, "messages": messages, "max_tokens": 1, "chat_template": own})
        self.assertEqual(status, 200, chat)
        self.assertEqual(chat["usage"]["prompt_tokens"], count)
        self.assertNotIn(mark, self.prompt_text(server, messages=messages))
        # A template that loops over content gets content as parts (vLLM's auto format).
        parts = "{% for m in messages %}{% for p in m.content %}<{{ p.text }}>{% endfor %}{% endfor %}"
        self.assertEqual(self.prompt_text(server, messages=messages, chat_template=parts),
                         "".join(f"<{m['content']}>" for m in messages))
        # A template ctxpar cannot parse: 400 naming chat_template, line and column.
        status, r = self.tokenize(server, messages=messages, chat_template="{% for %}")
        self.assertEqual(status, 400, r)
        self.assertEqual(r["error"]["param"], "chat_template")
        self.assertIn("chat_template:1:", r["error"]["message"])
        # --reasoning-effort-map: the template sees the mapped effort, and enable_thinking
        # follows it; an unlisted effort passes unchanged.
        shows = "{{ reasoning_effort }}/{{ enable_thinking }}"
        for effort, want in (("medium", "low/True"), ("low", "none/False"),
                             ("high", "high/True")):
            self.assertEqual(self.prompt_text(server, messages=messages, chat_template=shows,
                                              reasoning_effort=effort), want)

    def test_an_untrusted_request_template_is_refused(self):
        server = self.serve()
        messages = [{"role": "user", "content": "hi"}]
        for body in ({"chat_template": "{{ 1 }}"},
                     {"chat_template_kwargs": {"chat_template": "{{ 1 }}"}}):
            for path in ("/v1/chat/completions", "/tokenize"):
                status, r, _ = server.request("POST", path, {"model": fx.MODEL, "max_tokens": 1,
                                                             "messages": messages, **body})
                self.assertEqual(status, 400, (path, body, r))
                self.assertIn("--trust-request-chat-template is not set", r["error"]["message"])
        status, r, _ = server.request("POST", "/v1/chat/completions", {
            "model": fx.MODEL, "max_tokens": 1, "messages": messages,
            "chat_template_kwargs": {"chat_template": None}})
        self.assertEqual(status, 200, r)

    def test_a_bad_effort_map_stops_the_server(self):
        for value, says in (("[1]", "is not a JSON object"), ('{"low": 1}', "not a string"),
                            ("{", "is not JSON")):
            rc, err = fx.failed_start(["--reasoning-effort-map", value])
            self.assertNotEqual(rc, 0)
            self.assertIn("--reasoning-effort-map", err)
            self.assertIn(says, err)

    def serve(self, *flags):
        server = fx.Server(list(flags), engine_args=LONG).__enter__()
        self.addCleanup(fx.stop, server)
        return server


class PerRequestMetricsAndPromptText(unittest.TestCase):
    """--enable-per-request-metrics (vLLM 0.34's metrics on responses of one choice) and the
    chat request's return_prompt_text."""

    FIELDS = ("time_to_first_token_ms", "generation_time_ms", "queue_time_ms", "mean_itl_ms",
              "tokens_per_second")

    def post(self, server, path, **body):
        status, r, _ = server.request("POST", path, {"model": fx.MODEL, "ignore_eos": True,
                                                     "temperature": 0, **body})
        self.assertEqual(status, 200, r)
        return r

    def check_metrics(self, m, tokens, elapsed_ms):
        for field in self.FIELDS[:3] + ("tokens_per_second",):
            self.assertGreaterEqual(m[field], 0, (field, m))
        # queue + first token + the rest fit in what the client waited.
        self.assertLessEqual(m["queue_time_ms"] + m["time_to_first_token_ms"]
                             + m["generation_time_ms"], elapsed_ms + 1)
        # tokens/s: every token over the time from scheduling to the last one.
        inference_ms = m["time_to_first_token_ms"] + m["generation_time_ms"]
        if inference_ms > 0:
            self.assertAlmostEqual(m["tokens_per_second"], tokens / inference_ms * 1000,
                                   delta=1e-6 * m["tokens_per_second"])
        if tokens > 1:
            self.assertAlmostEqual(m["mean_itl_ms"], m["generation_time_ms"] / (tokens - 1),
                                   delta=1e-6 * max(1, m["generation_time_ms"]))
        else:
            self.assertIsNone(m.get("mean_itl_ms"))

    def test_disable_log_stats_refuses_the_metrics_as_vllm_does(self):
        rc, err = fx.failed_start(["--enable-per-request-metrics", "--disable-log-stats"])
        self.assertNotEqual(rc, 0)
        self.assertIn("--enable-per-request-metrics needs the engine's statistics, which "
                      "--disable-log-stats turns off", err)
        # Either alone starts (the flag alone is the test below).
        server = fx.Server(["--disable-log-stats"], engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, server)
        self.post(server, "/v1/completions", prompt="x", max_tokens=1)

    def test_metrics_ride_on_responses_of_one_choice(self):
        rng = fx.seeded_rng(self)
        server = fx.Server(["--enable-per-request-metrics"], engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, server)
        for tokens in (1, rng.randint(2, 12)):
            start = time.monotonic()
            r = self.post(server, "/v1/completions", prompt="metrics", max_tokens=tokens)
            elapsed_ms = (time.monotonic() - start) * 1000
            self.assertEqual(set(r["metrics"]), set(self.FIELDS) | {"speculative_decoding"})
            self.assertIsNone(r["metrics"]["speculative_decoding"])
            self.check_metrics(r["metrics"], tokens, elapsed_ms)
        start = time.monotonic()
        chat = self.post(server, "/v1/chat/completions", max_tokens=tokens,
                         messages=[{"role": "user", "content": "metrics"}])
        self.check_metrics(chat["metrics"], tokens, (time.monotonic() - start) * 1000)
        # Not one choice: null, as vLLM (the times would not belong to the response).
        self.assertIsNone(self.post(server, "/v1/completions", prompt="m", max_tokens=2,
                                    n=2, temperature=1)["metrics"])
        self.assertIsNone(self.post(server, "/v1/completions", prompt=["m", "n"],
                                    max_tokens=2)["metrics"])
        # Streams: on the usage chunk (without nulls), so only with usage asked for.
        for path, body in (("/v1/completions", {"prompt": "metrics"}),
                           ("/v1/chat/completions", {"messages": [{"role": "user",
                                                                   "content": "metrics"}]})):
            start = time.monotonic()
            status, text, _ = server.request("POST", path, {
                "model": fx.MODEL, "stream": True, "max_tokens": tokens, "ignore_eos": True,
                "stream_options": {"include_usage": True}, **body})
            chunks = [json.loads(line[6:]) for line in text.splitlines()
                      if line.startswith("data: {")]
            self.assertEqual([("metrics" in c) for c in chunks],
                             [False] * (len(chunks) - 1) + [True], path)
            self.assertEqual(set(chunks[-1]["metrics"]), set(self.FIELDS))
            self.check_metrics(chunks[-1]["metrics"], tokens, (time.monotonic() - start) * 1000)
            status, text, _ = server.request("POST", path, {
                "model": fx.MODEL, "stream": True, "max_tokens": tokens, **body})
            self.assertNotIn('"metrics"', text)
        # Without the flag: null.
        plain = fx.Server(engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, plain)
        r = self.post(plain, "/v1/chat/completions", max_tokens=2,
                      messages=[{"role": "user", "content": "metrics"}])
        self.assertIsNone(r["metrics"])
        # vLLM 0.34's other fields of a whole chat response and its choices, null here.
        for key in ("service_tier", "prompt_token_ids", "prompt_text", "kv_transfer_params",
                    "ec_transfer_params"):
            self.assertIsNone(r[key], key)
        for key in ("routed_experts", "weight_versions"):
            self.assertIsNone(r["choices"][0][key], key)

    def test_return_prompt_text(self):
        server = fx.Server(engine_args=SMALL).__enter__()
        self.addCleanup(fx.stop, server)
        content = "".join(fx.seeded_rng(self).choice("pqrs ") for _ in range(12))
        messages = [{"role": "user", "content": content}]
        r = self.post(server, "/v1/chat/completions", max_tokens=2, messages=messages,
                      return_prompt_text=True, return_token_ids=True)
        text = r["prompt_text"]
        self.assertIn(content, text)
        status, tokenized, _ = server.request("POST", "/tokenize", {"prompt": text})
        self.assertEqual(tokenized["tokens"], r["prompt_token_ids"])
        status, stream, _ = server.request("POST", "/v1/chat/completions", {
            "model": fx.MODEL, "messages": messages, "max_tokens": 2, "stream": True,
            "return_prompt_text": True})
        chunks = [json.loads(line[6:]) for line in stream.splitlines()
                  if line.startswith("data: {")]
        self.assertEqual([c.get("prompt_text") for c in chunks],
                         [text] + [None] * (len(chunks) - 1))
        # The role chunk holds both keys, null when not asked for (vLLM sets them); no other
        # chunk has them.
        status, stream, _ = server.request("POST", "/v1/chat/completions", {
            "model": fx.MODEL, "messages": messages, "max_tokens": 2, "stream": True})
        self.assertEqual(status, 200, stream)
        chunks = [json.loads(line[6:]) for line in stream.splitlines()
                  if line.startswith("data: {")]
        self.assertEqual(chunks[0]["choices"][0]["delta"].get("role"), "assistant")
        self.assertEqual((chunks[0]["prompt_token_ids"], chunks[0]["prompt_text"]), (None, None))
        self.assertTrue(all("prompt_text" not in c for c in chunks[1:]))
        self.assertIsNone(self.post(server, "/v1/chat/completions", max_tokens=1,
                                    messages=messages)["prompt_text"])
