"""`ctxpar serve --reasoning-parser deepseek_v3 --enable-auto-tool-choice --tool-call-parser
hermes` (and the GLM recipe's glm45 and glm47) through the openai client: deepseek_v3 splits
only with chat_template_kwargs thinking, glm45 unless they turn the thinking off,
the split output is the unsplit one, a stream's reasoning deltas add up to the whole message's;
a request with tools and no call in the output keeps its text as content, tool_choice
"required" replaces the parser (its output is held to JSON: test_structured_outputs.py),
--chat-template-content-format hands the template text or parts as vLLM
does, --tokenizer-mode deepseek_v32 encodes chats as DeepSeek-V3.2 (and DeepSeek-V3.2's whole
recipe line serves), and bad flags stop the server with the rule. (The tiny model
writes neither </think> nor <tool_call>; the splits themselves are tested in
reasoning_parser_test.cc, tool_call_parser_test.cc, glm_tool_calls_test.cc and
dsml_tool_calls_test.cc.)"""

import os
import re
import subprocess
import tempfile
import unittest

import openai

import server_fixture as fx


def assert_text_stays_content(test, client, args):
    """A chat with tools whose output holds no call: the whole message and the stream carry
    the text as content, with no tool_calls, ending by length. Returns the whole choice."""
    whole = client.chat.completions.create(**args).model_dump()["choices"][0]
    test.assertTrue(whole["message"]["content"])
    test.assertFalse(whole["message"]["tool_calls"])
    test.assertEqual(whole["finish_reason"], "length")
    chunks = [c.model_dump() for c in client.chat.completions.create(stream=True, **args)]
    choices = [c["choices"][0] for c in chunks if c["choices"]]
    test.assertEqual("".join(c["delta"]["content"] or "" for c in choices),
                     whole["message"]["content"])
    test.assertFalse(any(c["delta"].get("tool_calls") for c in choices))
    test.assertEqual(choices[-1]["finish_reason"], "length")
    return whole


class ChatParsers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server(extra_args=["--reasoning-parser", "deepseek_v3",
                                           "--enable-auto-tool-choice",
                                           "--tool-call-parser", "hermes"]).__enter__()
        cls.client = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def chat(self, question, thinking):
        return dict(model=fx.MODEL, messages=[{"role": "user", "content": question}],
                    max_completion_tokens=20, temperature=0,
                    # Special ids decode as "<|id|>": 20 tokens are never empty text.
                    extra_body={"ignore_eos": True, "skip_special_tokens": False,
                                "chat_template_kwargs": {"thinking": thinking}})

    def question(self):
        return "Why shard the KV cache? " + str(fx.seeded_rng(self).random())

    def test_thinking_switch_moves_the_output_into_reasoning(self):
        question = self.question()
        plain = self.client.chat.completions.create(**self.chat(question, False)).model_dump()
        thought = self.client.chat.completions.create(**self.chat(question, True)).model_dump()
        plain_msg, thought_msg = plain["choices"][0]["message"], thought["choices"][0]["message"]
        self.assertTrue(plain_msg["content"])
        self.assertIsNone(plain_msg["reasoning"])
        self.assertEqual(thought_msg["reasoning"], plain_msg["content"])
        self.assertIsNone(thought_msg["content"])

    def test_stream_reasoning_equals_the_whole_message(self):
        args = self.chat(self.question(), True)
        whole = self.client.chat.completions.create(**args).model_dump()["choices"][0]["message"]
        chunks = [c.model_dump() for c in self.client.chat.completions.create(stream=True, **args)]
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        reasoning = "".join(d.get("reasoning") or "" for d in deltas)
        content = "".join(d.get("content") or "" for d in deltas)
        self.assertEqual(reasoning, whole["reasoning"])
        self.assertEqual(content, "")
        self.assertGreater(sum(1 for d in deltas if d.get("reasoning")), 1)


    def test_tools_without_a_call_keep_the_text_as_content(self):
        tools = [{"type": "function", "function": {
            "name": "weather", "parameters": {"type": "object", "properties": {
                "city": {"type": "string"}}}}}]
        assert_text_stays_content(self, self.client,
                                  dict(self.chat(self.question(), False), tools=tools))

    def test_required_tool_choice_replaces_the_parser(self):
        # The output is held to a JSON array of calls instead of hermes' tags: content "", and
        # calls of f unless max_tokens cut the array short (then none, as in vLLM).
        args = dict(self.chat(self.question(), False), tool_choice="required",
                    max_completion_tokens=200,
                    tools=[{"type": "function", "function": {"name": "f"}}])
        args["extra_body"].update(ignore_eos=False,
                                  structured_outputs={"disable_any_whitespace": True})
        choice = self.client.chat.completions.create(**args).choices[0]
        self.assertEqual(choice.message.content, "")
        calls = choice.message.tool_calls or []
        self.assertEqual(choice.finish_reason, "tool_calls" if calls else "length")
        self.assertEqual({c.function.name for c in calls} | {"f"}, {"f"})
        for c in calls:
            self.assertEqual(c.function.arguments, "{}")


class GlmRecipe(unittest.TestCase):
    """GLM-5 / GLM-4.7's recipe flags: glm45 thinks unless chat_template_kwargs turns it off."""

    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server(extra_args=["--tool-call-parser", "glm47", "--reasoning-parser",
                                           "glm45", "--enable-auto-tool-choice"]).__enter__()
        cls.client = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def chat(self, question, kwargs=None):
        extra = {"ignore_eos": True, "skip_special_tokens": False}
        if kwargs is not None:
            extra["chat_template_kwargs"] = kwargs
        return dict(model=fx.MODEL, messages=[{"role": "user", "content": question}],
                    max_completion_tokens=20, temperature=0, extra_body=extra)

    def test_glm45_thinks_by_default_and_stops_when_told(self):
        question = "Why shard the KV cache? " + str(fx.seeded_rng(self).random())
        default = self.client.chat.completions.create(**self.chat(question)).model_dump()
        off = self.client.chat.completions.create(
            **self.chat(question, {"enable_thinking": False})).model_dump()
        on = self.client.chat.completions.create(
            **self.chat(question, {"thinking": False, "enable_thinking": True})).model_dump()
        default_msg, off_msg = default["choices"][0]["message"], off["choices"][0]["message"]
        self.assertTrue(off_msg["content"])
        self.assertIsNone(off_msg["reasoning"])
        # No </think> in the output: all of it is reasoning, as deepseek_r1 splits it.
        self.assertEqual(default_msg["reasoning"], off_msg["content"])
        self.assertIsNone(default_msg["content"])
        self.assertEqual(on["choices"][0]["message"]["reasoning"], off_msg["content"])
        chunks = [c.model_dump() for c in self.client.chat.completions.create(
            stream=True, **self.chat(question))]
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        self.assertEqual("".join(d.get("reasoning") or "" for d in deltas),
                         default_msg["reasoning"])
        self.assertEqual("".join(d.get("content") or "" for d in deltas), "")

    def test_glm47_tools_without_a_call_keep_the_text(self):
        tools = [{"type": "function", "function": {
            "name": "get_weather", "parameters": {"type": "object", "properties": {
                "city": {"type": "string"}, "days": {"type": "integer"}}}}}]
        question = "Weather in Paris? " + str(fx.seeded_rng(self).random())
        assert_text_stays_content(
            self, self.client, dict(self.chat(question, {"enable_thinking": False}), tools=tools))


# A template that loops over a message's content, as vLLM's "auto" format looks for.
PARTS_TEMPLATE = (
    "{% for message in messages %}<|{{ message.role }}|>\n{% if message.content is string %}"
    "text:{{ message.content }}{% else %}{% for part in message.content %}part:{{ part.text }};"
    "{% endfor %}{% endif %}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "a"},
                                         {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": "ok"}, {"role": "user", "content": "c"}]


def rendered_prompt(test, flags, messages=MESSAGES):
    """The chat prompt a server started with `flags` renders for `messages` (read back through
    /tokenize and /detokenize)."""
    with fx.Server(extra_args=flags) as server:
        status, tok, _ = server.request("POST", "/tokenize", {"messages": messages})
        test.assertEqual(status, 200, tok)
        status, text, _ = server.request("POST", "/detokenize", {"tokens": tok["tokens"]})
        test.assertEqual(status, 200, text)
        return text["prompt"]


class ContentFormat(unittest.TestCase):
    """--chat-template-content-format: the prompt each format renders."""

    def prompt(self, flags):
        return rendered_prompt(self, flags)

    def test_each_format_renders_the_content_as_vllm_hands_it_over(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jinja", delete=False) as f:
            f.write(PARTS_TEMPLATE)
        try:
            parts = ["--chat-template", f.name]
            # (trim_blocks takes the newline after {% endif %}, as in jinja2)
            looped = ("<|user|>\npart:a;part:b;<|assistant|>\npart:ok;<|user|>\npart:c;"
                      "<|assistant|>\n")
            # auto: this template loops over message.content, so it gets parts.
            self.assertEqual(self.prompt(parts), looped)
            self.assertEqual(self.prompt(parts + ["--chat-template-content-format", "openai"]),
                             looped)
            # string (the GLM recipe's): text, parts joined with newlines.
            self.assertEqual(
                self.prompt(parts + ["--chat-template-content-format=string"]),
                "<|user|>\ntext:a\nb<|assistant|>\ntext:ok<|user|>\ntext:c<|assistant|>\n")
        finally:
            os.unlink(f.name)
        # The built-in template prints message.content: auto is string; openai prints the list
        # as jinja2 prints it.
        self.assertEqual(self.prompt([]),
                         "<|user|>\na\nb\n<|assistant|>\nok\n<|user|>\nc\n<|assistant|>\n")
        self.assertIn("<|assistant|>\n[{'type': 'text', 'text': 'ok'}]\n",
                      self.prompt(["--chat-template-content-format", "openai"]))


class TokenizerMode(unittest.TestCase):
    def test_deepseek_v32_mode_encodes_any_models_chats(self):
        user = [{"role": "user", "content": "hi"}]
        self.assertEqual(rendered_prompt(self, ["--tokenizer-mode", "deepseek_v32"], user),
                         "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜></think>")
        for flags in ([], ["--tokenizer-mode", "hf"], ["--tokenizer-mode", "auto"]):
            self.assertEqual(rendered_prompt(self, flags, user), "<|user|>\nhi\n<|assistant|>\n")


class DeepSeekV32Recipe(unittest.TestCase):
    """DeepSeek-V3.2's recipe flags on the tiny DeepSeek-V3.2: the encoder writes the prompt
    (tools in its system part), deepseek_v3 splits with thinking, deepseek_v32 keeps an output
    without DSML as content."""

    @classmethod
    def setUpClass(cls):
        engine = [*fx.ENGINE_ARGS]
        engine[engine.index("-tp") + 1] = "2"  # sparse attention's DCP needs N == T
        engine[engine.index("--max-model-len") + 1] = "4096"  # the tools prompt is long
        engine[engine.index("--kv-cache-memory") + 1] = "64MiB"
        cls.server = fx.Server(
            model="builtin:tiny-deepseek-v32", engine_args=engine,
            extra_args=["--tokenizer-mode", "deepseek_v32", "--tool-call-parser", "deepseek_v32",
                        "--enable-auto-tool-choice", "--reasoning-parser", "deepseek_v3"]
        ).__enter__()
        cls.client = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    TOOLS = [{"type": "function", "function": {
        "name": "get_weather", "parameters": {"type": "object", "properties": {
            "location": {"type": "string"}, "days": {"type": "integer"}}}}}]

    def chat(self, thinking, **kwargs):
        question = "Weather in Hangzhou? " + str(fx.seeded_rng(self).random())
        return dict(model="builtin:tiny-deepseek-v32",
                    messages=[{"role": "user", "content": question}], max_completion_tokens=12,
                    temperature=0, extra_body={"ignore_eos": True, "skip_special_tokens": False,
                                               "chat_template_kwargs": {"thinking": thinking}},
                    **kwargs)

    def test_the_encoder_writes_the_prompt_with_the_tools(self):
        body = {"messages": [{"role": "user", "content": "hi"}], "tools": self.TOOLS,
                "chat_template_kwargs": {"thinking": True}}
        status, tok, _ = self.server.request("POST", "/tokenize", body)
        self.assertEqual(status, 200, tok)
        status, text, _ = self.server.request("POST", "/detokenize", {"tokens": tok["tokens"]})
        prompt = text["prompt"]
        self.assertTrue(prompt.startswith("<｜begin▁of▁sentence｜>"), prompt[:80])
        self.assertIn("<｜DSML｜function_calls>", prompt)
        self.assertIn('"name": "get_weather"', prompt)
        self.assertTrue(prompt.endswith("<｜User｜>hi<｜Assistant｜><think>"), prompt[-80:])

    def test_thinking_splits_and_tools_without_a_call_keep_the_text(self):
        thought = self.client.chat.completions.create(**self.chat(True)).model_dump()
        self.assertTrue(thought["choices"][0]["message"]["reasoning"])
        self.assertIsNone(thought["choices"][0]["message"]["content"])
        whole = assert_text_stays_content(self, self.client, self.chat(False, tools=self.TOOLS))
        self.assertIsNone(whole["message"]["reasoning"])


class DeepSeekV3Parsers(unittest.TestCase):
    def test_v31_and_v3_parsers_serve_and_keep_text_without_a_call(self):
        tools = [{"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {}}}}]
        for parser in ("deepseek_v31", "deepseek_v3"):
            with fx.Server(extra_args=["--enable-auto-tool-choice", "--tool-call-parser",
                                       parser]) as server:
                client = fx.openai_client(server)
                whole = client.chat.completions.create(
                    model=fx.MODEL, messages=[{"role": "user", "content": "hi"}], tools=tools,
                    max_completion_tokens=8, temperature=0,
                    extra_body={"ignore_eos": True}).model_dump()["choices"][0]
                self.assertTrue(whole["message"]["content"], parser)
                self.assertFalse(whole["message"]["tool_calls"], parser)
                self.assertEqual(whole["finish_reason"], "length", parser)


class RecipeParsersThatSkipSpecialTokens(unittest.TestCase):
    """The Llama 3.x, Qwen3-Coder and Llama 3.2 / 4 (pythonic) recipes' tool call parsers: an
    output without a call keeps its text, whole and streamed, and special tokens are skipped as
    vLLM skips them for these parsers (only parsers such as hermes ask vLLM to keep them)."""

    def check(self, parser):
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}}}}]
        question = "Weather in Paris? " + str(fx.seeded_rng(self).random())
        args = dict(model=fx.MODEL, messages=[{"role": "user", "content": question}],
                    tools=tools, max_completion_tokens=20, temperature=0)
        with fx.Server(extra_args=["--enable-auto-tool-choice", "--tool-call-parser",
                                   parser]) as server:
            client = fx.openai_client(server)
            kept = assert_text_stays_content(
                self, client, dict(args, extra_body={"ignore_eos": True,
                                                     "skip_special_tokens": False}))
            skipped = client.chat.completions.create(
                **args, extra_body={"ignore_eos": True}).model_dump()["choices"][0]
        self.assertRegex(kept["message"]["content"], r"<\|\d+\|>")
        self.assertEqual(skipped["message"]["content"] or "",
                         re.sub(r"<\|\d+\|>", "", kept["message"]["content"]))

    def test_llama3_json(self):
        self.check("llama3_json")

    def test_qwen3_coder(self):
        self.check("qwen3_coder")

    def test_pythonic(self):
        self.check("pythonic")


class BadParserFlags(unittest.TestCase):
    def refused(self, flags, message):
        args = [fx.CTXPAR, "serve", fx.MODEL, *flags, "--port", "0"]
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(message, done.stderr)

    def test_unknown_or_incomplete_parser_flags_exit_with_the_rule(self):
        self.refused(["--reasoning-parser", "granite"],
                     "'granite' is not supported; use deepseek_r1, qwen3, deepseek_v3 or glm45")
        self.refused(["--enable-auto-tool-choice", "--tool-call-parser", "mistral"],
                     "'mistral' is not supported; use hermes, glm45, glm47, deepseek_v32, "
                     "deepseek_v31, deepseek_v3, llama3_json, qwen3_coder or pythonic")
        self.refused(["--tokenizer-mode", "mistral"],
                     "'mistral' is not supported; use auto, hf or deepseek_v32")
        self.refused(["--chat-template-content-format", "hf"],
                     "'hf' is not supported; use auto, string or openai")
        self.refused(["--enable-auto-tool-choice"], "--enable-auto-tool-choice needs "
                     "--tool-call-parser (hermes, glm45, glm47, deepseek_v32, deepseek_v31, "
                     "deepseek_v3, llama3_json, qwen3_coder or pythonic)")


if __name__ == "__main__":
    unittest.main()
