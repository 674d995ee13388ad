"""`ctxpar serve` through the official openai client: greedy tokens equal `ctxpar generate`,
streams equal whole responses, 64 concurrent streams, stop strings, logprobs, prompt logprobs
and echo, logit_bias, allowed_token_ids and bad_words, n with seeds, min_tokens, and the small routes
(/v1/models, /version, /tokenize, /detokenize, SageMaker's /invocations), and response ids
from X-Request-Id or the body's request_id."""

import concurrent.futures
import json
import math
import unittest

import openai

import server_fixture as fx


class OpenAiClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server().__enter__()
        cls.client = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def complete(self, **kwargs):
        return self.client.completions.create(model=fx.MODEL, **kwargs).model_dump()

    def test_greedy_tokens_equal_generate(self):
        rng = fx.seeded_rng(self)
        prompts = fx.random_prompts(rng, 6)
        max_tokens = rng.randint(1, 12)
        want = fx.generate(prompts, max_tokens)
        got = self.complete(prompt=prompts, max_tokens=max_tokens, temperature=0,
                            extra_body={"ignore_eos": True, "return_token_ids": True})
        self.assertEqual(len(got["choices"]), len(prompts))
        for i, choice in enumerate(got["choices"]):
            self.assertEqual(choice["index"], i)
            self.assertEqual(choice["token_ids"], want[i], f"prompt {i}")
            self.assertEqual(choice["prompt_token_ids"], prompts[i])
            self.assertEqual(choice["finish_reason"], "length")
        self.assertEqual(got["usage"]["prompt_tokens"], sum(map(len, prompts)))
        self.assertEqual(got["usage"]["completion_tokens"], max_tokens * len(prompts))
        # One prompt per request, while others run: the same tokens.
        with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
            singles = list(pool.map(lambda p: self.complete(
                prompt=p, max_tokens=max_tokens, temperature=0,
                extra_body={"ignore_eos": True, "return_token_ids": True}), prompts))
        for i, single in enumerate(singles):
            self.assertEqual(single["choices"][0]["token_ids"], want[i], f"prompt {i} alone")

    def test_text_prompt_is_byte_tokenized_with_bos(self):
        text = "Decode context parallelism"
        ids = [256] + list(text.encode())  # BOS, then the bytes
        want = fx.generate([ids], 8)[0]
        got = self.complete(prompt=text, max_tokens=8, temperature=0,
                            extra_body={"ignore_eos": True, "return_token_ids": True})
        self.assertEqual(got["choices"][0]["prompt_token_ids"], ids)
        self.assertEqual(got["choices"][0]["token_ids"], want)

    def stream_completion(self, **kwargs):
        text, token_ids, finish, usage, stop_reason = "", [], None, None, None
        for chunk in self.client.completions.create(model=fx.MODEL, stream=True, **kwargs):
            c = chunk.model_dump()
            if c["choices"]:
                self.assertIsNone(finish, "a chunk after the finish_reason")
                choice = c["choices"][0]
                text += choice["text"]
                token_ids += choice.get("token_ids") or []
                finish = choice["finish_reason"]
                stop_reason = choice.get("stop_reason")
            if c.get("usage"):
                usage = c["usage"]
        return text, token_ids, finish, usage, stop_reason

    def test_stream_equals_whole_response(self):
        rng = fx.seeded_rng(self)
        for _ in range(3):
            prompt = fx.random_prompts(rng, 1)[0]
            args = dict(prompt=prompt, max_tokens=rng.randint(1, 40), temperature=0,
                        extra_body={"ignore_eos": True, "return_token_ids": True})
            whole = self.complete(**args)
            text, token_ids, finish, usage, _ = self.stream_completion(
                stream_options={"include_usage": True}, **args)
            self.assertEqual(text, whole["choices"][0]["text"])
            self.assertEqual(token_ids, whole["choices"][0]["token_ids"])
            self.assertEqual(finish, "length")
            self.assertEqual(usage["prompt_tokens"], whole["usage"]["prompt_tokens"])
            self.assertEqual(usage["completion_tokens"], whole["usage"]["completion_tokens"])
            self.assertEqual(usage["total_tokens"], whole["usage"]["total_tokens"])

    def test_chat_stream_starts_with_the_role_and_equals_the_whole_message(self):
        messages = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "What is DCP?"}]
        args = dict(model=fx.MODEL, messages=messages, max_completion_tokens=24, temperature=0,
                    extra_body={"ignore_eos": True, "skip_special_tokens": False})
        whole = self.client.chat.completions.create(**args).model_dump()
        self.assertEqual(whole["object"], "chat.completion")
        self.assertEqual(whole["choices"][0]["message"]["role"], "assistant")
        chunks = [c.model_dump() for c in self.client.chat.completions.create(
            stream=True, stream_options={"include_usage": True}, **args)]
        first = chunks[0]["choices"][0]
        self.assertEqual(first["delta"]["role"], "assistant")
        self.assertEqual(first["delta"]["content"], "")
        self.assertIsNone(first["finish_reason"])
        content = "".join(c["choices"][0]["delta"]["content"] or "" for c in chunks if c["choices"])
        self.assertEqual(content, whole["choices"][0]["message"]["content"])
        finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
        self.assertEqual(finishes[-1], "length")
        self.assertTrue(all(f is None for f in finishes[:-1]))
        self.assertEqual(chunks[-1]["choices"], [])
        self.assertEqual(chunks[-1]["usage"]["completion_tokens"], 24)
        self.assertEqual(chunks[-1]["usage"]["prompt_tokens"], whole["usage"]["prompt_tokens"])

    def test_tools_need_the_tool_call_flags_unless_tool_choice_is_none(self):
        tools = [{"type": "function", "function": {"name": "weather"}}]
        args = dict(model=fx.MODEL, messages=[{"role": "user", "content": "Weather?"}],
                    max_completion_tokens=4, temperature=0, tools=tools,
                    extra_body={"ignore_eos": True})
        # vLLM's default with tools is "auto", which needs --enable-auto-tool-choice.
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.chat.completions.create(**args)
        self.assertIn('"auto" tool choice requires --enable-auto-tool-choice and '
                      "--tool-call-parser to be set", str(caught.exception))
        plain = self.client.chat.completions.create(tool_choice="none", **args).model_dump()
        self.assertEqual(plain["choices"][0]["finish_reason"], "length")
        self.assertEqual(plain["usage"]["completion_tokens"], 4)

    def test_64_concurrent_streams_finish_with_the_right_usage(self):
        rng = fx.seeded_rng(self)
        jobs = [(fx.random_prompts(rng, 1, 1, 40)[0], rng.randint(1, 24)) for _ in range(64)]

        def run(job):
            prompt, max_tokens = job
            return self.stream_completion(prompt=prompt, max_tokens=max_tokens, temperature=0,
                                          stream_options={"include_usage": True},
                                          extra_body={"ignore_eos": True})

        with concurrent.futures.ThreadPoolExecutor(64) as pool:
            results = list(pool.map(run, jobs))
        for (prompt, max_tokens), (_, _, finish, usage, _) in zip(jobs, results):
            self.assertEqual(finish, "length")
            self.assertEqual(usage["prompt_tokens"], len(prompt))
            self.assertEqual(usage["completion_tokens"], max_tokens)
        self.server.wait_idle()

    def test_stop_strings_cut_the_text_and_name_the_string(self):
        rng = fx.seeded_rng(self)
        for _ in range(20):
            prompt = fx.random_prompts(rng, 1)[0]
            base = self.complete(prompt=prompt, max_tokens=30, temperature=0,
                                 extra_body={"ignore_eos": True})["choices"][0]["text"]
            # Where a two-character stop string can cut: from the third character on, text
            # after it, no U+FFFD in it (the tiny model's random byte tokens often decode to
            # it). Looking only at characters 2-5 found no such text in 20 prompts ~3% of runs.
            cuts = [at for at in range(2, len(base) - 2) if "\ufffd" not in base[at:at + 2]]
            if cuts:
                break
        else:
            self.fail("no greedy text with two characters to cut at")
        stop = base[rng.choice(cuts):][:2]
        first = base.index(stop)
        for include in (False, True):
            args = dict(prompt=prompt, max_tokens=30, temperature=0, stop=[stop, "\x00never"],
                        extra_body={"ignore_eos": True, "include_stop_str_in_output": include})
            got = self.complete(**args)["choices"][0]
            want = base[:first + len(stop)] if include else base[:first]
            self.assertEqual(got["text"], want)
            self.assertEqual(got["finish_reason"], "stop")
            self.assertEqual(got["stop_reason"], stop)
            text, _, finish, _, stop_reason = self.stream_completion(**args)
            self.assertEqual(text, want)
            self.assertEqual((finish, stop_reason), ("stop", stop))

    def test_logprobs_of_greedy_tokens(self):
        rng = fx.seeded_rng(self)
        prompt = fx.random_prompts(rng, 1)[0]
        got = self.complete(prompt=prompt, max_tokens=6, temperature=0, logprobs=3,
                            extra_body={"ignore_eos": True})["choices"][0]["logprobs"]
        self.assertEqual(len(got["tokens"]), 6)
        for token, lp, top in zip(got["tokens"], got["token_logprobs"], got["top_logprobs"]):
            self.assertLessEqual(lp, 0)
            self.assertIn(token, top)
            self.assertAlmostEqual(top[token], lp, places=5)
            # Greedy: the sampled token is the most likely one.
            self.assertAlmostEqual(max(top.values()), lp, places=5)
            self.assertLessEqual(sum(math.exp(v) for v in top.values()), 1 + 1e-5)
        self.assertEqual(got["text_offset"][0], 0)
        chat = self.client.chat.completions.create(
            model=fx.MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=4,
            temperature=0, logprobs=True, top_logprobs=2,
            extra_body={"ignore_eos": True}).model_dump()
        content = chat["choices"][0]["logprobs"]["content"]
        self.assertEqual(len(content), 4)
        for entry in content:
            self.assertEqual(len(entry["top_logprobs"]), 2)
            self.assertAlmostEqual(entry["top_logprobs"][0]["logprob"], entry["logprob"], places=5)
            self.assertEqual(entry["bytes"], list(entry["token"].encode()))

    def test_echo_and_prompt_logprobs_score_the_prompt(self):
        # The tokens a greedy run produced, fed back as a prompt: their prompt logprobs (scored
        # by a prefill) must be the logprobs they were sampled with (one decode step each).
        rng = fx.seeded_rng(self)
        prompt = fx.random_prompts(rng, 1, low=2, high=40)[0]
        num_top = rng.randint(1, 4)
        first = self.complete(prompt=prompt, max_tokens=5, temperature=0, logprobs=num_top,
                              extra_body={"ignore_eos": True, "return_token_ids": True})
        first = first["choices"][0]
        full = prompt + first["token_ids"]

        # echo + logprobs + max_tokens 0 (lm-eval's loglikelihood request): the prompt alone.
        echoed = self.complete(prompt=full, max_tokens=0, echo=True, logprobs=num_top,
                               temperature=0)
        choice = echoed["choices"][0]
        lp = choice["logprobs"]
        self.assertEqual(len(lp["tokens"]), len(full))
        self.assertIsNone(lp["token_logprobs"][0])
        self.assertIsNone(lp["top_logprobs"][0])
        self.assertEqual(lp["text_offset"][0], 0)
        for k in range(1, len(full)):
            self.assertEqual(lp["text_offset"][k],
                             lp["text_offset"][k - 1] + len(lp["tokens"][k - 1]))
            top = lp["top_logprobs"][k]
            self.assertIn(lp["tokens"][k], top)
            # Keyed by token text: bytes that decode alike (U+FFFD) share one key.
            self.assertLessEqual(len(top), num_top + 1)
            self.assertGreaterEqual(max(top.values()), lp["token_logprobs"][k] - 1e-6)
        for k, want in enumerate(first["logprobs"]["token_logprobs"]):
            self.assertAlmostEqual(lp["token_logprobs"][len(prompt) + k], want, places=4)
        self.assertEqual(choice["finish_reason"], "length")
        self.assertEqual(echoed["usage"]["completion_tokens"], 1)

        # prompt_logprobs: vLLM's per-token dicts keyed by token id, the prompt token first.
        scored = self.complete(prompt=full, max_tokens=1, temperature=0,
                               extra_body={"prompt_logprobs": num_top})["choices"][0]
        plp = scored["prompt_logprobs"]
        self.assertEqual(len(plp), len(full))
        self.assertIsNone(plp[0])
        for k in range(1, len(full)):
            entry = plp[k]
            own = entry[str(full[k])]
            self.assertAlmostEqual(own["logprob"], lp["token_logprobs"][k], places=5)
            # The top tokens rank 1..num_top; the prompt token, when not among them, after.
            ranks = sorted(v["rank"] for v in entry.values())
            if len(entry) == num_top:
                self.assertLessEqual(own["rank"], num_top)
                self.assertEqual(ranks, list(range(1, num_top + 1)))
            else:
                self.assertGreater(own["rank"], num_top)
                self.assertEqual(ranks, list(range(1, num_top + 1)) + [own["rank"]])
            for v in entry.values():
                self.assertLessEqual(v["logprob"], 0)
                self.assertIsInstance(v["decoded_token"], str)
        self.assertIsNone(first.get("prompt_logprobs"))

        # Echo with generation, streamed: the first chunk carries the prompt and its scores,
        # and the offsets run on across chunks.
        stream = self.client.completions.create(
            model=fx.MODEL, prompt=prompt, max_tokens=5, temperature=0, logprobs=num_top,
            echo=True, stream=True, extra_body={"ignore_eos": True})
        tokens, offsets, logprobs, text = [], [], [], ""
        for chunk in stream:
            for c in chunk.choices:
                text += c.text
                if c.logprobs:
                    tokens += c.logprobs.tokens
                    offsets += c.logprobs.text_offset
                    logprobs += c.logprobs.token_logprobs
        self.assertEqual(len(tokens), len(full))
        self.assertEqual(tokens, lp["tokens"])
        self.assertEqual(offsets, lp["text_offset"])
        prompt_text = self.complete(prompt=prompt, max_tokens=0, echo=True)["choices"][0]["text"]
        self.assertEqual(text, prompt_text + first["text"])
        self.assertIsNone(logprobs[0])
        for got, want in zip(logprobs[1:], lp["token_logprobs"][1:]):
            self.assertAlmostEqual(got, want, places=4)

        # Chat echo (vLLM's): the last message's content starts the reply when it has the
        # reply's role (continuing an assistant message); a user's last message is not echoed.
        partial = [{"role": "user", "content": "hi"},
                   {"role": "assistant", "content": "The answer is"}]
        cont = dict(model=fx.MODEL, messages=partial, max_tokens=4, temperature=0,
                    extra_body={"ignore_eos": True, "continue_final_message": True,
                                "add_generation_prompt": False, "echo": True})
        reply = self.client.chat.completions.create(**cont).choices[0].message.content
        cont["extra_body"]["echo"] = False
        bare = self.client.chat.completions.create(**cont).choices[0].message.content
        self.assertEqual(reply, "The answer is" + bare)
        cont["extra_body"]["echo"] = True
        streamed = "".join(c.choices[0].delta.content or "" for c in
                           self.client.chat.completions.create(stream=True, **cont) if c.choices)
        self.assertEqual(streamed, reply)
        asked = dict(model=fx.MODEL, messages=partial[:1], max_tokens=4, temperature=0,
                     extra_body={"ignore_eos": True})
        plain = self.client.chat.completions.create(**asked).choices[0].message.content
        asked["extra_body"]["echo"] = True
        self.assertEqual(self.client.chat.completions.create(**asked).choices[0].message.content,
                         plain)

        # Chat: the scores of the rendered prompt, once, beside the choices.
        chat = self.client.chat.completions.create(
            model=fx.MODEL, messages=[{"role": "user", "content": "hi there"}], max_tokens=2,
            temperature=0, extra_body={"ignore_eos": True, "prompt_logprobs": 0}).model_dump()
        plp = chat["prompt_logprobs"]
        self.assertEqual(len(plp), chat["usage"]["prompt_tokens"])
        self.assertIsNone(plp[0])
        self.assertTrue(all(len(entry) == 1 for entry in plp[1:]))

    def test_logit_bias_and_allowed_token_ids(self):
        rng = fx.seeded_rng(self)
        prompt = fx.random_prompts(rng, 1)[0]
        favoured = rng.randrange(256)
        got = self.complete(prompt=prompt, max_tokens=6, temperature=0,
                            logit_bias={str(favoured): 100},
                            extra_body={"ignore_eos": True, "return_token_ids": True})
        self.assertEqual(got["choices"][0]["token_ids"], [favoured] * 6)
        # logprobs stay the model's (before the bias), as vLLM's default raw_logprobs.
        plain = self.complete(prompt=prompt, max_tokens=1, temperature=0, logprobs=0,
                              extra_body={"ignore_eos": True})["choices"][0]
        biased = self.complete(prompt=prompt, max_tokens=1, temperature=0, logprobs=0,
                               logit_bias={str(favoured): -100},
                               extra_body={"ignore_eos": True})["choices"][0]
        if plain["logprobs"]["tokens"] == biased["logprobs"]["tokens"]:
            self.assertAlmostEqual(plain["logprobs"]["token_logprobs"][0],
                                   biased["logprobs"]["token_logprobs"][0], places=5)
        allowed = rng.sample(range(256), 3)
        sampled = self.complete(prompt=prompt, max_tokens=12, temperature=1.0, seed=rng.randrange(99),
                                extra_body={"ignore_eos": True, "return_token_ids": True,
                                            "allowed_token_ids": allowed})
        self.assertTrue(set(sampled["choices"][0]["token_ids"]) <= set(allowed), allowed)
        # bad_words: biases make the greedy text "yyyy..."; banning "yy" bans y right after y,
        # so x (the next best) comes between them.
        x, y = ord("x"), ord("y")
        forced = dict(prompt=prompt, max_tokens=6, temperature=0,
                      logit_bias={str(y): 100, str(x): 90})
        plain = self.complete(extra_body={"ignore_eos": True}, **forced)["choices"][0]["text"]
        self.assertEqual(plain, "yyyyyy")
        banned = self.complete(extra_body={"ignore_eos": True, "bad_words": ["yy"]},
                               **forced)["choices"][0]["text"]
        self.assertEqual(banned, "yxyxyx")
        one = self.complete(extra_body={"ignore_eos": True, "bad_words": [" y"]},
                            **forced)["choices"][0]["text"]
        self.assertEqual(one, "xxxxxx")
        for extra, needle in (({"logit_bias": {"600": 1}}, "in logit_bias contain out-of-vocab"),
                              ({"extra_body": {"allowed_token_ids": [3, 999]}},
                               "allowed_token_ids contains out-of-vocab token id")):
            with self.assertRaises(openai.BadRequestError) as caught:
                self.complete(prompt=prompt, max_tokens=2, **extra)
            self.assertIn(needle, str(caught.exception))

    def test_n_choices_are_seeded_consistently(self):
        args = dict(prompt=[1, 2, 3, 4], max_tokens=8, temperature=1.0, n=3, seed=1234,
                    extra_body={"ignore_eos": True, "return_token_ids": True})
        first = self.complete(**args)
        again = self.complete(**args)
        self.assertEqual([c["index"] for c in first["choices"]], [0, 1, 2])
        self.assertEqual([c["token_ids"] for c in first["choices"]],
                         [c["token_ids"] for c in again["choices"]])
        self.assertEqual(first["usage"]["completion_tokens"], 24)
        self.assertEqual(first["usage"]["prompt_tokens"], 4)

    def test_stop_token_ids_and_min_tokens(self):
        rng = fx.seeded_rng(self)
        prompt = fx.random_prompts(rng, 1)[0]
        extra = {"ignore_eos": True, "return_token_ids": True}
        greedy = self.complete(prompt=prompt, max_tokens=8, temperature=0,
                               extra_body=extra)["choices"][0]["token_ids"]
        stop_id = greedy[0]
        got = self.complete(prompt=prompt, max_tokens=8, temperature=0,
                            extra_body={**extra, "stop_token_ids": [stop_id]})["choices"][0]
        self.assertEqual(got["token_ids"], [stop_id])
        self.assertEqual((got["finish_reason"], got["stop_reason"]), ("stop", stop_id))
        # min_tokens masks the stop id (and EOS) for the first outputs: they cannot end it.
        got = self.complete(prompt=prompt, max_tokens=8, temperature=0,
                            extra_body={**extra, "stop_token_ids": [stop_id],
                                        "min_tokens": 4})["choices"][0]
        self.assertGreaterEqual(len(got["token_ids"]), 4)
        self.assertNotIn(stop_id, got["token_ids"][:4])

    def test_models_version_tokenize_detokenize(self):
        models = self.client.models.list().model_dump()["data"]
        self.assertEqual(len(models), 1)
        self.assertEqual(models[0]["id"], fx.MODEL)
        self.assertEqual(models[0]["root"], fx.MODEL)
        self.assertEqual(models[0]["max_model_len"], 512)
        status, version, _ = self.server.request("GET", "/version")
        self.assertEqual(status, 200)
        self.assertIn("version", version)
        status, tok, _ = self.server.request("POST", "/tokenize", {"prompt": "hello"})
        self.assertEqual(status, 200)
        self.assertEqual(tok["tokens"], [256] + list(b"hello"))
        self.assertEqual(tok["count"], 6)
        self.assertEqual(tok["max_model_len"], 512)
        status, detok, _ = self.server.request("POST", "/detokenize", {"tokens": tok["tokens"]})
        self.assertEqual((status, detok["prompt"]), (200, "hello"))

    def test_invocations_runs_chat_and_completion_bodies(self):
        rng = fx.seeded_rng(self)
        prompt = fx.random_prompts(rng, 1)[0]
        max_tokens = rng.randint(1, 12)
        status, got, _ = self.server.request("POST", "/invocations", {
            "model": fx.MODEL, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "ignore_eos": True, "return_token_ids": True})
        self.assertEqual(status, 200, got)
        self.assertEqual(got["object"], "text_completion")
        self.assertEqual(got["choices"][0]["token_ids"], fx.generate([prompt], max_tokens)[0])

        chat = {"model": fx.MODEL, "max_completion_tokens": max_tokens, "temperature": 0,
                "ignore_eos": True, "prompt": "a completion field the chat request ignores",
                "messages": [{"role": "user", "content": f"Say {rng.randint(0, 10**6)}"}]}
        want = self.client.chat.completions.create(
            model=fx.MODEL, messages=chat["messages"], max_completion_tokens=max_tokens,
            temperature=0, extra_body={"ignore_eos": True}).model_dump()
        status, got, _ = self.server.request("POST", "/invocations", chat)
        self.assertEqual(status, 200, got)
        self.assertEqual(got["object"], "chat.completion")
        self.assertEqual(got["choices"][0]["message"]["content"],
                         want["choices"][0]["message"]["content"])
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            self.assertEqual(got["usage"][key], want["usage"][key], key)

        status, events, headers = self.server.request("POST", "/invocations",
                                                      {**chat, "stream": True})
        self.assertEqual(status, 200, events)
        self.assertTrue(headers["Content-Type"].startswith("text/event-stream"), headers)
        lines = [ln[len("data: "):] for ln in events.split("\n") if ln.startswith("data: ")]
        self.assertEqual(lines[-1], "[DONE]")
        chunks = [json.loads(ln) for ln in lines[:-1]]
        self.assertTrue(all(c["object"] == "chat.completion.chunk" for c in chunks))
        self.assertEqual("".join(c["choices"][0]["delta"].get("content") or "" for c in chunks),
                         want["choices"][0]["message"]["content"])

        status, err, _ = self.server.request("POST", "/invocations",
                                             {"model": fx.MODEL, "max_tokens": 4})
        self.assertEqual(status, 400, err)
        self.assertEqual(err["error"]["message"],
                         "Cannot find suitable handler for request. Expected one of: "
                         "['ChatCompletionRequest', 'CompletionRequest']")
        status, err, _ = self.server.request("POST", "/invocations", ["not", "an", "object"])
        self.assertEqual(status, 400, err)
        status, err, _ = self.server.request("POST", "/invocations", raw=json.dumps(chat),
                                             headers={"Content-Type": "text/plain"})
        self.assertEqual(status, 415, err)

    def test_response_ids_come_from_x_request_id_or_request_id(self):
        rng = fx.seeded_rng(self)
        tag = f"trace-{rng.randint(0, 10**9)}"
        args = dict(model=fx.MODEL, max_tokens=3, temperature=0, extra_body={"ignore_eos": True})
        got = self.client.completions.create(prompt="ids", extra_headers={"X-Request-Id": tag},
                                             **args)
        self.assertEqual(got.id, f"cmpl-{tag}")
        got = self.client.completions.create(prompt="ids", **{
            **args, "extra_body": {"ignore_eos": True, "request_id": tag + "-body"}})
        self.assertEqual(got.id, f"cmpl-{tag}-body")
        messages = [{"role": "user", "content": "ids"}]
        # The header wins over the body; requests that share an id may overlap.
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            chats = list(pool.map(lambda _: self.client.chat.completions.create(
                messages=messages, extra_headers={"X-Request-Id": tag},
                **{**args, "extra_body": {"ignore_eos": True, "request_id": "not-this"}}),
                range(4)))
        self.assertEqual({c.id for c in chats}, {f"chatcmpl-{tag}"})
        self.assertEqual({c.choices[0].message.content for c in chats}, {chats[0].choices[0].message.content})
        chunks = list(self.client.chat.completions.create(
            messages=messages, stream=True, extra_headers={"X-Request-Id": tag}, **args))
        self.assertEqual({c.id for c in chunks}, {f"chatcmpl-{tag}"})
        plain = self.client.chat.completions.create(messages=messages, **args)
        self.assertRegex(plain.id, r"^chatcmpl-[0-9a-f]{32}$")
        status, err, _ = self.server.request(
            "POST", "/v1/completions", {"model": fx.MODEL, "prompt": "ids", "request_id": 7})
        self.assertEqual(status, 400, err)
        self.assertEqual(err["error"]["param"], "request_id")


if __name__ == "__main__":
    unittest.main()
