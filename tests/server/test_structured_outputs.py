"""Structured outputs through the openai client, as vLLM serves them: response_format
json_schema / json_object and vLLM's structured_outputs on /v1/chat/completions and
/v1/completions (json, json_object, regex and choice; schema patterns and formats), and
tool_choice "required" and a named function. The tiny random-weight model
writes whatever its logits favour; the token masks keep it inside the grammar, so every output
that ends by "stop" must be JSON that Python's `jsonschema` validates against the request's
schema (a second opinion nobody here wrote). With vLLM's default whitespace the random model
may write whitespace until max_tokens, so most requests ask for the compact form
(structured_outputs disable_any_whitespace) and one test checks the default. Streams must add up to the whole responses'
content and tool calls. An unsupported schema keyword is a 400 naming it, and max_tokens that
cut the JSON short end with "length", as in vLLM."""

import concurrent.futures
import json
import unittest

import jsonschema
import openai

import server_fixture as fx

# Bounded so that a random model finishes them well inside max_tokens: short strings, bounded
# integers, enums, short arrays. (Free strings and numbers are tested by the C++ matcher.)
SCHEMAS = [
    {"type": "object",
     "properties": {"name": {"type": "string", "maxLength": 6},
                    "age": {"type": "integer", "minimum": 0, "maximum": 120},
                    "ok": {"type": "boolean"},
                    "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}},
     "required": ["name", "age"]},
    {"type": "array", "minItems": 1, "maxItems": 3,
     "items": {"anyOf": [{"type": "integer", "minimum": -5, "maximum": 5}, {"type": "null"},
                         {"$ref": "#/$defs/point"}]},
     "$defs": {"point": {"type": "object", "properties": {
         "x": {"type": "integer", "minimum": 0, "maximum": 9},
         "y": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["x", "y"],
         "additionalProperties": False}}},
    {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"},
                                      "c": {"enum": [1, 2]}},
     "minProperties": 2, "maxProperties": 2},
    {"type": "object", "properties": {
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "where": {"type": ["string", "null"], "maxLength": 4},
        "pair": {"type": "array", "prefixItems": [{"type": "boolean"}, {"const": "k"}]},
        "empty": {"type": "object", "properties": {}}},
     "required": ["unit", "pair", "empty"]},
]

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 5},
            "unit": {"enum": ["c", "f"]}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "add",
        "parameters": {"type": "object", "properties": {
            "a": {"type": "integer", "minimum": 0, "maximum": 9},
            "b": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["a", "b"]}}},
]


def tool_parameters(name):
    return next(t["function"]["parameters"] for t in TOOLS if t["function"]["name"] == name)


def stream_chat(client, args):
    """A streamed chat's content, tool calls (accumulated by index) and finish reason."""
    content, calls, finish = "", {}, None
    for chunk in client.chat.completions.create(stream=True, **args):
        for choice in chunk.choices:
            delta = choice.delta
            content += delta.content or ""
            for call in delta.tool_calls or []:
                entry = calls.setdefault(call.index, {"id": None, "name": "", "arguments": ""})
                entry["id"] = entry["id"] or call.id
                if call.function and call.function.name:
                    entry["name"] += call.function.name
                if call.function and call.function.arguments:
                    entry["arguments"] += call.function.arguments
            finish = choice.finish_reason or finish
    return content, [calls[i] for i in sorted(calls)], finish


def chat_calls(client, args, stream):
    """(content, calls as {id, name, arguments}, finish_reason) of one chat request, streamed
    (the deltas added up) or not."""
    if stream:
        return stream_chat(client, args)
    choice = client.chat.completions.create(**args).choices[0]
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
             for c in choice.message.tool_calls or []]
    return choice.message.content, calls, choice.finish_reason


class StructuredOutputs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server().__enter__()
        cls.client = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def chat(self, rng, compact=True, **kwargs):
        if compact:
            kwargs.setdefault("extra_body", {}).setdefault("structured_outputs", {})[
                "disable_any_whitespace"] = True
        return dict(model=fx.MODEL,
                    messages=[{"role": "user", "content": f"data please {rng.random()}"}],
                    max_completion_tokens=400, temperature=rng.choice([0, 0.7, 1.0]),
                    seed=rng.randrange(1000), **kwargs)

    def assert_valid(self, text, schema):
        jsonschema.validate(json.loads(text), schema)

    def test_json_schema_chat_whole_and_streamed(self):
        rng = fx.seeded_rng(self)
        for schema in SCHEMAS:
            args = self.chat(rng, response_format={
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": True}})
            whole = self.client.chat.completions.create(**args).choices[0]
            self.assertEqual(whole.finish_reason, "stop", whole.message.content)
            self.assert_valid(whole.message.content, schema)
            content, calls, finish = stream_chat(self.client, args)
            self.assertEqual((content, calls, finish), (whole.message.content, [], "stop"))

    def test_json_schema_completions_and_structured_outputs(self):
        rng = fx.seeded_rng(self)
        for schema in SCHEMAS:
            compact = {"disable_any_whitespace": True}
            for extra in ({"response_format": {"type": "json_schema",
                                               "json_schema": {"name": "s", "schema": schema}},
                           "structured_outputs": compact},
                          {"structured_outputs": {"json": schema, **compact}},
                          {"structured_outputs": {"json": json.dumps(schema), **compact}}):
                choice = self.client.completions.create(
                    model=fx.MODEL, prompt=f"json {rng.random()}", max_tokens=400,
                    temperature=rng.choice([0, 1.0]), seed=rng.randrange(1000),
                    extra_body=extra).choices[0]
                self.assertEqual(choice.finish_reason, "stop", choice.text)
                self.assert_valid(choice.text, schema)
                self.assertNotIn("\n", choice.text)
            # response_format wins over structured_outputs, as in vLLM.
            chat = self.chat(rng, response_format={"type": "json_schema", "json_schema": {
                "name": "s", "schema": schema}}, extra_body={"structured_outputs": {
                    "json": {"type": "string", "maxLength": 3}, **compact}})
            self.assert_valid(self.client.chat.completions.create(**chat).choices[0]
                              .message.content, schema)

    def test_default_whitespace(self):
        # vLLM's default: whitespace runs between tokens. Outputs that stop validate; some stop.
        rng = fx.seeded_rng(self)
        stopped = 0
        for _ in range(6):
            args = self.chat(rng, compact=False, response_format={
                "type": "json_schema", "json_schema": {"name": "s", "schema": SCHEMAS[0]}})
            choice = self.client.chat.completions.create(**args).choices[0]
            self.assertIn(choice.finish_reason, ("stop", "length"))
            if choice.finish_reason == "stop":
                self.assert_valid(choice.message.content, SCHEMAS[0])
                stopped += 1
        self.assertGreater(stopped, 0)

    def test_json_object(self):
        # Any object: keys are free strings, so the random model may run out of tokens; every
        # output that stopped is an object, and a few prompts are enough for some to stop.
        stopped = 0
        for k in range(8):
            for extra in ({"response_format": {"type": "json_object"}},
                          {"extra_body": {"structured_outputs": {"json_object": True}}}):
                choice = self.client.chat.completions.create(
                    model=fx.MODEL, messages=[{"role": "user", "content": f"hi {k}"}],
                    max_completion_tokens=450, temperature=0, **extra).choices[0]
                self.assertTrue(choice.message.content.startswith("{"))
                if choice.finish_reason == "stop":
                    self.assertIsInstance(json.loads(choice.message.content), dict)
                    stopped += 1
                else:
                    self.assertEqual(choice.finish_reason, "length")
        self.assertGreater(stopped, 0)

    def test_tool_choice_required(self):
        # The array has no maxItems (vLLM's schema): the random model may add calls until
        # max_tokens, and then, as in vLLM, the cut array gives no calls (a stream keeps the
        # pieces it sent, as vLLM's), unless its last allowed token closed the array: vLLM's
        # parser then returns the complete calls with finish "length", and one more token must
        # end the same request (same seed) with those calls. Some runs finish.
        rng = fx.seeded_rng(self)
        for stream in (False, True):
            finished = 0
            for _ in range(4):
                args = self.chat(rng, tools=TOOLS, tool_choice="required")
                args["temperature"] = 1.0
                content, calls, finish = chat_calls(self.client, args, stream)
                self.assertEqual(content, "")
                if finish == "length":
                    if not stream and calls:
                        longer = dict(args, max_completion_tokens=args["max_completion_tokens"] + 1)
                        _, again, finish_again = chat_calls(self.client, longer, False)
                        self.assertEqual(finish_again, "tool_calls")
                        self.assertEqual([(c["name"], c["arguments"]) for c in again],
                                         [(c["name"], c["arguments"]) for c in calls])
                    for call in calls:
                        self.assertIn(call["name"], [t["function"]["name"] for t in TOOLS])
                    continue
                finished += 1
                self.assertEqual(finish, "tool_calls")  # vLLM's for "required"
                self.assertGreaterEqual(len(calls), 1)
                for call in calls:
                    self.assertTrue(call["id"].startswith("chatcmpl-tool-"))
                    jsonschema.validate(json.loads(call["arguments"]),
                                        tool_parameters(call["name"]))
            self.assertGreater(finished, 0)

    def test_tool_choice_named(self):
        rng = fx.seeded_rng(self)
        for stream in (False, True):
            for name in ("get_weather", "add"):
                args = self.chat(rng, tools=TOOLS,
                                 tool_choice={"type": "function", "function": {"name": name}})
                content, calls, finish = chat_calls(self.client, args, stream)
                self.assertEqual(finish, "stop")  # vLLM's for a named tool
                self.assertEqual(content, "")
                self.assertEqual([c["name"] for c in calls], [name])
                jsonschema.validate(json.loads(calls[0]["arguments"]), tool_parameters(name))

    def test_length_cuts_json_short(self):
        for stream in (False, True):
            args = dict(model=fx.MODEL, messages=[{"role": "user", "content": "x"}],
                        max_completion_tokens=4, temperature=0,
                        response_format={"type": "json_schema",
                                         "json_schema": {"name": "s", "schema": SCHEMAS[0]}})
            if stream:
                content, _, finish = stream_chat(self.client, args)
            else:
                choice = self.client.chat.completions.create(**args).choices[0]
                content, finish = choice.message.content, choice.finish_reason
            self.assertEqual(finish, "length")
            self.assertTrue(content.startswith("{"))
            with self.assertRaises(json.JSONDecodeError):
                json.loads(content)
        args = dict(model=fx.MODEL, messages=[{"role": "user", "content": "x"}],
                    max_completion_tokens=3, temperature=0, tools=TOOLS, tool_choice="required")
        choice = self.client.chat.completions.create(**args).choices[0]
        self.assertEqual(choice.finish_reason, "length")
        self.assertFalse(choice.message.tool_calls)

    def test_choice_outputs_one_of_the_strings(self):
        # vLLM's structured_outputs {"choice": [...]}: the text is exactly one of them (raw, no
        # quotes), whole and streamed, on both routes; choices may begin one another.
        rng = fx.seeded_rng(self)
        seen = set()
        for k in range(10):
            choices = rng.sample(["yes", "no", "maybe", "yes!", "não sei", "42", "\"quoted\""],
                                 rng.randint(2, 5))
            extra = {"structured_outputs": {"choice": choices}}
            chat = self.client.chat.completions.create(
                model=fx.MODEL, messages=[{"role": "user", "content": f"pick {k}"}],
                max_completion_tokens=40, temperature=rng.choice([0, 1.0]),
                seed=rng.randrange(1000), extra_body=extra)
            text = chat.choices[0].message.content
            self.assertIn(text, choices)
            self.assertEqual(chat.choices[0].finish_reason, "stop")
            seen.add(text)
            done = self.client.completions.create(
                model=fx.MODEL, prompt=f"pick {k}", max_tokens=40, temperature=1.0,
                seed=rng.randrange(1000), extra_body=extra).choices[0]
            self.assertIn(done.text, choices)
            self.assertEqual(done.finish_reason, "stop")
            streamed = "".join(c.choices[0].text for c in self.client.completions.create(
                model=fx.MODEL, prompt=f"pick {k}", max_tokens=40, temperature=0,
                stream=True, extra_body=extra) if c.choices)
            self.assertIn(streamed, choices)
        self.assertGreater(len(seen), 1)
        for bad, needle in (([], "at least one"), (["a", ""], "choice[1] is empty"),
                            ("yes", "valid list of strings"), ([1, 2], "valid list of strings")):
            with self.assertRaises(openai.BadRequestError) as caught:
                self.client.completions.create(model=fx.MODEL, prompt="x",
                                               extra_body={"structured_outputs": {"choice": bad}})
            self.assertIn(needle, str(caught.exception))

    def test_regex_outputs_match_the_pattern(self):
        # vLLM's structured_outputs {"regex": ...}: the whole text matches (Python's re, a second
        # opinion: its \d and \w take more than the ASCII ones xgrammar's and ctxpar's take),
        # whole and streamed, on both routes.
        rng = fx.seeded_rng(self)
        patterns = [r"\d{3}-[a-z]{2,4}", r"(yes|no|maybe)!?", r"[A-Z][a-z]{1,5}( [A-Z][a-z]{1,5}){0,2}",
                    r"0x[0-9a-f]{1,6}", r"\w{2,8}@\w{2,5}\.(com|org)", r"é{1,3}[^a-z\n]{2}"]
        for pattern in patterns:
            extra = {"structured_outputs": {"regex": pattern}}
            chat = self.client.chat.completions.create(
                model=fx.MODEL, messages=[{"role": "user", "content": f"go {rng.random()}"}],
                max_completion_tokens=60, temperature=rng.choice([0, 1.0]),
                seed=rng.randrange(1000), extra_body=extra).choices[0]
            self.assertEqual(chat.finish_reason, "stop", chat.message.content)
            self.assertRegex(chat.message.content, f"^(?:{pattern})$")
            done = self.client.completions.create(
                model=fx.MODEL, prompt=f"go {rng.random()}", max_tokens=60, temperature=1.0,
                seed=rng.randrange(1000), extra_body=extra).choices[0]
            self.assertEqual(done.finish_reason, "stop", done.text)
            self.assertRegex(done.text, f"^(?:{pattern})$")
            args = dict(model=fx.MODEL, prompt=f"go {rng.random()}", max_tokens=60,
                        temperature=1.0, seed=rng.randrange(1000), extra_body=extra)
            whole = self.client.completions.create(**args).choices[0].text
            streamed = "".join(c.choices[0].text for c in self.client.completions.create(
                stream=True, **args) if c.choices)
            self.assertEqual(streamed, whole)
        for bad, needle in (("(a", "missing ), unterminated subpattern at position 0"),
                            ("a(?=b)", "lookaround"), ("[^\\s\\S]", "matches no text"),
                            (5, "valid string")):
            with self.assertRaises(openai.BadRequestError) as caught:
                self.client.completions.create(model=fx.MODEL, prompt="x", extra_body={
                    "structured_outputs": {"regex": bad}})
            self.assertIn(needle, str(caught.exception))

    def test_schema_patterns_and_formats(self):
        # A pydantic-style schema with formats (checked by jsonschema's format checker) and a
        # pattern (jsonschema's re.search; ctxpar's match is whole, which implies it).
        schema = {"type": "object", "properties": {
            "id": {"type": "string", "format": "uuid"},
            "day": {"type": "string", "format": "date"},
            "ip": {"type": "string", "format": "ipv4"},
            "code": {"type": "string", "pattern": "^[A-Z]{2}-\\d{2,3}$"},
            "note": {"type": "string", "format": "no-such-format", "maxLength": 3}},
            "required": ["id", "day", "ip", "code", "note"]}
        rng = fx.seeded_rng(self)
        # xgrammar's date and ipv4 are regexes: "2024-02-31" and "01.2.3.4" pass them (and vLLM),
        # not Python's date.fromisoformat and ipaddress; those two are checked by their shape.
        checker = jsonschema.FormatChecker(formats=["uuid"])
        for _ in range(3):
            args = self.chat(rng, response_format={"type": "json_schema", "json_schema": {
                "name": "record", "schema": schema}})
            choice = self.client.chat.completions.create(**args).choices[0]
            self.assertEqual(choice.finish_reason, "stop", choice.message.content)
            record = json.loads(choice.message.content)
            jsonschema.validate(record, schema, format_checker=checker)
            self.assertRegex(record["code"], r"^[A-Z]{2}-[0-9]{2,3}$")
            self.assertRegex(record["day"], r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$")
            octets = record["ip"].split(".")
            self.assertEqual(len(octets), 4, record["ip"])
            self.assertTrue(all(o.isdigit() and int(o) <= 255 for o in octets), record["ip"])

    def test_unsupported_schema_is_a_400_naming_the_keyword(self):
        cases = [
            ("patternProperties", {"response_format": {"type": "json_schema", "json_schema": {
                "name": "s", "schema": {"type": "object", "patternProperties": {
                    "^a": {"type": "string"}}}}}}),
            ("not", {"extra_body": {"structured_outputs": {"json": {
                "not": {"type": "string"}}}}}),
            ("multipleOf", {"tools": [{"type": "function", "function": {
                "name": "f", "parameters": {"type": "object", "properties": {
                    "n": {"type": "integer", "multipleOf": 3}}}}}],
                "tool_choice": "required"}),
            ("uniqueItems", {"tools": [{"type": "function", "function": {
                "name": "f", "parameters": {"type": "object", "properties": {"l": {
                    "type": "array", "uniqueItems": True}}}}}],
                "tool_choice": {"type": "function", "function": {"name": "f"}}}),
        ]
        for keyword, extra in cases:
            with self.assertRaises(openai.BadRequestError) as caught:
                self.client.chat.completions.create(
                    model=fx.MODEL, messages=[{"role": "user", "content": "x"}], **extra)
            self.assertIn(f"`{keyword}`", str(caught.exception))
        for extra, needle in (({"guided_json": {"type": "object"}}, "guided_json"),
                              ({"structured_outputs": {"grammar": "root ::= \"a\""}},
                               "grammar"),
                              ({"response_format": {"type": "json_schema"}}, "'json_schema'")):
            with self.assertRaises(openai.BadRequestError) as caught:
                self.client.completions.create(model=fx.MODEL, prompt="x", extra_body=extra)
            self.assertIn(needle, str(caught.exception))


class StructuredOutputsAfterReasoning(unittest.TestCase):
    """With --reasoning-parser the grammar applies after </think>, as vLLM's reasoning_ended:
    a prompt that closed the thinking is constrained from the first token; an open one lets
    the model reason (unconstrained) first."""

    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server(extra_args=["--reasoning-parser", "deepseek_r1"]).__enter__()
        cls.client = fx.openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def ask(self, prefill, **kwargs):
        return self.client.chat.completions.create(
            model=fx.MODEL, messages=[{"role": "user", "content": "data"},
                                      {"role": "assistant", "content": prefill}],
            temperature=1.0, seed=7,
            extra_body={"continue_final_message": True, "add_generation_prompt": False,
                        "structured_outputs": {"disable_any_whitespace": True}},
            response_format={"type": "json_schema",
                             "json_schema": {"name": "s", "schema": SCHEMAS[0]}},
            **kwargs).choices[0]

    def test_closed_thinking_is_constrained_from_the_start(self):
        choice = self.ask("<think>done</think>", max_completion_tokens=200)
        self.assertEqual(choice.finish_reason, "stop")
        self.assertIsNone(getattr(choice.message, "reasoning", None))
        jsonschema.validate(json.loads(choice.message.content), SCHEMAS[0])

    def test_open_thinking_is_not_constrained(self):
        # deepseek_r1: everything before </think> is reasoning; the random model never writes
        # </think>, so the whole output is reasoning (and no grammar held it to JSON).
        choice = self.ask("<think>", max_completion_tokens=30)
        self.assertEqual(choice.finish_reason, "length")
        self.assertIsNone(choice.message.content)
        # Held to the schema it would have to start '{"' (compact form); free, it need not.
        self.assertFalse(choice.message.reasoning.startswith('{"'), choice.message.reasoning)


class StructuredOutputsUnderPreemption(unittest.TestCase):
    """A KV cache too small for the requests in flight: the scheduler preempts some by
    recompute, and their grammar state must follow them (it is rebuilt from their output
    tokens), so every output still validates."""

    def test_preempted_requests_stay_valid(self):
        args = list(fx.ENGINE_ARGS)
        args[args.index("--kv-cache-memory") + 1] = "96KiB"  # 384 tokens per DCP group
        args[args.index("--max-model-len") + 1] = "256"
        rng = fx.seeded_rng(self)
        with fx.Server(engine_args=args) as server:
            client = fx.openai_client(server)

            def one(k):
                schema = SCHEMAS[k % len(SCHEMAS)]
                choice = client.chat.completions.create(
                    model=fx.MODEL, messages=[{"role": "user", "content": f"hi {k}"}],
                    max_completion_tokens=200, temperature=1.0, seed=rng.randrange(1000) + k,
                    response_format={"type": "json_schema",
                                     "json_schema": {"name": "s", "schema": schema}},
                    extra_body={"structured_outputs": {"disable_any_whitespace": True}},
                ).choices[0]
                return schema, choice

            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                results = list(pool.map(one, range(16)))
            self.assertGreater(server.metric("vllm:num_preemptions_total"), 0)
            for schema, choice in results:
                self.assertEqual(choice.finish_reason, "stop", choice.message.content)
                jsonschema.validate(json.loads(choice.message.content), schema)


if __name__ == "__main__":
    unittest.main()
