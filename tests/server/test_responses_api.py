"""POST /v1/responses (the Responses API) through the openai client: a response is the chat
completion of the same conversation (instructions, input items, function calls and their
outputs rendered as vLLM renders them), whole or as typed events the SDK's own stream
accumulator folds into the final response; function tools, text.format, output logprobs and
reasoning items; and vLLM's refusals without a response store."""

import json
import unittest

import jsonschema
import openai

import server_fixture as fx

ADD = {"type": "function", "name": "add", "description": "adds two digits",
       "parameters": {"type": "object", "properties": {
           "a": {"type": "integer", "minimum": 0, "maximum": 9},
           "b": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["a", "b"]}}
WEATHER = {"type": "function", "name": "get_weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
# Special ids decode as "<|id|>": outputs are never empty text, and never end early.
FREE = {"ignore_eos": True, "skip_special_tokens": False}


def chat_tool(tool):
    return {"type": "function",
            "function": {k: v for k, v in tool.items() if k != "type"}}


def collect(stream):
    """The events of a streamed response as dicts, checked for what every stream promises:
    sequence numbers 0, 1, ..., created then in_progress first, one terminal event last."""
    events = [e.model_dump() for e in stream]
    assert [e["sequence_number"] for e in events] == list(range(len(events))), \
        [(e["type"], e["sequence_number"]) for e in events]
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1]["type"] in ("response.completed", "response.incomplete"), events[-1]
    assert events[0]["response"]["status"] == "in_progress"
    assert events[0]["response"]["output"] == [] and events[0]["response"]["usage"] is None
    return events


def items_from_events(test, events):
    """The output items the events build, checked against their added / done pairs."""
    items, open_item = [], None
    for e in events[2:-1]:
        if e["type"] == "response.output_item.added":
            test.assertIsNone(open_item)
            test.assertEqual(e["output_index"], len(items))
            open_item = e["item"]
            test.assertEqual(open_item["status"], "in_progress")
        elif e["type"] == "response.output_item.done":
            test.assertEqual(e["item"]["id"], open_item["id"])
            test.assertEqual(e["output_index"], len(items))
            items.append(e["item"])
            open_item = None
        else:
            test.assertEqual(e["item_id"], open_item["id"])
            test.assertEqual(e["output_index"], len(items))
    test.assertIsNone(open_item)
    return items


class ResponsesApi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server().__enter__()
        cls.client = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def chat(self, messages, max_tokens, **kwargs):
        return self.client.chat.completions.create(
            model=fx.MODEL, messages=messages, max_completion_tokens=max_tokens, temperature=0,
            extra_body=FREE, **kwargs)

    def respond(self, max_tokens, **kwargs):
        return self.client.responses.create(model=fx.MODEL, max_output_tokens=max_tokens,
                                            temperature=0, extra_body=FREE, **kwargs)

    def test_text_input_is_a_user_message(self):
        rng = fx.seeded_rng(self)
        for _ in range(3):
            question = f"q {rng.randrange(10**6)}"
            n = rng.randrange(1, 24)
            chat = self.chat([{"role": "user", "content": question}], n)
            response = self.respond(n, input=question)
            self.assertTrue(response.id.startswith("resp_"))
            self.assertEqual(response.object, "response")
            self.assertEqual(response.output_text, chat.choices[0].message.content)
            self.assertEqual(response.status, "incomplete")  # ignore_eos: cut by the limit
            self.assertEqual(response.incomplete_details.reason, "max_output_tokens")
            self.assertEqual(response.max_output_tokens, n)
            self.assertEqual(response.temperature, 0.0)
            [message] = response.output
            self.assertEqual((message.type, message.role, message.status),
                             ("message", "assistant", "incomplete"))
            self.assertTrue(message.id.startswith("msg_"))
            self.assertEqual(response.usage.input_tokens, chat.usage.prompt_tokens)
            self.assertEqual(response.usage.output_tokens, n)
            self.assertEqual(response.usage.total_tokens, chat.usage.prompt_tokens + n)

    def test_instructions_and_input_items_render_as_the_chat(self):
        rng = fx.seeded_rng(self)
        words = [f"w{rng.randrange(10**6)}" for _ in range(4)]
        items = [{"role": "user", "content": words[0]},
                 {"type": "message", "role": "assistant",
                  "content": [{"type": "output_text", "text": words[1]}]},
                 {"role": "user", "content": [{"type": "input_text", "text": words[2]},
                                              {"type": "input_text", "text": words[3]}]}]
        messages = [{"role": "system", "content": "be brief"},
                    {"role": "user", "content": words[0]},
                    {"role": "assistant", "content": words[1]},
                    {"role": "user", "content": words[2] + "\n" + words[3]}]
        chat = self.chat(messages, 12)
        response = self.respond(12, instructions="be brief", input=items)
        self.assertEqual(response.instructions, "be brief")
        self.assertEqual(response.usage.input_tokens, chat.usage.prompt_tokens)
        self.assertEqual(response.output_text, chat.choices[0].message.content)

    def test_stream_events_fold_into_the_whole_response(self):
        rng = fx.seeded_rng(self)
        question = f"s {rng.randrange(10**6)}"
        n = rng.randrange(2, 30)
        whole = self.respond(n, input=question)
        events = collect(self.respond(n, input=question, stream=True))
        self.assertEqual([e["type"] for e in events[2:5]],
                         ["response.output_item.added", "response.content_part.added",
                          "response.output_text.delta"])
        deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
        self.assertEqual("".join(deltas), whole.output_text)
        [done] = [e for e in events if e["type"] == "response.output_text.done"]
        self.assertEqual(done["text"], whole.output_text)
        final = events[-1]["response"]
        self.assertEqual(events[-1]["type"], "response.incomplete")
        self.assertEqual(final["output"], items_from_events(self, events))
        self.assertEqual(final["output"][0]["content"][0]["text"], whole.output_text)
        # The same prompt again: the prefix cache serves more of it, all else is equal.
        usage = whole.usage.model_dump()
        self.assertGreaterEqual(final["usage"]["input_tokens_details"].pop("cached_tokens"),
                                usage["input_tokens_details"].pop("cached_tokens"))
        self.assertEqual(final["usage"], usage)
        self.assertEqual(final["id"], events[0]["response"]["id"])
        # The SDK's stream helper rebuilds the response from the events and must agree. It
        # takes only completed responses: a stop string ends this one.
        stop = whole.output_text[-1]
        with self.client.responses.stream(model=fx.MODEL, input=question, max_output_tokens=n,
                                          temperature=0,
                                          extra_body={**FREE, "stop": [stop]}) as stream:
            for _ in stream:
                pass
            rebuilt = stream.get_final_response()
        self.assertEqual(rebuilt.status, "completed")
        self.assertEqual(rebuilt.output_text, whole.output_text[:whole.output_text.index(stop)])

    def test_output_logprobs(self):
        n = 7
        chat = self.chat([{"role": "user", "content": "lp"}], n, logprobs=True, top_logprobs=2)
        args = dict(input="lp", include=["message.output_text.logprobs"], top_logprobs=2)
        response = self.respond(n, **args)
        self.assertEqual(response.top_logprobs, 2)
        logprobs = response.output[0].content[0].logprobs
        expected = chat.choices[0].logprobs.content
        self.assertEqual([lp.token for lp in logprobs], [lp.token for lp in expected])
        for got, want in zip(logprobs, expected):
            self.assertAlmostEqual(got.logprob, want.logprob, places=4)
            self.assertEqual(len(got.top_logprobs), 2)
        events = collect(self.respond(n, stream=True, **args))
        streamed = [lp for e in events if e["type"] == "response.output_text.delta"
                    for lp in e["logprobs"]]
        self.assertEqual([lp["token"] for lp in streamed], [lp.token for lp in expected])
        # Without include there are none.
        self.assertIsNone(self.respond(n, input="lp").output[0].content[0].logprobs)

    def test_named_function_call_and_its_output_in_the_next_turn(self):
        rng = fx.seeded_rng(self)
        for stream in (False, True):
            args = dict(input=f"add {rng.randrange(100)}", tools=[ADD, WEATHER],
                        tool_choice={"type": "function", "name": "add"},
                        extra_body={"structured_outputs": {"disable_any_whitespace": True},
                                    "seed": rng.randrange(2**31)},
                        max_output_tokens=60, temperature=1.0)
            if stream:
                events = collect(self.client.responses.create(stream=True, **args))
                output = events[-1]["response"]["output"]
                self.assertEqual(output, items_from_events(self, events))
                deltas = "".join(e["delta"] for e in events
                                 if e["type"] == "response.function_call_arguments.delta")
                self.assertEqual(deltas, output[0]["arguments"])
            else:
                output = [item.model_dump() for item in
                          self.client.responses.create(**args).output]
            [call] = output
            self.assertEqual((call["type"], call["name"], call["status"]),
                             ("function_call", "add", "completed"))
            self.assertTrue(call["id"].startswith("fc_"))
            arguments = json.loads(call["arguments"])
            jsonschema.validate(arguments, ADD["parameters"])
            # The next turn sends the call and its output back: the prompt is the chat's.
            result = str(arguments["a"] + arguments["b"])
            items = [{"role": "user", "content": args["input"]},
                     {"type": "function_call", "call_id": call["call_id"], "name": "add",
                      "arguments": call["arguments"]},
                     {"type": "function_call_output", "call_id": call["call_id"],
                      "output": result}]
            messages = [{"role": "user", "content": args["input"]},
                        {"role": "assistant", "content": None, "tool_calls": [
                            {"id": call["call_id"], "type": "function",
                             "function": {"name": "add", "arguments": call["arguments"]}}]},
                        {"role": "tool", "tool_call_id": call["call_id"], "content": result}]
            chat = self.client.chat.completions.create(
                model=fx.MODEL, messages=messages, max_completion_tokens=6, temperature=0,
                tools=[chat_tool(ADD), chat_tool(WEATHER)], tool_choice="none", extra_body=FREE)
            response = self.respond(6, input=items, tools=[ADD, WEATHER], tool_choice="none")
            self.assertEqual(response.usage.input_tokens, chat.usage.prompt_tokens)
            self.assertEqual(response.output_text, chat.choices[0].message.content)
            self.assertEqual(response.tools[0].name, "add")

    def test_built_in_tools_are_not_shown_to_the_model(self):
        # vLLM without a tool server drops them: the prompt is the one without tools.
        plain = self.respond(3, input="find")
        searched = self.respond(3, input="find", tools=[{"type": "web_search"},
                                                        {"type": "file_search",
                                                         "vector_store_ids": ["vs"]}])
        self.assertEqual(searched.usage.input_tokens, plain.usage.input_tokens)
        self.assertEqual(searched.output_text, plain.output_text)
        self.assertEqual([t.type for t in searched.tools], ["web_search", "file_search"])

    def test_json_schema_text_format(self):
        schema = ADD["parameters"]
        for stream in (False, True):
            args = dict(model=fx.MODEL, input="json", max_output_tokens=60, temperature=0,
                        text={"format": {"type": "json_schema", "name": "sum", "schema": schema}},
                        extra_body={"structured_outputs": {"disable_any_whitespace": True}})
            if stream:
                events = collect(self.client.responses.create(stream=True, **args))
                text = events[-1]["response"]["output"][0]["content"][0]["text"]
                self.assertEqual(events[-1]["type"], "response.completed")
            else:
                response = self.client.responses.create(**args)
                text = response.output_text
                self.assertEqual(response.text.format.type, "json_schema")
            jsonschema.validate(json.loads(text), schema)

    def test_refusals(self):
        cases = [
            ({"input": "x", "previous_response_id": "resp_123"}, 404, "resp_123"),
            ({"input": "x", "background": True}, 400, "background"),
            ({"input": "x", "tools": [{"type": "custom"}]}, 400, "tools[0].name"),
            ({"input": [{"role": "user", "content": [{"type": "input_image",
                                                      "image_url": "http://x"}]}]},
             400, "input_image"),
            ({"input": [{"type": "item_reference", "id": "x"}]}, 400, "item_reference"),
            ({}, 400, "input"),
            ({"input": "x", "include": ["bogus"]}, 400, "bogus"),
            ({"input": "x", "text": {"format": {"type": "yaml"}}}, 400, "yaml"),
            ({"input": "x", "tool_choice": "required"}, 400, "tools"),
            ({"input": "x", "max_output_tokens": 100000}, 400, "max_output_tokens"),
            ({"input": "x", "model": "other"}, 404, "other"),
        ]
        for body, status, needle in cases:
            got, payload, _ = self.server.request("POST", "/v1/responses", body)
            self.assertEqual(got, status, (body, payload))
            self.assertIn(needle, json.dumps(payload), body)
        for method, path in (("GET", "/v1/responses/resp_1"),
                             ("POST", "/v1/responses/resp_1/cancel")):
            got, payload, _ = self.server.request(method, path)
            self.assertEqual(got, 404)
            self.assertEqual(payload["error"]["message"], "Response with id 'resp_1' not found.")
        with self.assertRaises(openai.NotFoundError):
            self.client.responses.retrieve("resp_1")


class ResponsesReasoning(unittest.TestCase):
    """--reasoning-parser deepseek_r1: the random model never writes </think>, so its whole
    output is a reasoning item and every output token is a reasoning token."""

    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server(extra_args=["--reasoning-parser", "deepseek_r1"]).__enter__()
        cls.client = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def test_reasoning_item_whole_and_streamed(self):
        args = dict(model=fx.MODEL, input="think", max_output_tokens=15, temperature=0,
                    extra_body=FREE)
        chat = self.client.chat.completions.create(
            model=fx.MODEL, messages=[{"role": "user", "content": "think"}],
            max_completion_tokens=15, temperature=0, extra_body=FREE).choices[0].message
        response = self.client.responses.create(**args)
        [item] = response.output
        self.assertEqual(item.type, "reasoning")
        self.assertTrue(item.id.startswith("rs_"))
        self.assertEqual(item.content[0].text, chat.reasoning)
        self.assertEqual(response.usage.output_tokens_details.reasoning_tokens, 15)
        events = collect(self.client.responses.create(stream=True, **args))
        deltas = [e["delta"] for e in events if e["type"] == "response.reasoning_text.delta"]
        self.assertEqual("".join(deltas), chat.reasoning)
        final = events[-1]["response"]
        self.assertEqual(final["output"], items_from_events(self, events))
        self.assertEqual(final["output"][0]["content"][0]["text"], chat.reasoning)
        self.assertEqual(final["usage"]["output_tokens_details"]["reasoning_tokens"], 15)
        # include_reasoning false: generated, counted, not returned.
        hidden = self.client.responses.create(**{**args, "extra_body": {
            **FREE, "include_reasoning": False}})
        self.assertEqual(hidden.output, [])
        self.assertEqual(hidden.usage.output_tokens_details.reasoning_tokens, 15)


if __name__ == "__main__":
    unittest.main()
