"""POST /v1/messages and /v1/messages/count_tokens (the Anthropic Messages API) through the
official anthropic client: a message is the chat completion of the conversation vLLM converts it
to (system text, tool_use and tool_result blocks, thinking), whole or as the typed events the
SDK's own stream accumulator folds into the same message; forced tool choices give tool_use
blocks; stop sequences, thinking blocks, inline system messages (kept or merged as the chat
template allows), reasoning_effort, and Anthropic-shaped errors."""

import json
import os
import tempfile
import unittest

import anthropic
import jsonschema

import server_fixture as fx

# The anthropic SDK no longer takes temperature as an argument; vLLM still reads the field (and
# ignores the chat API's extras: ignore_eos, skip_special_tokens, seed, structured_outputs).
GREEDY = {"temperature": 0}
STOP_REASONS = {"length": "max_tokens", "stop": "end_turn"}
ADD = {"name": "add", "description": "adds two digits",
       "input_schema": {"type": "object", "properties": {
           "a": {"type": "integer", "minimum": 0, "maximum": 9},
           "b": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["a", "b"]}}
WEATHER = {"name": "get_weather",
           "input_schema": {"properties": {"city": {"type": "string"}}}}


def anthropic_client(server):
    """The anthropic client against `server`, without retries (a retry would hide an error)."""
    return anthropic.Anthropic(base_url=server.url, api_key="unused", max_retries=0, timeout=120)


def chat_tool(tool):
    schema = dict(tool["input_schema"])
    schema.setdefault("type", "object")
    function = {"name": tool["name"]}
    if "description" in tool:
        function["description"] = tool["description"]
    function["parameters"] = schema
    return {"type": "function", "function": function}


def check_events(test, events):
    """The raw events of a stream, checked for what every stream promises: message_start first,
    blocks numbered 0, 1, ... each opened, given deltas of its own kind and closed (a thinking
    block with its signature last), then message_delta and message_stop. Returns the blocks."""
    types = [e.type for e in events]
    test.assertEqual(types[0], "message_start")
    test.assertEqual(types[-2:], ["message_delta", "message_stop"])
    blocks, open_block = [], None
    for e in events[1:-2]:
        if e.type == "content_block_start":
            test.assertIsNone(open_block)
            test.assertEqual(e.index, len(blocks))
            open_block = e.content_block.model_dump()
            kind = open_block["type"]
        elif e.type == "content_block_delta":
            test.assertEqual(e.index, len(blocks))
            d = e.delta
            if d.type == "text_delta":
                test.assertEqual(kind, "text")
                open_block["text"] += d.text
            elif d.type == "thinking_delta":
                test.assertEqual(kind, "thinking")
                test.assertIsNone(open_block.get("signature"))
                open_block["thinking"] += d.thinking
            elif d.type == "signature_delta":
                test.assertEqual(kind, "thinking")
                open_block["signature"] = d.signature
            else:
                test.assertEqual((d.type, kind), ("input_json_delta", "tool_use"))
                open_block["partial"] = open_block.get("partial", "") + d.partial_json
        else:
            test.assertEqual(e.type, "content_block_stop")
            test.assertEqual(e.index, len(blocks))
            if kind == "thinking":
                test.assertIn("signature", open_block)
            blocks.append(open_block)
            open_block = None
    test.assertIsNone(open_block)
    return blocks


RAW_EVENTS = ("message_start", "content_block_start", "content_block_delta",
              "content_block_stop", "message_delta", "message_stop")


def stream(test, client, **args):
    """A streamed message: its wire events (checked by check_events), the blocks they build,
    and the SDK accumulator's final message."""
    with client.messages.stream(**args) as s:
        events = list(s)
        final = s.get_final_message()
    raw = [e for e in events if e.type in RAW_EVENTS]  # the SDK adds events of its own
    return raw, check_events(test, raw), final


class MessagesApi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server().__enter__()
        cls.client = anthropic_client(cls.server)
        cls.openai = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def chat(self, messages, max_tokens, **kwargs):
        return self.openai.chat.completions.create(
            model=fx.MODEL, messages=messages, max_completion_tokens=max_tokens, temperature=0,
            **kwargs)

    def message(self, max_tokens, **kwargs):
        return self.client.messages.create(model=fx.MODEL, max_tokens=max_tokens,
                                           extra_body=GREEDY, **kwargs)

    def prompt_tokens(self, messages, **kwargs):
        return self.chat(messages, 1, **kwargs).usage.prompt_tokens

    def test_a_message_is_the_chat_completion_of_its_conversation(self):
        rng = fx.seeded_rng(self)
        for _ in range(3):
            words = [f"w{rng.randrange(10**6)}" for _ in range(4)]
            n = rng.randrange(1, 24)
            # The system blocks join without a separator; Claude Code's billing header goes.
            system = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=1"},
                      {"type": "text", "text": words[0]}, {"type": "text", "text": " be brief"}]
            messages = [{"role": "user", "content": words[1]},
                        {"role": "assistant", "content": [{"type": "text", "text": words[2]}]},
                        {"role": "user", "content": [{"type": "text", "text": words[3]},
                                                     {"type": "text", "text": "and?"}]}]
            chat = self.chat([{"role": "system", "content": words[0] + " be brief"},
                              {"role": "user", "content": words[1]},
                              {"role": "assistant", "content": words[2]},
                              {"role": "user", "content": [{"type": "text", "text": words[3]},
                                                           {"type": "text", "text": "and?"}]}], n)
            msg = self.message(n, system=system, messages=messages)
            self.assertTrue(msg.id.startswith("chatcmpl-"))
            self.assertEqual((msg.type, msg.role, msg.model), ("message", "assistant", fx.MODEL))
            self.assertEqual([b.type for b in msg.content], ["text"])
            self.assertEqual(msg.content[0].text, chat.choices[0].message.content or "")
            self.assertEqual(msg.stop_reason, STOP_REASONS[chat.choices[0].finish_reason])
            self.assertIsNone(msg.stop_sequence)
            self.assertEqual(msg.usage.input_tokens, chat.usage.prompt_tokens)
            self.assertEqual(msg.usage.output_tokens, chat.usage.completion_tokens)
            self.assertIsNone(msg.usage.cache_read_input_tokens)
            count = self.client.messages.count_tokens(model=fx.MODEL, system=system,
                                                      messages=messages)
            self.assertEqual(count.input_tokens, chat.usage.prompt_tokens)

    def test_the_stream_folds_into_the_whole_message(self):
        rng = fx.seeded_rng(self)
        for _ in range(2):
            question = f"q {rng.randrange(10**6)}"
            n = rng.randrange(1, 20)
            args = dict(model=fx.MODEL, max_tokens=n, extra_body=GREEDY,
                        messages=[{"role": "user", "content": question}])
            whole = self.client.messages.create(**args)
            raw, blocks, final = stream(self, self.client, **args)
            self.assertEqual(raw[0].message.usage.input_tokens, whole.usage.input_tokens)
            self.assertEqual(raw[0].message.usage.output_tokens, 0)
            self.assertEqual(raw[-2].delta.stop_reason, whole.stop_reason)
            self.assertEqual(raw[-2].usage.output_tokens, whole.usage.output_tokens)
            # A stream without text has no block; the whole message has one empty text block.
            self.assertEqual([b["type"] for b in blocks], ["text"] if blocks else [])
            self.assertEqual("".join(b["text"] for b in blocks), whole.content[0].text)
            self.assertEqual("".join(b.text for b in final.content), whole.content[0].text)
            self.assertEqual(final.stop_reason, whole.stop_reason)
            self.assertEqual(final.usage.output_tokens, whole.usage.output_tokens)

    def test_a_forced_tool_gives_a_tool_use_block_whole_and_streamed(self):
        rng = fx.seeded_rng(self)
        for choice in ({"type": "tool", "name": "add"}, {"type": "any"}):
            # Held to the schema's JSON; sampled, so each try differs. The random model may
            # not close the JSON within the limit: try until one call each way is whole.
            args = dict(model=fx.MODEL, max_tokens=120, extra_body={"temperature": 1.0},
                        messages=[{"role": "user", "content": f"add {rng.randrange(100)}"}],
                        tools=[ADD, WEATHER] if choice["type"] == "tool" else [ADD],
                        tool_choice=choice)
            whole_ok = streamed_ok = False
            for _ in range(10):
                whole = self.client.messages.create(**args)
                if whole.stop_reason == "max_tokens":
                    continue
                self.assertEqual(whole.stop_reason, "tool_use")
                # A named tool makes one call; "any" (required) one or more.
                if choice["type"] == "tool":
                    self.assertEqual(len(whole.content), 1)
                self.assertGreaterEqual(len(whole.content), 1)
                for use in whole.content:
                    self.assertEqual((use.type, use.name), ("tool_use", "add"))
                    self.assertTrue(use.id.startswith("chatcmpl-tool-"))
                    jsonschema.validate(use.input, ADD["input_schema"])
                whole_ok = True
                break
            for _ in range(10):
                raw, blocks, final = stream(self, self.client, **args)
                if raw[-2].delta.stop_reason == "max_tokens":
                    continue
                if choice["type"] == "tool":
                    self.assertEqual(len(blocks), 1)
                self.assertGreaterEqual(len(blocks), 1)
                self.assertEqual(raw[-2].delta.stop_reason, "tool_use")
                self.assertEqual(len(final.content), len(blocks))
                for block, streamed in zip(blocks, final.content):
                    self.assertEqual((block["type"], block["name"], block["input"]),
                                     ("tool_use", "add", {}))
                    self.assertEqual(streamed.input, json.loads(block["partial"]))
                    jsonschema.validate(streamed.input, ADD["input_schema"])
                streamed_ok = True
                break
            self.assertTrue(whole_ok and streamed_ok, f"no whole call in 10 tries ({choice})")

    def test_a_stop_sequence_ends_the_message(self):
        rng = fx.seeded_rng(self)
        for _ in range(20):
            prompt = f"p {rng.randrange(10**6)}"
            text = self.message(24, messages=[{"role": "user", "content": prompt}]).content[0].text
            # A letter or digit whose first place is not the start: the text before it is not empty.
            cut = [c for c in text if c.isascii() and c.isalnum() and text.index(c) > 0]
            if not cut:
                continue
            stop = cut[0]
            msg = self.message(24, messages=[{"role": "user", "content": prompt}],
                               stop_sequences=[stop])
            self.assertEqual((msg.stop_reason, msg.stop_sequence), ("stop_sequence", stop))
            self.assertEqual(msg.content[0].text, text[:text.index(stop)])
            with self.client.messages.stream(
                    model=fx.MODEL, max_tokens=24, extra_body=GREEDY,
                    messages=[{"role": "user", "content": prompt}],
                    stop_sequences=[stop]) as stream:
                final = stream.get_final_message()
            self.assertEqual((final.stop_reason, final.stop_sequence), ("stop_sequence", stop))
            return
        self.fail("no output of 20 had a letter or digit to stop at")

    def test_inline_system_messages_stay_in_place_when_the_template_allows(self):
        messages = [{"role": "user", "content": "a"},
                    {"role": "system", "content": [{"type": "text", "text": "reminder"}]},
                    {"role": "user", "content": "b"}]
        got = self.client.messages.count_tokens(model=fx.MODEL, system="lead", messages=messages)
        want = self.prompt_tokens([{"role": "system", "content": "lead"},
                                   {"role": "user", "content": "a"},
                                   {"role": "system", "content": "reminder"},
                                   {"role": "user", "content": "b"}])
        self.assertEqual(got.input_tokens, want)

    def test_the_prefix_cache_is_not_reported_without_prompt_tokens_details(self):
        msg = self.message(2, messages=[{"role": "user", "content": "cache me " * 20}])
        msg = self.message(2, messages=[{"role": "user", "content": "cache me " * 20}])
        self.assertIsNone(msg.usage.cache_read_input_tokens)

    def test_errors_take_anthropics_shape(self):
        ok = {"model": fx.MODEL, "max_tokens": 4, "messages": [{"role": "user", "content": "x"}]}
        cases = [
            ({**ok, "model": "claude-opus"}, anthropic.NotFoundError, "not_found_error",
             "claude-opus"),
            ({k: v for k, v in ok.items() if k != "max_tokens"}, anthropic.BadRequestError,
             "invalid_request_error", "max_tokens"),
            ({**ok, "max_tokens": 0}, anthropic.BadRequestError, "invalid_request_error",
             "max_tokens must be positive"),
            ({**ok, "messages": [{"role": "tool", "content": "x"}]}, anthropic.BadRequestError,
             "invalid_request_error", "messages[0].role"),
            ({**ok, "messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": "AAAA"}}]}]},
             anthropic.BadRequestError, "invalid_request_error", "image"),
            ({**ok, "tools": [{"type": "web_search_20250305", "name": "web_search"}]},
             anthropic.BadRequestError, "invalid_request_error", "web_search_20250305"),
            ({**ok, "max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 4000}},
             anthropic.BadRequestError, "invalid_request_error", "budget_tokens"),
            ({**ok, "tool_choice": {"type": "tool"}, "tools": [ADD]},
             anthropic.BadRequestError, "invalid_request_error", "tool_choice.name"),
            ({**ok, "max_tokens": 10**6}, anthropic.BadRequestError, "invalid_request_error",
             "max_tokens"),
            ({**ok, "messages": [{"role": "user", "content": [
                {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "add"}}]}]},
             anthropic.BadRequestError, "invalid_request_error", "system"),
        ]
        for body, error, kind, needle in cases:
            with self.subTest(needle=needle):
                with self.assertRaises(error) as ctx:
                    self.client.post("/v1/messages", body=body, cast_to=object)
                self.assertEqual(ctx.exception.body["type"], "error")
                self.assertEqual(ctx.exception.body["error"]["type"], kind)
                self.assertIn(needle, ctx.exception.body["error"]["message"])
        # thinking.budget_tokens is a thinking_token_budget: it needs --reasoning-parser.
        with self.assertRaises(anthropic.BadRequestError) as ctx:
            self.client.messages.create(model=fx.MODEL, max_tokens=300, messages=ok["messages"],
                                        thinking={"type": "enabled", "budget_tokens": 200},
                                        extra_body={"thinking": {"type": "enabled",
                                                                 "budget_tokens": 1024},
                                                    "max_tokens": 1100})
        self.assertIn("thinking_token_budget", ctx.exception.body["error"]["message"])
        # A tool call parser is needed for tool_choice auto, as on /v1/chat/completions.
        with self.assertRaises(anthropic.BadRequestError) as ctx:
            self.message(4, messages=ok["messages"], tools=[ADD])
        self.assertIn("--enable-auto-tool-choice", ctx.exception.body["error"]["message"])


class MessagesWithReasoning(unittest.TestCase):
    """--reasoning-parser deepseek_r1 and --enable-prompt-tokens-details: the random model never
    writes </think>, so its whole output is one thinking block; a repeated prompt is read from
    the prefix cache."""

    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server(extra_args=["--reasoning-parser", "deepseek_r1",
                                           "--enable-prompt-tokens-details"]).__enter__()
        cls.client = anthropic_client(cls.server)
        cls.openai = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def test_thinking_block_whole_and_streamed(self):
        rng = fx.seeded_rng(self)
        # Half of the random model's greedy outputs end at once or hold only special tokens
        # (skipped here: /v1/messages takes no skip_special_tokens), so try up to 20 prompts.
        for _ in range(20):
            args = dict(model=fx.MODEL, max_tokens=15, extra_body=GREEDY,
                        messages=[{"role": "user", "content": f"think {rng.randrange(10**6)}"}])
            chat = self.openai.chat.completions.create(
                model=fx.MODEL, messages=args["messages"], max_completion_tokens=15,
                temperature=0).choices[0].message
            whole = self.client.messages.create(**args)
            if not chat.reasoning:  # the model ended at once
                self.assertEqual([b.model_dump() for b in whole.content],
                                 [{"type": "text", "text": "", "citations": None}])
                continue
            [block] = whole.content
            self.assertEqual(block.type, "thinking")
            self.assertEqual(block.thinking, chat.reasoning)
            self.assertRegex(block.signature, "^[0-9a-f]{32}$")
            raw, [streamed], final = stream(self, self.client, **args)
            self.assertEqual(streamed["thinking"], chat.reasoning)
            self.assertEqual(final.content[0].thinking, chat.reasoning)
            return
        self.fail("no reasoning text in 20 outputs")

    def test_thinking_token_budget_ends_the_thinking(self):
        """What thinking.budget_tokens becomes: after the budget (counted from <think>, the
        prompt's "\n" included) the reasoning parser's </think> is forced, token by token."""
        rng = fx.seeded_rng(self)
        for budget in (0, 1, rng.randrange(2, 30)):
            r = self.openai.chat.completions.create(
                model=fx.MODEL, max_completion_tokens=budget + 12, temperature=0,
                messages=[{"role": "user", "content": f"q{rng.randrange(10**6)}"},
                          {"role": "assistant", "content": "<think>\n"}],
                extra_body={"continue_final_message": True, "add_generation_prompt": False,
                            "ignore_eos": True, "return_token_ids": True,
                            "skip_special_tokens": False,
                            "thinking_token_budget": budget}).model_dump()["choices"][0]
            ids = r["token_ids"]
            thinking = max(0, budget - 1)
            self.assertEqual(ids[thinking:thinking + 8], list(b"</think>"), ids)
            self.assertNotIn(bytes(b"</think>").hex(),
                             bytes(i for i in ids[:thinking] if i < 256).hex())
            self.assertIsNotNone(r["message"]["content"])  # the parser split there

    def test_cache_reads_and_writes_are_left_out_of_input_tokens(self):
        # The fixture's blocks: 4 positions on each of the 2 DCP ranks, 8 prompt tokens a block.
        rng = fx.seeded_rng(self)
        prompt = f"{rng.randrange(10**9)} " * rng.randrange(20, 40)
        args = dict(model=fx.MODEL, max_tokens=2, messages=[{"role": "user", "content": prompt}])
        total = self.client.messages.count_tokens(model=fx.MODEL,
                                                  messages=args["messages"]).input_tokens
        full = total // 8 * 8
        first = self.client.messages.create(**args)
        # Only the template's opening (BOS and "<|user|") can be in the cache already.
        self.assertIn(first.usage.cache_read_input_tokens, (0, 8))
        self.assertEqual(first.usage.cache_read_input_tokens
                         + first.usage.cache_creation_input_tokens, full)
        self.assertEqual(first.usage.input_tokens, total - full)
        # A hit leaves the last prompt token to compute: a prompt of whole blocks reads one
        # block less, which vLLM's estimate then counts as written again.
        hit = (total - 1) // 8 * 8
        second = self.client.messages.create(**args)
        self.assertEqual(second.usage.cache_read_input_tokens, hit)
        self.assertEqual(second.usage.cache_creation_input_tokens, full - hit)
        self.assertEqual(second.usage.input_tokens, total - full)
        chat = self.openai.chat.completions.create(model=fx.MODEL, messages=args["messages"],
                                                   max_completion_tokens=1)
        self.assertEqual(chat.usage.prompt_tokens_details.cached_tokens, hit)
        self.assertEqual(chat.usage.prompt_tokens_details.model_extra["created_cache_tokens"],
                         full - hit)


# A template that refuses system messages after the first (as Qwen's do), writes the tools and
# what a message carries (reasoning, tool calls with their arguments as JSON, a tool result's
# call id) and the reasoning_effort it gets after the generation prompt.
STRICT_TEMPLATE = (
    "{% for t in tools or [] %}{{ t | tojson }}\n{% endfor %}{% for m in messages %}{% if m.role == 'system' and not loop.first %}"
    "{{ raise_exception('System message must be at the beginning.') }}{% endif %}"
    "<|{{ m.role }}|>{% if m.tool_call_id %}[{{ m.tool_call_id }}]{% endif %}"
    "{% if m.reasoning %}<think>{{ m.reasoning }}</think>{% endif %}\n{{ m.content }}"
    "{% for c in m.tool_calls or [] %}<call {{ c.id }} {{ c.function.name }}>"
    "{{ c.function.arguments | tojson }}</call>{% endfor %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{{ reasoning_effort | default('-') }}"
    "{% if enable_thinking is defined and not enable_thinking %} nothink{% endif %}\n{% endif %}")


class MessagesWithAStrictTemplate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.template = tempfile.NamedTemporaryFile("w", suffix=".jinja", delete=False)
        cls.template.write(STRICT_TEMPLATE)
        cls.template.close()
        cls.server = fx.Server(extra_args=["--chat-template", cls.template.name]).__enter__()
        cls.client = anthropic_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)
        os.unlink(cls.template.name)

    def tokenize(self, messages, **kwargs):
        status, body, _ = self.server.request("POST", "/tokenize", {
            "model": fx.MODEL, "messages": messages, **kwargs})
        self.assertEqual(status, 200, body)
        return body["count"]

    def count(self, **kwargs):
        return self.client.messages.count_tokens(model=fx.MODEL, **kwargs).input_tokens

    def test_tool_use_and_tool_result_render_as_vllm_converts_them(self):
        rng = fx.seeded_rng(self)
        city = rng.choice(["Zürich", "東京", "Paris", "São Paulo 🌞"])
        call_id = f"toolu_{rng.randrange(10**9)}"
        result = f"{rng.randrange(-40, 40)} degrees"
        messages = [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "look it up", "signature": "abc"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": call_id, "name": "get_weather",
                 "input": {"city": city}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call_id,
                 "content": [{"type": "text", "text": result}, {"type": "text", "text": "sunny"}]},
                {"type": "text", "text": "thanks"}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": "again"}]}]
        # vLLM's conversion: the tool messages before the turn's text, a user turn of results
        # only leaves no user message, the input as json.dumps (ASCII-escaped) writes it.
        chat_messages = [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": "Checking.", "reasoning": "look it up",
             "tool_calls": [{"id": call_id, "type": "function", "function": {
                 "name": "get_weather", "arguments": json.dumps({"city": city})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": result + "\nsunny"},
            {"role": "user", "content": "thanks"},
            {"role": "tool", "tool_call_id": call_id, "content": "again"}]
        want = self.tokenize(chat_messages, tools=[chat_tool(WEATHER)], tool_choice="none")
        got = self.count(messages=messages, tools=[WEATHER], tool_choice={"type": "none"})
        self.assertEqual(got, want)

    def test_the_template_sees_tools_and_call_arguments_as_vllm_hands_them_over(self):
        """vLLM dumps each tool through its pydantic model (type and function first, a missing
        description as null, unknown keys gone) and parses an assistant call's arguments into
        an object in the client's key order ({} when they are not a JSON object)."""
        tools = [{"function": {"parameters": {"type": "object", "properties": {
            "z": {"type": "string"}, "a": {"type": "integer"}}}, "name": "f", "extra": 1},
            "type": "function"}]
        messages = [{"role": "user", "content": "go"},
                    {"role": "assistant", "content": "", "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": "f", "arguments": '{"z":"é","a":1}'}},
                        {"id": "c2", "type": "function",
                         "function": {"name": "f", "arguments": "not json"}},
                        {"id": "c3", "type": "function",
                         "function": {"name": "f", "arguments": "[1]"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                    {"role": "assistant", "content": "done", "tool_calls": []}]
        status, body, _ = self.server.request("POST", "/tokenize", {
            "model": fx.MODEL, "messages": messages, "tools": tools})
        self.assertEqual(status, 200, body)
        text = bytes(t for t in body["tokens"]).decode()
        vllm_tool = {"type": "function", "function": {
            "name": "f", "description": None, "parameters": tools[0]["function"]["parameters"]}}
        # (trim_blocks, as HF renders: a newline right after a block tag is dropped.)
        want = (json.dumps(vllm_tool, ensure_ascii=False) + "\n"
                + "<|user|>go<|assistant|>"
                + "<call c1 f>" + json.dumps({"z": "é", "a": 1}, ensure_ascii=False) + "</call>"
                + "<call c2 f>{}</call><call c3 f>{}</call>"
                + "<|tool|>[c1]ok<|assistant|>done<|assistant|>-")
        self.assertEqual(text, want)
        status, body, _ = self.server.request("POST", "/tokenize", {
            "model": fx.MODEL, "messages": [{"role": "assistant", "tool_calls": [5]}]})
        self.assertEqual(status, 400)
        self.assertIn("tool_calls entries must be objects", body["error"]["message"])

    def test_inline_system_messages_join_the_leading_one(self):
        messages = [{"role": "user", "content": "a"},
                    {"role": "system", "content": "x-anthropic-billing-header: 1"},
                    {"role": "system", "content": " reminder"},
                    {"role": "user", "content": "b"}]
        want = self.tokenize([{"role": "system", "content": "lead reminder"},
                              {"role": "user", "content": "a"},
                              {"role": "user", "content": "b"}])
        self.assertEqual(self.count(system="lead", messages=messages), want)

    def test_reasoning_effort_reaches_the_template(self):
        user = [{"role": "user", "content": "hi"}]
        plain = self.tokenize(user)
        # The template renders "none" apart from every effort: disabled thinking sends "none".
        self.assertEqual(self.count(messages=user, thinking={"type": "disabled"}),
                         self.tokenize(user, reasoning_effort="none"))
        self.assertNotEqual(self.tokenize(user, reasoning_effort="none"), plain)
        self.assertEqual(self.count(messages=user, output_config={"effort": "xhigh"}),
                         self.tokenize(user, reasoning_effort="xhigh"))
        # thinking overrides output_config's effort; adaptive and enabled leave it.
        self.assertEqual(self.count(messages=user, output_config={"effort": "high"},
                                    thinking={"type": "between_tools"}),
                         self.tokenize(user, reasoning_effort="none"))
        self.assertEqual(self.count(messages=user, thinking={"type": "adaptive"}), plain)
        # /v1/responses' reasoning.effort is the same request field.
        response = fx.openai_client(self.server).responses.create(
            model=fx.MODEL, input="hi", max_output_tokens=1, reasoning={"effort": "none"})
        self.assertEqual(response.usage.input_tokens, self.tokenize(user, reasoning_effort="none"))
        # reasoning_effort "none" turns enable_thinking off unless the kwargs set it.
        self.assertEqual(
            self.tokenize(user, reasoning_effort="none",
                          chat_template_kwargs={"enable_thinking": True}),
            plain + len("none") - 1)


if __name__ == "__main__":
    unittest.main()
